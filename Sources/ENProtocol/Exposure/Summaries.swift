#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Framework summaries of exposure windows, with the semantics of the Android Exposure
/// Notifications API: `DailySummariesConfig` -> `DailySummary` / `DailySummary.ExposureSummaryData`
/// (API v2), and the v1 `ExposureSummary` (attenuation durations, matched key count, days since
/// last exposure, maximum risk score).
///
/// Sources: Android API reference for DailySummariesConfig.DailySummariesConfigBuilder (3 strictly
/// increasing thresholds in 0...255, 4 bucket weights and report-type/infectiousness weights in
/// 0...2.5, report-type weights settable for types 1...4, infectiousness weights for STANDARD and
/// HIGH, both default 0; minimumWindowScore and daysSinceExposureThreshold >= 0, default 0) and
/// Apple's ENExposureSummaryItem reference (weightedDurationSum ignores infectiousness and report
/// type weights).

/// Report types (Android ReportType): 0 UNKNOWN, 1 CONFIRMED_TEST, 2 CONFIRMED_CLINICAL_DIAGNOSIS,
/// 3 SELF_REPORT, 4 RECURSIVE, 5 REVOKED.
public enum ReportTypeCode {
    public static let names = ["UNKNOWN", "CONFIRMED_TEST", "CONFIRMED_CLINICAL_DIAGNOSIS", "SELF_REPORT", "RECURSIVE", "REVOKED"]
}

public struct DailySummariesConfig: Sendable, Equatable, Codable {
    /// Bucket edges t0 < t1 < t2 (dB): immediate A <= t0, near A <= t1, medium A <= t2, other above.
    public var attenuationBucketThresholdDb: [Int]
    /// Weights of the four buckets (immediate, near, medium, other).
    public var attenuationBucketWeights: [Double]
    /// Weight per report type, indexed by report type 0...5 (only 1...4 may be non-zero).
    public var reportTypeWeights: [Double]
    /// Weight per infectiousness, indexed 0...2 (NONE must stay 0).
    public var infectiousnessWeights: [Double]
    /// Windows scoring below this are left out of the day's summary.
    public var minimumWindowScore: Double
    /// Windows older than this many days before `today` are left out; 0: no limit.
    public var daysSinceExposureThreshold: Int

    public init(attenuationBucketThresholdDb: [Int], attenuationBucketWeights: [Double],
                reportTypeWeights: [Double], infectiousnessWeights: [Double],
                minimumWindowScore: Double = 0, daysSinceExposureThreshold: Int = 0) {
        self.attenuationBucketThresholdDb = attenuationBucketThresholdDb
        self.attenuationBucketWeights = attenuationBucketWeights
        self.reportTypeWeights = reportTypeWeights
        self.infectiousnessWeights = infectiousnessWeights
        self.minimumWindowScore = minimumWindowScore
        self.daysSinceExposureThreshold = daysSinceExposureThreshold
    }

    enum CodingKeys: String, CodingKey {
        case attenuationBucketThresholdDb, attenuationBucketWeights, reportTypeWeights, infectiousnessWeights,
             minimumWindowScore, daysSinceExposureThreshold
    }

