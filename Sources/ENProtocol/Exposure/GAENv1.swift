#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The framework's v1 risk scoring (ENExposureConfiguration / Android ExposureConfiguration, API v1):
/// an exposure's risk score is the product of four level values, each picked from an 8-entry table
/// by the bucket its attenuation, days since exposure, duration and transmission risk level fall in.
/// Bucket edges are those of Apple's ENExposureConfiguration reference (attenuationLevelValues,
/// daysSinceLastExposureLevelValues, durationLevelValues, transmissionRiskLevelValues) and the
/// Android ExposureConfiguration reference, which use the same eight buckets.
public struct GAENv1Configuration: Sendable, Equatable, Codable {
    /// Exposures scoring below this are not counted (framework: "excludes exposure incidents with
    /// scores lower than this").
    public var minimumRiskScore: Int
    /// Index 0: attenuation > 73 dB ... index 7: attenuation <= 10 dB.
    public var attenuationLevelValues: [Int]
    /// Index 0: >= 14 days ago ... index 7: 0-1 days ago.
    public var daysSinceLastExposureLevelValues: [Int]
    /// Index 0: 0 minutes ... index 7: more than 30 minutes.
    public var durationLevelValues: [Int]
    /// Index 0: transmission risk level 1 ... index 7: level 8.
    public var transmissionRiskLevelValues: [Int]
    /// The two edges X < Y of the three attenuation-duration buckets (framework default [50, 70]).
    public var attenuationDurationThresholds: [Int]
    /// Not part of the framework: the level assumed for windows that carry no
    /// `transmissionRiskLevel` (windows computed by a board never do). Absent: such a window's level
    /// is INVALID (0), which the framework scores with a transmission risk value of 1.
    public var defaultTransmissionRiskLevel: Int?

    public init(minimumRiskScore: Int, attenuationLevelValues: [Int], daysSinceLastExposureLevelValues: [Int],
                durationLevelValues: [Int], transmissionRiskLevelValues: [Int],
                attenuationDurationThresholds: [Int] = [50, 70], defaultTransmissionRiskLevel: Int? = nil) {
        self.minimumRiskScore = minimumRiskScore
        self.attenuationLevelValues = attenuationLevelValues
        self.daysSinceLastExposureLevelValues = daysSinceLastExposureLevelValues
        self.durationLevelValues = durationLevelValues
        self.transmissionRiskLevelValues = transmissionRiskLevelValues
        self.attenuationDurationThresholds = attenuationDurationThresholds
        self.defaultTransmissionRiskLevel = defaultTransmissionRiskLevel
    }

    enum CodingKeys: String, CodingKey {
        case minimumRiskScore, attenuationLevelValues, daysSinceLastExposureLevelValues, durationLevelValues,
             transmissionRiskLevelValues, attenuationDurationThresholds, defaultTransmissionRiskLevel
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        minimumRiskScore = try c.decode(Int.self, forKey: .minimumRiskScore)
        attenuationLevelValues = try c.decode([Int].self, forKey: .attenuationLevelValues)
        daysSinceLastExposureLevelValues = try c.decode([Int].self, forKey: .daysSinceLastExposureLevelValues)
        durationLevelValues = try c.decode([Int].self, forKey: .durationLevelValues)
        transmissionRiskLevelValues = try c.decode([Int].self, forKey: .transmissionRiskLevelValues)
        attenuationDurationThresholds = try c.decodeIfPresent([Int].self, forKey: .attenuationDurationThresholds) ?? [50, 70]
        defaultTransmissionRiskLevel = try c.decodeIfPresent(Int.self, forKey: .defaultTransmissionRiskLevel)
    }

