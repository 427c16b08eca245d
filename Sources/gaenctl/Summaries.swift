import ArgumentParser
import BoardCommands
import DBusCore
import ENProtocol
import RiskEngines
import GaendAPI
import GaendClient
import Foundation

/// `gaenctl summaries`: the framework's DailySummaries of a windows file, offline.
struct Summaries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Daily summaries of exposure windows, as the framework's getDailySummaries returns them.",
        discussion: """
            The config holds the DailySummariesConfig fields: attenuationBucketThresholdDb (3), attenuationBucketWeights (4), \
            reportTypeWeights and infectiousnessWeights (arrays by enum value, or objects keyed by value or name), \
            minimumWindowScore, daysSinceExposureThreshold. Without --json, prints one line per day and report type.
            """)

    @Option(help: ArgumentHelp("Exposure windows: a JSON array in the Android API shape (omit: ask gaend, GetDailySummaries).", valueName: "file"))
    var windows: String?

    @OptionGroup var bus: BusOptions

    @Option(help: ArgumentHelp("DailySummariesConfig as JSON.", valueName: "file"))
    var config: String

    @Option(help: ArgumentHelp("Reference day for daysSinceExposureThreshold, YYYY-MM-DD (default: today, UTC).", valueName: "date"))
    var today: String?

    @Flag(help: "Print JSON: an array of {daysSinceEpoch, date, summaryData, summaryDataPerReportType}.")
    var json = false

    func run() async throws {
        let c = try RiskJSON.decodeParameters(DailySummariesConfig.self, from: RiskCLI.read(config, what: "--config"), file: config)
        guard let windows else { return try await daemonSummaries(c) }
        let ws = try RiskJSON.decodeWindows(from: RiskCLI.read(windows, what: "--windows"))
        var day = UTCDay(unixSeconds: Date().timeIntervalSince1970)
        if let today {
            guard let d = UTCDay(isoDate: today) else { throw ValidationError("--today: '\(today)' is not a date such as 2021-02-01") }
            day = d
        }
        let summaries = try DailySummaries.compute(ws, config: c, today: day)
        if json {
            try RiskCLI.print(summaries)
            return
        }
        func line(_ label: String, _ d: ExposureSummaryData) -> String {
            "  " + label.padding(toLength: 30, withPad: " ", startingAt: 0)
                + String(format: "maximumScore %9.1f  scoreSum %9.1f  weightedDurationSum %7.0f s",
                         d.maximumScore, d.scoreSum, d.weightedDurationSum)
        }
        if summaries.isEmpty { Swift.print("no day reaches the minimum window score") }
        for s in summaries {
            Swift.print(s.date)
            Swift.print(line("all report types", s.summaryData))
            for (name, d) in s.summaryDataPerReportType.sorted(by: { $0.key < $1.key }) { Swift.print(line(name, d)) }
        }
    }
}

extension Summaries {
    /// gaend's daily summaries of its stored windows under `c` (GetDailySummaries).
    func daemonSummaries(_ c: DailySummariesConfig) async throws {
        var config = GaendDailySummariesConfig(
            attenuationBucketThresholdsDb: c.attenuationBucketThresholdDb.map { Int32($0) },
            attenuationBucketWeights: c.attenuationBucketWeights,
            infectiousnessWeights: Dictionary(uniqueKeysWithValues: c.infectiousnessWeights.enumerated()
                .filter { (1...2).contains($0.offset) }.map { (Int32($0.offset), $0.element) }),
            reportTypeWeights: Dictionary(uniqueKeysWithValues: c.reportTypeWeights.enumerated()
                .filter { (1...4).contains($0.offset) }.map { (Int32($0.offset), $0.element) }),
            minimumWindowScore: c.minimumWindowScore)
        if c.daysSinceExposureThreshold > 0 { config.daysSinceExposureThreshold = Int32(c.daysSinceExposureThreshold) }
        try await withDaemon("summaries", bus) { client in
            let summaries = try await client.dailySummaries(config: config)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                FileHandle.standardOutput.write(try encoder.encode(summaries))
                FileHandle.standardOutput.write(Data("\n".utf8))
                return
            }
            if summaries.isEmpty { Swift.print("no day reaches the minimum window score") }
            for s in summaries {
                let date = Date(timeIntervalSince1970: Double(s.daysSinceEpoch) * 86_400).formatted(.iso8601.year().month().day())
                Swift.print(date + String(format: "  maximumScore %9.1f  scoreSum %9.1f  weightedDurationSum %7.0f s",
                                          s.summaryData.maximumScore, s.summaryData.scoreSum, s.summaryData.weightedDurationSum))
            }
        }
    }
}