    /// Weight tables are read either as an array indexed by the enum value or as an object keyed by
    /// the enum value ("1": 1.0) or its Android name ("CONFIRMED_TEST": 1.0); unset entries are 0
    /// as in the framework's builder.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        attenuationBucketThresholdDb = try c.decode([Int].self, forKey: .attenuationBucketThresholdDb)
        attenuationBucketWeights = try c.decode([Double].self, forKey: .attenuationBucketWeights)
        reportTypeWeights = try Self.decodeTable(c, .reportTypeWeights, size: 6, names: ReportTypeCode.names)
        infectiousnessWeights = try Self.decodeTable(c, .infectiousnessWeights, size: 3, names: ["NONE", "STANDARD", "HIGH"])
        minimumWindowScore = try c.decodeIfPresent(Double.self, forKey: .minimumWindowScore) ?? 0
        daysSinceExposureThreshold = try c.decodeIfPresent(Int.self, forKey: .daysSinceExposureThreshold) ?? 0
    }

    private static func decodeTable(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys, size: Int,
                                    names: [String]) throws -> [Double] {
        if let array = try? c.decode([Double].self, forKey: key) {
            guard array.count <= size else {
                throw RiskError.invalidParameter(name: key.stringValue, expected: "at most \(size) values", actual: "\(array.count)")
            }
            return array + Array(repeating: 0, count: size - array.count)
        }
        let object = try c.decode([String: Double].self, forKey: key)
        var table = Array(repeating: 0.0, count: size)
        for (k, v) in object {
            guard let i = Int(k) ?? names.firstIndex(of: k.uppercased()), (0..<size).contains(i) else {
                throw RiskError.invalidParameter(name: key.stringValue, expected: "keys 0...\(size - 1) or \(names.joined(separator: "/"))", actual: k)
            }
            table[i] = v
        }
        return table
    }

    /// The framework builder's checks.
    public func validate() throws {
        let t = attenuationBucketThresholdDb
        guard t.count == 3 else {
            throw RiskError.invalidParameter(name: "attenuationBucketThresholdDb", expected: "3 values", actual: "\(t.count) values")
        }
        guard t.allSatisfy({ (0...255).contains($0) }), t[0] < t[1], t[1] < t[2] else {
            throw RiskError.invalidParameter(name: "attenuationBucketThresholdDb", expected: "strictly increasing values in 0...255", actual: "\(t)")
        }
        guard attenuationBucketWeights.count == 4 else {
            throw RiskError.invalidParameter(name: "attenuationBucketWeights", expected: "4 values", actual: "\(attenuationBucketWeights.count) values")
        }
        for (name, values) in [("attenuationBucketWeights", attenuationBucketWeights),
                               ("reportTypeWeights", reportTypeWeights), ("infectiousnessWeights", infectiousnessWeights)] {
            if let bad = values.first(where: { !(0...2.5).contains($0) }) {
                throw RiskError.invalidParameter(name: name, expected: "values in 0...2.5", actual: "\(bad)")
            }
        }
        if reportTypeWeights[0] != 0 || reportTypeWeights[5] != 0 {
            throw RiskError.invalidParameter(name: "reportTypeWeights", expected: "no weight for UNKNOWN (0) or REVOKED (5)",
                                             actual: "\(reportTypeWeights)")
        }
        if infectiousnessWeights[0] != 0 {
            throw RiskError.invalidParameter(name: "infectiousnessWeights", expected: "no weight for NONE (0)",
                                             actual: "\(infectiousnessWeights[0])")
        }
        guard minimumWindowScore >= 0, minimumWindowScore.isFinite else {
            throw RiskError.invalidParameter(name: "minimumWindowScore", expected: "finite and >= 0", actual: "\(minimumWindowScore)")
        }
        guard daysSinceExposureThreshold >= 0 else {
            throw RiskError.invalidParameter(name: "daysSinceExposureThreshold", expected: ">= 0", actual: "\(daysSinceExposureThreshold)")
        }
    }

    /// Weight of the bucket a typical attenuation falls in.
    public func bucketWeight(attenuationDb a: Int) -> Double {
        let t = attenuationBucketThresholdDb
        if a <= t[0] { return attenuationBucketWeights[0] }
        if a <= t[1] { return attenuationBucketWeights[1] }
        if a <= t[2] { return attenuationBucketWeights[2] }
        return attenuationBucketWeights[3]
    }
}

/// DailySummary.ExposureSummaryData: over the windows of one day (and one report type, or all).
public struct ExposureSummaryData: Sendable, Equatable, Codable {
    public var maximumScore: Double = 0
    public var scoreSum: Double = 0
    /// Seconds weighted by attenuation bucket only.
    public var weightedDurationSum: Double = 0

    public init(maximumScore: Double = 0, scoreSum: Double = 0, weightedDurationSum: Double = 0) {
        self.maximumScore = maximumScore
        self.scoreSum = scoreSum
        self.weightedDurationSum = weightedDurationSum
    }

    mutating func add(score: Double, weightedDuration: Double) {
        maximumScore = max(maximumScore, score)
        scoreSum += score
        weightedDurationSum += weightedDuration
    }
}

public struct DailySummary: Sendable, Equatable, Codable {
    public var daysSinceEpoch: Int
    public var date: String
    public var summaryData: ExposureSummaryData
    /// Keyed by report type name (CONFIRMED_TEST, ...); only types that had windows.
    public var summaryDataPerReportType: [String: ExposureSummaryData]
}