    /// Checks table sizes and ranges; level values are 0...8 in the framework.
    public func validate() throws {
        for (name, values) in [("attenuationLevelValues", attenuationLevelValues),
                               ("daysSinceLastExposureLevelValues", daysSinceLastExposureLevelValues),
                               ("durationLevelValues", durationLevelValues),
                               ("transmissionRiskLevelValues", transmissionRiskLevelValues)] {
            guard values.count == 8 else {
                throw RiskError.invalidParameter(name: name, expected: "8 values", actual: "\(values.count) values")
            }
            if let bad = values.first(where: { !(0...8).contains($0) }) {
                throw RiskError.invalidParameter(name: name, expected: "values in 0...8", actual: "\(bad)")
            }
        }
        guard minimumRiskScore >= 0 else {
            throw RiskError.invalidParameter(name: "minimumRiskScore", expected: ">= 0", actual: "\(minimumRiskScore)")
        }
        let t = attenuationDurationThresholds
        guard t.count == 2, t[0] < t[1], t.allSatisfy({ (0...255).contains($0) }) else {
            throw RiskError.invalidParameter(name: "attenuationDurationThresholds",
                                             expected: "2 increasing values in 0...255", actual: "\(t)")
        }
        if let d = defaultTransmissionRiskLevel, !(1...8).contains(d) {
            throw RiskError.invalidParameter(name: "defaultTransmissionRiskLevel", expected: "1...8", actual: "\(d)")
        }
    }
}

/// The framework's eight v1 buckets (index into the level-value tables).
public enum GAENv1Buckets {
    /// 0: A > 73, 1: 73 >= A > 63, 2: 63 >= A > 51, 3: 51 >= A > 33, 4: 33 >= A > 27,
    /// 5: 27 >= A > 15, 6: 15 >= A > 10, 7: A <= 10 (dB).
    public static func attenuation(_ dB: Int) -> Int {
        switch dB {
        case 74...: return 0
        case 64...: return 1
        case 52...: return 2
        case 34...: return 3
        case 28...: return 4
        case 16...: return 5
        case 11...: return 6
        default: return 7
        }
    }

    /// 0: >= 14 days, 1: 12-13, 2: 10-11, 3: 8-9, 4: 6-7, 5: 4-5, 6: 2-3, 7: 0-1.
    public static func daysSinceExposure(_ days: Int) -> Int {
        switch days {
        case 14...: return 0
        case 12...: return 1
        case 10...: return 2
        case 8...: return 3
        case 6...: return 4
        case 4...: return 5
        case 2...: return 6
        default: return 7
        }
    }

    /// 0: 0 min, 1: <= 5, 2: <= 10, 3: <= 15, 4: <= 20, 5: <= 25, 6: <= 30, 7: > 30 minutes.
    public static func duration(minutes: Double) -> Int {
        if minutes <= 0 { return 0 }
        for (i, edge) in [5.0, 10, 15, 20, 25, 30].enumerated() where minutes <= edge { return i + 1 }
        return 7
    }

    /// Level 1 ... 8 to index 0 ... 7.
    public static func transmissionRisk(_ level: Int) -> Int { min(max(level, 1), 8) - 1 }

    /// The framework's v1 exposure duration: rounded to the nearest 5 minutes, halves down
    /// (exposure-notifications-internals KeyExposureEvaluator.bucketizeDuration). A window's scan
    /// instances already include one scan interval, as the reference adds to the sighted span.
    public static func bucketizedSeconds(_ seconds: Int) -> Int {
        let mod = seconds % 300
        return mod <= 150 ? seconds - mod : seconds + 300 - mod
    }

    /// An exposure's duration in seconds under `rounding`.
    public static func roundedSeconds(_ seconds: Int, _ rounding: GAENv1DurationRounding) -> Int {
        switch rounding {
        case .nearest: return bucketizedSeconds(seconds)
        case .up: return (seconds + 299) / 300 * 300
        case .down: return seconds / 300 * 300
        case .none: return seconds
        }
    }
}

/// How an exposure's duration is rounded before it is bucketed. What an app's v1 scores saw
/// depended on the framework build that reported the duration, which no published app states,
/// so a replay names the rounding it assumed:
/// - `nearest` (default): 5-minute steps, nearest, halves down, as the reference implementation
///   bucketizes (exposure-notifications-internals KeyExposureEvaluator.bucketizeDuration);
/// - `up`: every started 5 minutes counts (ceiling), an upper bound on what a phone reported;
/// - `down`: whole 5-minute steps only (floor), a lower bound;
/// - `none`: the window's own minutes, unrounded.
public enum GAENv1DurationRounding: String, Sendable, CaseIterable, Codable {
    case nearest, up, down, none
}

