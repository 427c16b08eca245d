import ArgumentParser
import ENProtocol
import RiskEngines
import Foundation
import PlatformSupport
import TrialKit

/// `gaenctl risk`: the apps' risk engines over exposure windows, offline. Parameters are JSON files
/// read at run time, so a trial can change them without a new build (docs/risk.md).
struct Risk: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an app's risk engine over exposure windows (CWA, NHS, framework v1, original CWA, SwissCovid, Immuni).",
        discussion: "Windows files are JSON arrays of windows in the Android API shape. See docs/risk.md.",
        subcommands: [CWA.self, NHS.self, GAENv1Command.self, CWAv1.self, SwissCovid.self, Immuni.self, RunEngine.self, Engines.self, Configurations.self]
    )

    /// Options every engine takes.
    struct WindowsOptions: ParsableArguments {
        @Option(help: ArgumentHelp("Exposure windows: a JSON array in the Android API shape, or the apps' published test shapes (docs/risk.md).", valueName: "file"))
        var windows: String

        @Option(help: ArgumentHelp("With a CWA test-case file as --windows: the case to run (0-based).", valueName: "N"))
        var testCase: Int?

        @Flag(help: "Print the engine's verdict on every window too: {\"result\": ..., \"windows\": [...]}.")
        var perWindow = false

        /// The windows file, converted from a published shape when it is one (PublishedWindows);
        /// windows dated by ageInDays count back from `today` (default: the current UTC day).
        func data(today: UTCDay?) throws -> Data {
            let raw = try RiskCLI.read(windows, what: "--windows")
            let day = today ?? UTCDay(unixSeconds: Date().timeIntervalSince1970)
            do {
                if PublishedWindows.isHeaderlessCSV(raw) { return try PublishedWindows.nhsRecording(raw, file: windows, day: day) }
                return try PublishedWindows.windowsFile(raw, file: windows, today: day, testCase: testCase)
            } catch let e as PublishedWindows.Invalid {
                throw ValidationError("--windows: \(e)")
            }
        }

        func load(today: UTCDay? = nil) throws -> [ExposureWindow] {
            let d = try data(today: today)
            return try RiskCLI.reporting { try RiskJSON.decodeWindows(from: d) }
        }

        func entries(today: UTCDay? = nil) throws -> [WindowsFileEntry] {
            let d = try data(today: today)
            return try RiskCLI.reporting { try WindowsFile.parse(d) }
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
            abstract: "Corona-Warn-App exposure-window risk calculation (CWA 1.9+ parameters, every generation).",
            discussion: """
                Prints {"totalRiskLevel" (1 low, 2 high), "mostRecentDateWithLowRisk", "mostRecentDateWithHighRisk", \
                "numberOfDaysWithLowRisk", "numberOfDaysWithHighRisk", "minimumDistinctEncountersWithLowRisk", \
                "minimumDistinctEncountersWithHighRisk"}; dates are YYYY-MM-DD or null. With --today, windows more \
                than maxEncounterAgeInDays before that day are ignored. --app-version picks the calculation of that \
                app version: 1.9-1.14 (transmissionRiskLevelMultiplier, unmapped normalized time is an error), \
                1.15-2.18 (transmissionRiskValueMapping), 2.19 and later (daily normalized time rounded to one \
                decimal). Default: 1.9 for a parameter file with only transmissionRiskLevelMultiplier, else the \
                current app. --published-configuration DATE instead of --parameters: the parameters the CWA server \
                published on that day (`gaenctl risk configurations` lists them; with --app-version, the file of \
                those apps: 1.9-1.14 read app_config, 1.15 and later app_config_android/ios; default: the newest \
                apps' file and their calculation); the entry used is named on stderr. With --per-window: {"result", "generation", "windows": [{"index", "date", "dropped", \
                "transmissionRiskLevel", "transmissionRiskValue", "normalizedTime", "riskLevel"}], "days": [{"date", \
                "normalizedTime", "riskLevel"}]}.
                """)

        @Option(help: ArgumentHelp("CWA risk calculation parameters (the app's field names), JSON.", valueName: "file"))
        var parameters: String?
        @Option(help: ArgumentHelp("Use the parameters the CWA server published in force on this day instead of --parameters.", valueName: "YYYY-MM-DD"))
        var publishedConfiguration: String?
        @Option(help: ArgumentHelp("The app version whose calculation to use, e.g. 1.9, 1.15, 2.19 (default: see above).", valueName: "version"))
        var appVersion: String?
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption

        struct Detailed: Encodable {
            var result: CWAResult
            var generation: String
            var windows: [CWAWindowVerdict]
            var days: [CWADayVerdict]
        }

        func validate() throws {
            guard (parameters == nil) != (publishedConfiguration == nil) else {
                throw ValidationError("give either --parameters FILE or --published-configuration YYYY-MM-DD")
            }
        }

        func run() throws {
            var generation: CWAGeneration? = nil
            if let appVersion {
                guard let g = CWAGeneration(appVersion: appVersion) else {
                    throw ValidationError("--app-version: expected a CWA version such as 1.9, 1.15 or 2.19 (1.9 or later), got '\(appVersion)'")
                }
                generation = g
            }
            try RiskCLI.reporting {
                let p: CWAParameters
                var g: CWAGeneration
                if let parameters {
                    // A CWA test-case file gives its defaultRiskCalculationConfiguration.
                    p = try CWAParameters.decode(from: PublishedWindows.cwaParameters(RiskCLI.read(parameters, what: "--parameters")), file: parameters)
                    g = generation ?? .implied(by: p)
                } else {
                    let entry = try RiskCLI.published(.cwa, on: publishedConfiguration!, generation: generation)
                    p = try entry.cwaParameters()
                    g = generation ?? entry.generation ?? .implied(by: p)
                }
                let e = try CWARiskCalculation.evaluate(windows.load(today: today.optionalDay()), parameters: p, today: today.optionalDay(), generation: g)
                if windows.perWindow {
                    try RiskCLI.print(Detailed(result: e.result, generation: g.rawValue, windows: e.windows, days: e.days))
                } else {
                    try RiskCLI.print(e.result)
                }
            }
        }
    }

    struct SwissCovid: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "swisscovid",
            abstract: "SwissCovid's rule: weighted minutes per day below two attenuation thresholds.",
            discussion: """
                Configuration (JSON, optional): attenuationThresholdLow, attenuationThresholdMedium, attenuationFactorLow, \
                attenuationFactorMedium, minDurationForExposure (minutes); default SwissCovid's published values \
                55, 63, 1.0, 0.5, 15. Prints {"exposed", "exposureDays", "days": [{"date", "minutesLow", "minutesMedium", \
                "weightedMinutes", "exposed"}]}; the days are the per-window verdicts' aggregate (--per-window adds \
                each window scored alone).
                """)

        @Option(help: ArgumentHelp("SwissCovid configuration JSON (default: the published one).", valueName: "file"))
        var configuration: String?
        @OptionGroup var windows: WindowsOptions

        struct Detailed: Encodable { var result: SwissCovidResult; var windows: [SwissCovidResult] }

        func run() throws {
            try RiskCLI.reporting {
                let c = try configuration.map {
                    try RiskJSON.decodeParameters(SwissCovidConfiguration.self, from: RiskCLI.read($0, what: "--configuration"), file: $0)
                } ?? .published
                let w = try windows.load()
                let result = try SwissCovidRisk.calculate(w, configuration: c)
                if windows.perWindow {
                    try RiskCLI.print(Detailed(result: result, windows: try w.map { try SwissCovidRisk.calculate([$0], configuration: c) }))
                } else {
                    try RiskCLI.print(result)
                }
            }
        }
    }

    struct Immuni: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "immuni",
            abstract: "Immuni's rule: the framework's v1 risk score under Immuni's exposure configuration.",
            discussion: """
                Configuration (JSON, optional): Immuni's exposure_configuration (attenuation_thresholds, \
                attenuation_bucket_scores, days_since_last_exposure_bucket_scores, duration_bucket_scores, \
                transmission_risk_bucket_scores, minimum_risk_score), alone or inside the app configuration; default \
                the app's built-in values. Prints {"notified", "maximumRiskScore", "exposures": [per window: {"date", \
                "attenuationDb", "durationMinutes", "daysSinceExposure", "transmissionRiskLevel", "riskScore", "counted"}]}.
                """)

        @Option(help: ArgumentHelp("Immuni exposure configuration JSON (default: the published one).", valueName: "file"))
        var configuration: String?
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption

        func run() throws {
            try RiskCLI.reporting {
                let c = try configuration.map { try ImmuniConfiguration.decode(from: RiskCLI.read($0, what: "--configuration"), file: $0) } ?? .published
                try RiskCLI.print(ImmuniRisk.calculate(windows.load(today: today.day()), configuration: c, today: today.day()))
            }
        }
    }

    struct NHS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "nhs",
            abstract: "NHS COVID-19 app scoring: v2 (unscented Kalman smoother) or its v1 fallback.",
            discussion: """
                Reads the app's exposure configuration JSON; attenuations and durations may be decimal. Prints \
                {"method", "windows": [{"index", "date", "score", \
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
            try RiskCLI.reporting {
                let c = try RiskJSON.decodeParameters(NHSExposureConfiguration.self,
                                                      from: RiskCLI.read(configuration, what: "--configuration"), file: configuration)
                // Decimal attenuations and durations are read as written (the NHS scorer's inputs are decimal).
                try RiskCLI.print(NHSRiskCalculation.calculate(windows.entries(), configuration: c, method: m))
            }
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
            try RiskCLI.reporting {
                let (summary, exposures) = try ExposureSummaryV1.compute(windows.load(today: today.day()), configuration: c, today: today.day())
                try RiskCLI.print(Output(summary: summary, exposures: exposures))
            }
        }
    }

    struct CWAv1: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cwa-v1",
            abstract: "The Corona-Warn-App's original method (before CWA 1.5), framework v1 names.",
            discussion: """
                Each window is one exposure (one key, one day) and carries transmissionRiskLevel (1-8). Prints \
                {"increasedRisk", "weightedMinutes", "riskEncounters", "daysSinceLastRiskEncounter", "maximumRiskScore"}. \
                --published-configuration DATE instead of --configuration: the values the CWA server published in \
                force on that day (`gaenctl risk configurations` lists them); the entry used is named on stderr.
                """)

        @Option(help: ArgumentHelp("Configuration: framework v1 names plus attenuationDurationWeights, defaultBucketOffset, riskScoreNormalizationDivisor, increasedRiskMinutes.", valueName: "file"))
        var configuration: String?
        @Option(help: ArgumentHelp("Use the configuration the CWA server published in force on this day instead of --configuration.", valueName: "YYYY-MM-DD"))
        var publishedConfiguration: String?
        @OptionGroup var windows: WindowsOptions
        @OptionGroup var today: TodayOption
        @Flag(help: "Read a configuration with fields this tool does not know, leaving them out with a warning on stderr (default: refused, naming the field and its line).")
        var allowUnknownFields = false

        func validate() throws {
            guard (configuration == nil) != (publishedConfiguration == nil) else {
                throw ValidationError("give either --configuration FILE or --published-configuration YYYY-MM-DD")
            }
        }

        func run() throws {
            try RiskCLI.reporting {
                let c: CWAv1Configuration
                if let configuration {
                    // JSON or the app configuration in protobuf text format.
                    var policy = UnknownFieldPolicy(allow: allowUnknownFields)
                    c = try ConfigurationText.cwaV1(RiskCLI.read(configuration, what: "--configuration"), file: configuration, policy: &policy)
                    for w in policy.warnings + ConfigurationReach.warnings(cwaV1: c) {
                        FileHandle.standardError.write(Data("gaenctl risk cwa-v1: warning: \(w)\n".utf8))
                    }
                } else {
                    c = try RiskCLI.published(.cwaV1, on: publishedConfiguration!, generation: nil).cwaV1Configuration()
                }
                let w = try windows.load(today: today.day())
                let result = try CWAv1RiskCalculation.calculate(w, configuration: c, today: today.day())
                guard windows.perWindow else { try RiskCLI.print(result); return }
                // Each window scored alone: whether it is a risk encounter by itself.
                struct Detailed: Encodable { var result: CWAv1Result; var windows: [CWAv1Result] }
                try RiskCLI.print(Detailed(result: result, windows: try w.map { try CWAv1RiskCalculation.calculate([$0], configuration: c, today: today.day()) }))
            }
        }
    }

    /// Any engine of the registry by name, with its parameters: an engine added to
    /// RiskEngineRegistry is usable here with no change to gaenctl.
    struct RunEngine: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run any registered engine by name over exposure windows (gaenctl risk engines lists them).",
            discussion: """
                Prints {"engine", "notified", "numbers": {...}, "unjudged", "result"}: the verdict, the numbers it was \
                decided on, and the engine's own result as `gaenctl risk ENGINE` prints it. Without --parameters the \
                engine's published configuration is used (an engine without one needs them).
                """)

        @Argument(help: ArgumentHelp("The engine's name (gaenctl risk engines).", valueName: "engine"))
        var engine: String
        @Option(help: ArgumentHelp("The engine's parameters (JSON, or a published format the engine reads).", valueName: "file"))
        var parameters: String?
        @OptionGroup var windowsOptions: WindowsOptions
        @OptionGroup var todayOption: TodayOption

        func validate() throws {
            // The verdict per window is each engine's own output shape: its dedicated subcommand has it.
            guard !windowsOptions.perWindow else { throw ValidationError("--per-window: use the engine's own subcommand (gaenctl risk \(engine) --per-window)") }
            guard RiskEngineRegistry.named(engine) != nil else {
                throw ValidationError("unknown engine '\(TextSafety.escaped(engine))' (one of \(RiskEngineRegistry.names.joined(separator: ", ")))")
            }
        }

        func run() throws {
            let e = RiskEngineRegistry.named(engine)!
            let data: Data, source: String
            if let parameters {
                (data, source) = (try RiskCLI.read(parameters, what: "--parameters"), parameters)
            } else if let published = e.publishedParameters {
                (data, source) = (published, "published \(e.name) configuration")
            } else {
                throw ValidationError("\(e.name) has no published configuration: give --parameters FILE")
            }
            let today = try todayOption.day()
            let entries = try windowsOptions.entries(today: today)
            let built = try RiskCLI.reporting { try e.rule(parameters: data, source: source, dated: nil, options: RiskRuleOptions()) }
            // What the configuration means for every verdict (no one could be notified) goes to stderr, beside the JSON.
            for w in built.warnings { FileHandle.standardError.write(Data("gaenctl: warning: \(TextSafety.escaped(w))\n".utf8)) }
            let a = try RiskCLI.reporting { try built.rule.assess(entries, today: today, withDetail: true) }
            let result = try JSONSerialization.jsonObject(with: a.detail)
            let out: [String: Any] = ["engine": e.name, "notified": a.notified, "unjudged": a.unjudged ?? NSNull(),
                                      "numbers": Dictionary(uniqueKeysWithValues: a.numbers.map { ($0.name, $0.value) }), "result": result]
            FileHandle.standardOutput.write(try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys]))
            FileHandle.standardOutput.write(Data("\n".utf8))
        }
    }

    struct Engines: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "engines",
            abstract: "List the registered risk engines: name, whether an app configuration may name it, published and dated configurations.")

        func run() throws {
            func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(0, n - s.count)) }
            Swift.print(pad("engine", 11) + "  app  published  dated  description")
            for e in RiskEngineRegistry.engines {
                Swift.print(pad(e.name, 11) + "  " + pad(e.servesApps ? "yes" : "no", 3) + "  " + pad(e.publishedParameters == nil ? "no" : "yes", 9)
                            + "  " + pad(e.datedRule == nil ? "no" : "yes", 5) + "  " + e.title)
            }
        }
    }

    struct Configurations: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "configurations",
            abstract: "List the configurations the CWA server published, by date (for --published-configuration).",
            discussion: """
                One line per published state that changed a value the engine reads: rule (cwa, cwa-v1), the days it \
                was in force (from its commit on cwa-server's main branch to the day before the next; open: no later \
                change), the apps that read it, and the source commit. --json prints [{"rule", "generation", "from", \
                "until", "apps", "source": {"repository", "commit", "commitDate", "paths"}, "note", "configuration"}] \
                with each engine input as `gaenctl risk` reads it. See docs/risk.md.
                """)

        @Flag(help: "Print JSON with the values instead of a table.")
        var json = false

        func run() throws {
            let all = PublishedRiskConfigurations.dated
            if json {
                // Built as plain JSON values: each configuration is embedded as the engine reads it.
                let list: [[String: Any]] = try all.map { e in
                    ["rule": e.rule.rawValue, "generation": e.generation?.rawValue ?? NSNull(), "from": e.from,
                     "until": e.until ?? NSNull(), "apps": e.apps, "note": e.note,
                     "source": ["repository": e.source.repository, "commit": e.source.commit, "commitDate": e.source.commitDate,
                                "paths": e.source.paths],
                     "configuration": try JSONSerialization.jsonObject(with: Data(e.json.utf8))]
                }
                FileHandle.standardOutput.write(try JSONSerialization.data(withJSONObject: list, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
                FileHandle.standardOutput.write(Data("\n".utf8))
                return
            }
            func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(0, n - s.count)) }
            let appsWidth = all.map(\.apps.count).max() ?? 4
            Swift.print(pad("rule", 7) + "  from        until       " + pad("apps", appsWidth) + "  cwa-server commit")
            for e in all {
                Swift.print(pad(e.rule.rawValue, 7) + "  " + e.from + "  " + pad(e.until ?? "-", 10) + "  " + pad(e.apps, appsWidth)
                            + "  " + String(e.source.commit.prefix(9)))
            }
            Swift.print("source: \(PublishedRiskConfigurations.cwaServerRepository); values and files: gaenctl risk configurations --json")
        }
    }
}

enum RiskCLI {
    /// The published configuration in force on `date` (YYYY-MM-DD), named on stderr so that a
    /// result says which values it came from.
    static func published(_ rule: PublishedRiskConfigurations.DatedRule, on date: String,
                          generation: CWAGeneration?) throws -> PublishedRiskConfigurations.Dated {
        guard let day = UTCDay(isoDate: date) else {
            throw ValidationError("--published-configuration: '\(date)' is not a date such as 2020-07-01")
        }
        do {
            let e = try PublishedRiskConfigurations.published(rule, on: day, generation: generation)
            FileHandle.standardError.write(Data("gaenctl risk: published configuration \(e.summary)\n".utf8))
            return e
        } catch let e as PublishedRiskConfigurations.DateError {
            throw ValidationError("--published-configuration: \(e)")
        }
    }

    /// A risk error becomes one stderr line naming the field, and exit status 1.
    static func reporting<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as RiskError {
            FileHandle.standardError.write(Data("gaenctl risk: \(e)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// A JSON parameter file: a regular file of at most 16 MiB (so /dev/zero or a FIFO is
    /// refused at once with what it is, instead of being read until memory runs out), with its
    /// `#` comment lines blanked (configuration files as datasets ship them).
    static func read(_ path: String, what: String) throws -> Data {
        do { return ConfigurationText.strippingCommentLines(Data(try SmallFile.read(path, limit: 16 << 20))) } catch {
            throw ValidationError("\(what): '\(path)' \(error)")
        }
    }

    static func print<T: Encodable>(_ value: T, pretty: Bool = true) throws {
        FileHandle.standardOutput.write(try RiskJSON.encode(value, pretty: pretty))
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