public enum DailySummaries {
    /// Score and weighted duration of one window:
    /// score = sum(secondsSinceLastScan x bucketWeight(typicalAttenuation)) x reportTypeWeight x infectiousnessWeight.
    public static func windowScore(_ w: ExposureWindow, config: DailySummariesConfig) -> (score: Double, weightedDuration: Double) {
        let weighted = w.scanInstances.reduce(0.0) {
            $0 + Double(max($1.secondsSinceLastScan, 0)) * config.bucketWeight(attenuationDb: $1.typicalAttenuationDb)
        }
        let rt = (0..<config.reportTypeWeights.count).contains(w.reportType) ? config.reportTypeWeights[w.reportType] : 0
        let inf = (0..<config.infectiousnessWeights.count).contains(w.infectiousness) ? config.infectiousnessWeights[w.infectiousness] : 0
        return (weighted * rt * inf, weighted)
    }

    /// Daily summaries, oldest day first, as exposure-notifications-internals
    /// DailySummaryUtils.getDailySummaries computes them: only report types 1...4 are returnable
    /// (UNKNOWN and REVOKED windows count for nothing); a day with returnable windows gets a summary
    /// even when all of them fall below minimumWindowScore (then all zero).
    /// `today` is needed only when daysSinceExposureThreshold is set.
    public static func compute(_ windows: [ExposureWindow], config: DailySummariesConfig, today: UTCDay? = nil) throws -> [DailySummary] {
        try config.validate()
        if config.daysSinceExposureThreshold > 0 && today == nil {
            throw RiskError.invalidParameter(name: "daysSinceExposureThreshold", expected: "a reference day (today) to count from",
                                             actual: "\(config.daysSinceExposureThreshold) without one")
        }
        var days: [UTCDay: DailySummary] = [:]
        for w in windows where (1...4).contains(w.reportType) {
            if config.daysSinceExposureThreshold > 0, let today,
               Int(today.rawValue - w.day.rawValue) > config.daysSinceExposureThreshold { continue }
            var d = days[w.day] ?? DailySummary(daysSinceEpoch: Int(w.day.rawValue), date: w.day.isoDate,
                                                 summaryData: ExposureSummaryData(), summaryDataPerReportType: [:])
            defer { days[w.day] = d }
            let (score, weightedDuration) = windowScore(w, config: config)
            guard score >= config.minimumWindowScore else { continue }
            d.summaryData.add(score: score, weightedDuration: weightedDuration)
            let name = (0..<ReportTypeCode.names.count).contains(w.reportType) ? ReportTypeCode.names[w.reportType] : "\(w.reportType)"
            d.summaryDataPerReportType[name, default: ExposureSummaryData()].add(score: score, weightedDuration: weightedDuration)
        }
        return days.keys.sorted().map { days[$0]! }
    }
}

/// The v1 ExposureSummary over a set of windows, each taken as one exposure (one key, one day).
public struct ExposureSummaryV1: Sendable, Equatable, Codable {
    /// Seconds in the three attenuation buckets ([0] A < X, [1] X <= A < Y, [2] A >= Y), each
    /// capped at 30 minutes as the framework did ("aggregated maximum exposures of 30 minutes").
    public var attenuationDurations: [Int]
    /// Number of exposures (windows; the framework counted matched keys).
    public var matchedKeyCount: Int
    /// Days from the most recent exposure to today; nil when there is none.
    public var daysSinceLastExposure: Int?
    /// Highest v1 risk score among exposures that reach minimumRiskScore, clamped to 0...255
    /// as ENRiskScore (UInt8) was.
    public var maximumRiskScore: Int
    /// The same without the clamp (framework's maximumRiskScoreFullRange).
    public var maximumRiskScoreFullRange: Int

    public static func compute(_ windows: [ExposureWindow], configuration: GAENv1Configuration,
                               today: UTCDay) throws -> (summary: ExposureSummaryV1, exposures: [GAENv1Exposure]) {
        try configuration.validate()
        let live = windows.enumerated().filter { $0.element.reportType != 5 }
        let exposures = try live.map { try GAENv1.score($0.element, index: $0.offset, configuration: configuration, today: today) }
        var durations = [0, 0, 0]
        for (_, w) in live {
            let d = GAENv1.attenuationDurations(w, thresholds: configuration.attenuationDurationThresholds)
            for i in 0..<3 { durations[i] += d[i] }
        }
        let capped = durations.map { min($0, 30 * 60) }
        let maxScore = exposures.filter(\.counted).map(\.riskScore).max() ?? 0
        let latest = live.map(\.element.day).max()
        return (ExposureSummaryV1(attenuationDurations: capped, matchedKeyCount: live.count,
                                  daysSinceLastExposure: latest.map { Int(today.rawValue - $0.rawValue) },
                                  maximumRiskScore: min(maxScore, 255), maximumRiskScoreFullRange: maxScore),
                exposures)
    }
}