/// One exposure (one key on one day; here one window) scored the v1 way.
public struct GAENv1Exposure: Sendable, Equatable, Codable {
    public var date: String
    /// Duration-weighted mean of the scan instances' typical attenuation, rounded (framework:
    /// "weighting attenuation ... based on their durations during the exposure event").
    public var attenuationDb: Int
    /// Duration in 5-minute steps, as the framework's v1 exposures.
    public var durationMinutes: Double
    public var daysSinceExposure: Int
    /// 1...8, or 0 (INVALID) when the window has none and no default is configured.
    public var transmissionRiskLevel: Int
    /// The product of the four level values, not clamped.
    public var riskScore: Int
    /// Whether riskScore reaches minimumRiskScore.
    public var counted: Bool
}

public enum GAENv1 {
    /// Duration-weighted mean typical attenuation of a window; a plain mean when it has no duration.
    public static func meanAttenuation(_ window: ExposureWindow) -> Int {
        let s = window.scanInstances
        guard !s.isEmpty else { return 255 }
        let total = window.totalSeconds
        let mean: Double
        if total > 0 {
            mean = s.reduce(0.0) { $0 + Double($1.typicalAttenuationDb) * Double(max($1.secondsSinceLastScan, 0)) } / Double(total)
        } else {
            mean = Double(s.reduce(0) { $0 + $1.typicalAttenuationDb }) / Double(s.count)
        }
        return Int(mean.rounded(.toNearestOrAwayFromZero))
    }

    /// Scores one window as one v1 exposure on `today`, as the reference RiskScoreCalculator does
    /// (exposure-notifications-internals): INVALID transmission risk (0) scores a value of 1.
    public static func score(_ window: ExposureWindow, index: Int, configuration c: GAENv1Configuration,
                             today: UTCDay, durationRounding: GAENv1DurationRounding = .nearest) throws -> GAENv1Exposure {
        let trl = window.transmissionRiskLevel ?? c.defaultTransmissionRiskLevel ?? 0
        guard (0...8).contains(trl) else {
            throw RiskError.invalidWindow(index: index, field: "transmissionRiskLevel", expected: "1...8 (0: invalid)", actual: "\(trl)")
        }
        let attenuation = meanAttenuation(window)
        let minutes = Double(GAENv1Buckets.roundedSeconds(window.totalSeconds, durationRounding)) / 60
        let days = today.rawValue - window.day.rawValue
        let trlValue = trl == 0 ? 1 : c.transmissionRiskLevelValues[GAENv1Buckets.transmissionRisk(trl)]
        let score = c.attenuationLevelValues[GAENv1Buckets.attenuation(attenuation)]
            * c.daysSinceLastExposureLevelValues[GAENv1Buckets.daysSinceExposure(Int(days))]
            * c.durationLevelValues[GAENv1Buckets.duration(minutes: minutes)]
            * trlValue
        return GAENv1Exposure(date: window.day.isoDate, attenuationDb: attenuation, durationMinutes: minutes,
                              daysSinceExposure: Int(days), transmissionRiskLevel: trl, riskScore: score,
                              counted: score >= c.minimumRiskScore)
    }

    /// Seconds of a window in the three v1 attenuation-duration buckets, by each scan instance's
    /// typical attenuation: [0]: A < X, [1]: X <= A < Y, [2]: A >= Y, as the reference
    /// implementation counts them (exposure-notifications-internals KeyExposureEvaluator: time "at or
    /// above" a threshold is above it; Apple's ENExposureInfo text says A <= X instead). Not capped
    /// (callers cap where the framework does).
    public static func attenuationDurations(_ window: ExposureWindow, thresholds: [Int]) -> [Int] {
        var buckets = [0, 0, 0]
        for s in window.scanInstances {
            let seconds = max(s.secondsSinceLastScan, 0)
            let i = s.typicalAttenuationDb < thresholds[0] ? 0 : (s.typicalAttenuationDb < thresholds[1] ? 1 : 2)
            buckets[i] += seconds
        }
        return buckets
    }
}
