import ArgumentParser
import ENProtocol
import Foundation

/// `gaenctl risk`: the apps' risk engines over exposure windows, offline. Parameters are JSON files
/// read at run time, so a trial can change them without a new build (docs/risk.md).
struct Risk: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an app's risk engine over exposure windows (CWA, NHS, framework v1, original CWA).",
        discussion: "Windows files are JSON arrays of windows in the Android API shape. See docs/risk.md.",
        subcommands: [CWA.self, NHS.self, GAENv1Command.self, CWAv1.self]
    )

    /// Options every engine takes.
    struct WindowsOptions: ParsableArguments {
        @Option(help: ArgumentHelp("Exposure windows: a JSON array in the Android API shape.", valueName: "file"))
        var windows: String

        func load() throws -> [ExposureWindow] {
            try RiskJSON.decodeWindows(from: RiskCLI.read(windows, what: "--windows"))
        }
    }

    struct TodayOption: ParsableArguments {
        @Option(help: ArgumentHelp("The day the calculation runs on, YYYY-MM-DD (default: today, UTC).", valueName: "date"))
        var today: String?

        func day() throws -> UTCDay {
            guard let today else { return UTCDay(unixSeconds: Date().timeIntervalSince1970) }
            guard let d = UTCDay(isoDate: today) else {
                throw ValidationError("--today: '\(today)' is not a date such as 2020-09-22")
            }
            return d
        }

        func optionalDay() throws -> UTCDay? { today == nil ? nil : try day() }
    }

    struct CWA: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cwa",
            abstract: "Corona-Warn-App exposure-window risk calculation (CWA 1.9+ parameters).",
            discussion: """
                Prints {"totalRiskLevel" (1 low, 2 high), "mostRecentDateWithLowRisk", "mostRecentDateWithHighRisk", \
                "numberOfDaysWithLowRisk", "numberOfDaysWithHighRisk", "minimumDistinctEncountersWithLowRisk", \
                "minimumDistinctEncountersWithHighRisk"}; dates are YYYY-MM-DD or null. With --today, windows after \
                that day or more than 14 days before it are ignored, as the framework would not return them.
                """)

        @Option(help: ArgumentHelp("CWA risk calculation parameters (the app's field names), JSON.", valueName: "file"))
        var parameters: String
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption

        func run() throws {
            let p = try CWAParameters.decode(from: RiskCLI.read(parameters, what: "--parameters"), file: parameters)
            let result = try CWARiskCalculation.aggregate(windows.load(), parameters: p, today: today.optionalDay())
            try RiskCLI.print(result)
        }
    }

    struct NHS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "nhs",
            abstract: "NHS COVID-19 app scoring: v2 (unscented Kalman smoother) or its v1 fallback.",
            discussion: """
                Reads the app's exposure configuration JSON. Prints {"method", "windows": [{"date", "score", \
                "infectiousnessFactor", "riskScore", "isConsideredRisky"}], "maximumRiskScore", "riskThreshold", \
                "crossesThreshold", "mostRelevantExposureDate", "mostRelevantExposureRiskScore"}. The v2 method is used \
                when the configuration has riskScore and v2RiskCalculation, the v1 fallback otherwise; --method forces one.
                """)

        @Option(help: ArgumentHelp("The app's exposure configuration JSON.", valueName: "file"))
        var configuration: String
        @OptionGroup var windows: WindowsOptions
        @Option(help: "v2 or v1 (default: v2 when the configuration allows it).")
        var method: String?

        func run() throws {
            var m: NHSRiskCalculation.Method? = nil
            if let method {
                guard let parsed = NHSRiskCalculation.Method(rawValue: method) else {
                    throw ValidationError("--method: expected v2 or v1, got '\(method)'")
                }
                m = parsed
            }
            let c = try RiskJSON.decodeParameters(NHSExposureConfiguration.self,
                                                  from: RiskCLI.read(configuration, what: "--configuration"), file: configuration)
            try RiskCLI.print(NHSRiskCalculation.calculate(windows.load(), configuration: c, method: m))
        }
    }

    struct GAENv1Command: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gaen-v1",
            abstract: "The framework's v1 risk score (product of level values) and attenuation-duration buckets.",
            discussion: """
                Each window is taken as one v1 exposure (one key, one day). Prints {"summary": {"attenuationDurations" \
                (seconds, 3 buckets, each capped at 1800), "matchedKeyCount", "daysSinceLastExposure", "maximumRiskScore" \
                (clamped to 255), "maximumRiskScoreFullRange"}, "exposures": [{"date", "attenuationDb", "durationMinutes", \
                "daysSinceExposure", "transmissionRiskLevel", "riskScore", "counted"}]}.
                """)

        @Option(help: ArgumentHelp("Framework v1 configuration (minimumRiskScore, *LevelValues, attenuationDurationThresholds), JSON.", valueName: "file"))
        var configuration: String
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption

        struct Output: Encodable {
            var summary: ExposureSummaryV1
            var exposures: [GAENv1Exposure]
        }

        func run() throws {
            let c = try RiskJSON.decodeParameters(GAENv1Configuration.self,
                                                  from: RiskCLI.read(configuration, what: "--configuration"), file: configuration)
            let (summary, exposures) = try ExposureSummaryV1.compute(windows.load(), configuration: c, today: today.day())
            try RiskCLI.print(Output(summary: summary, exposures: exposures))
        }
    }

    struct CWAv1: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cwa-v1",
            abstract: "The Corona-Warn-App's original method (before CWA 1.5), framework v1 names.",
            discussion: """
                Each window is one exposure (one key, one day) and carries transmissionRiskLevel (1-8). Prints \
                {"increasedRisk", "weightedMinutes", "riskEncounters", "daysSinceLastRiskEncounter", "maximumRiskScore"}.
                """)

        @Option(help: ArgumentHelp("Configuration: framework v1 names plus attenuationDurationWeights, defaultBucketOffset, riskScoreNormalizationDivisor, increasedRiskMinutes.", valueName: "file"))
        var configuration: String
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption

        func run() throws {
            let c = try RiskJSON.decodeParameters(CWAv1Configuration.self,
                                                  from: RiskCLI.read(configuration, what: "--configuration"), file: configuration)
            try RiskCLI.print(CWAv1RiskCalculation.calculate(windows.load(), configuration: c, today: today.day()))
        }
    }
}

enum RiskCLI {
    static func read(_ path: String, what: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("\(what): cannot read '\(path)': \((error as NSError).localizedDescription)")
        }
    }

    static func print<T: Encodable>(_ value: T, pretty: Bool = true) throws {
        FileHandle.standardOutput.write(try RiskJSON.encode(value, pretty: pretty))
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
