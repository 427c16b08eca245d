#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// The Corona-Warn-App's original risk method (before CWA 1.5): each
/// window is one exposure (one key, one day) with the framework's v1 risk score; exposures of
/// under 10 minutes or of average attenuation above 73 dB are discarded; exposures reaching the
/// minimum risk score are risk encounters; over the risk encounters of the last 14 days, minutes
/// in the three attenuation-duration buckets are weighted ([1.0, 0.5, 0.0] at [55, 63] dB), the
/// default bucket offset added, and the sum multiplied by (highest risk score / normalization
/// divisor). Increased risk when that reaches `increasedRiskMinutes`.
public struct CWAv1Configuration: Sendable, Equatable, Codable {
    public var v1: GAENv1Configuration
    public var attenuationDurationWeights: [Double]
    public var defaultBucketOffset: Double
    public var riskScoreNormalizationDivisor: Double
    public var increasedRiskMinutes: Double
    /// Exposures shorter than this are discarded (the method's 10 minutes).
    public var minimumExposureMinutes: Double
    /// Exposures whose average attenuation is above this are discarded (the method's 73 dB).
    public var maximumAverageAttenuationDb: Int
    /// Risk encounters older than this many days do not count (the method's 14 days).
    public var maximumAgeDays: Int

    enum CodingKeys: String, CodingKey {
        case attenuationDurationWeights, defaultBucketOffset, riskScoreNormalizationDivisor, increasedRiskMinutes,
             minimumExposureMinutes, maximumAverageAttenuationDb, maximumAgeDays
    }

    public init(v1: GAENv1Configuration, attenuationDurationWeights: [Double] = [1.0, 0.5, 0.0], defaultBucketOffset: Double = 0,
                riskScoreNormalizationDivisor: Double = 25, increasedRiskMinutes: Double = 15,
                minimumExposureMinutes: Double = 10, maximumAverageAttenuationDb: Int = 73, maximumAgeDays: Int = 14) {
        self.v1 = v1
        self.attenuationDurationWeights = attenuationDurationWeights
        self.defaultBucketOffset = defaultBucketOffset
        self.riskScoreNormalizationDivisor = riskScoreNormalizationDivisor
        self.increasedRiskMinutes = increasedRiskMinutes
        self.minimumExposureMinutes = minimumExposureMinutes
        self.maximumAverageAttenuationDb = maximumAverageAttenuationDb
        self.maximumAgeDays = maximumAgeDays
    }

    /// One flat JSON object: the framework's v1 names plus the CWA ones.
    public init(from decoder: Decoder) throws {
        v1 = try GAENv1Configuration(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        attenuationDurationWeights = try c.decodeIfPresent([Double].self, forKey: .attenuationDurationWeights) ?? [1.0, 0.5, 0.0]
        defaultBucketOffset = try c.decodeIfPresent(Double.self, forKey: .defaultBucketOffset) ?? 0
        riskScoreNormalizationDivisor = try c.decodeIfPresent(Double.self, forKey: .riskScoreNormalizationDivisor) ?? 25
        increasedRiskMinutes = try c.decodeIfPresent(Double.self, forKey: .increasedRiskMinutes) ?? 15
        minimumExposureMinutes = try c.decodeIfPresent(Double.self, forKey: .minimumExposureMinutes) ?? 10
        maximumAverageAttenuationDb = try c.decodeIfPresent(Int.self, forKey: .maximumAverageAttenuationDb) ?? 73
        maximumAgeDays = try c.decodeIfPresent(Int.self, forKey: .maximumAgeDays) ?? 14
    }

    public func encode(to encoder: Encoder) throws {
        try v1.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(attenuationDurationWeights, forKey: .attenuationDurationWeights)
        try c.encode(defaultBucketOffset, forKey: .defaultBucketOffset)
        try c.encode(riskScoreNormalizationDivisor, forKey: .riskScoreNormalizationDivisor)
        try c.encode(increasedRiskMinutes, forKey: .increasedRiskMinutes)
        try c.encode(minimumExposureMinutes, forKey: .minimumExposureMinutes)
        try c.encode(maximumAverageAttenuationDb, forKey: .maximumAverageAttenuationDb)
        try c.encode(maximumAgeDays, forKey: .maximumAgeDays)
    }

    public func validate() throws {
        try v1.validate()
        guard attenuationDurationWeights.count == 3, attenuationDurationWeights.allSatisfy({ $0.isFinite }) else {
            throw RiskError.invalidParameter(name: "attenuationDurationWeights", expected: "3 finite values", actual: "\(attenuationDurationWeights)")
        }
        guard riskScoreNormalizationDivisor > 0, riskScoreNormalizationDivisor.isFinite else {
            throw RiskError.invalidParameter(name: "riskScoreNormalizationDivisor", expected: "> 0", actual: "\(riskScoreNormalizationDivisor)")
        }
        guard maximumAgeDays >= 0 else {
            throw RiskError.invalidParameter(name: "maximumAgeDays", expected: ">= 0", actual: "\(maximumAgeDays)")
        }
    }
}

public struct CWAv1Result: Sendable, Equatable, Codable {
    public var increasedRisk: Bool
    public var weightedMinutes: Double
    public var riskEncounters: Int
    public var daysSinceLastRiskEncounter: Int?
    public var maximumRiskScore: Int

    enum CodingKeys: String, CodingKey {
        case increasedRisk, weightedMinutes, riskEncounters, daysSinceLastRiskEncounter, maximumRiskScore
    }

    /// Writes an absent day count as null: the contract lists every key.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(increasedRisk, forKey: .increasedRisk)
        try c.encode(weightedMinutes, forKey: .weightedMinutes)
        try c.encode(riskEncounters, forKey: .riskEncounters)
        try c.encode(daysSinceLastRiskEncounter, forKey: .daysSinceLastRiskEncounter)
        try c.encode(maximumRiskScore, forKey: .maximumRiskScore)
    }
}

public enum CWAv1RiskCalculation {
    public static func calculate(_ windows: [ExposureWindow], configuration c: CWAv1Configuration, today: UTCDay) throws -> CWAv1Result {
        try c.validate()
        var encounters: [(window: ExposureWindow, score: Int)] = []
        for (i, w) in windows.enumerated() where w.reportType != 5 {
            let age = Int(today.rawValue - w.day.rawValue)
            guard age >= 0, age <= c.maximumAgeDays else { continue }
            // The exposure's duration as the framework reported it: in 5-minute steps.
            let minutes = Double(GAENv1Buckets.bucketizedSeconds(w.totalSeconds)) / 60
            guard minutes >= c.minimumExposureMinutes,
                  GAENv1.meanAttenuation(w) <= c.maximumAverageAttenuationDb else { continue }
            let e = try GAENv1.score(w, index: i, configuration: c.v1, today: today)
            if e.counted { encounters.append((w, e.riskScore)) }
        }
        guard let maxScore = encounters.map(\.score).max() else {
            return CWAv1Result(increasedRisk: false, weightedMinutes: 0, riskEncounters: 0,
                               daysSinceLastRiskEncounter: nil, maximumRiskScore: 0)
        }
        // Seconds per bucket over all risk encounters, capped at 30 minutes per bucket as the
        // framework's ExposureSummary.attenuationDurations were.
        var seconds = [0, 0, 0]
        for (w, _) in encounters {
            let d = GAENv1.attenuationDurations(w, thresholds: c.v1.attenuationDurationThresholds)
            for i in 0..<3 { seconds[i] += d[i] }
        }
        let minutes = seconds.map { Double(min($0, 30 * 60)) / 60 }
        let bucketSum = zip(minutes, c.attenuationDurationWeights).reduce(c.defaultBucketOffset) { $0 + $1.0 * $1.1 }
        let weighted = bucketSum * Double(maxScore) / c.riskScoreNormalizationDivisor
        let latest = encounters.map(\.window.day).max()!
        return CWAv1Result(increasedRisk: weighted >= c.increasedRiskMinutes, weightedMinutes: weighted,
                           riskEncounters: encounters.count,
                           daysSinceLastRiskEncounter: Int(today.rawValue - latest.rawValue),
                           maximumRiskScore: maxScore)
    }
}

/// The CWA's first calculation (framework v1 score plus attenuation-duration weights, 2020).
public struct CWAv1Engine: RiskEngine {
    public init() {}
    public let name = "cwa-v1"
    public let title = "Corona-Warn-App's original calculation (framework v1 score and attenuation durations, 2020)"
    public let servesApps = false
    public var publishedParameters: Data? { Data(PublishedRiskConfigurations.cwaV1.utf8) }
    public var datedRule: PublishedRiskConfigurations.DatedRule? { .cwaV1 }

    struct Rule: RiskRule {
        let p: CWAv1Configuration
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let r = try CWAv1RiskCalculation.calculate(integerWindows(entries), configuration: p, today: today)
            return RiskAssessment(notified: r.increasedRisk,
                                  numbers: [("weightedMinutes", r.weightedMinutes), ("increasedRiskMinutes", p.increasedRiskMinutes),
                                            ("maximumRiskScore", Double(r.maximumRiskScore)), ("minimumRiskScore", Double(p.v1.minimumRiskScore)),
                                            ("riskEncounters", Double(r.riskEncounters))],
                                  unjudged: unjudgedTransmissionRisk(entries, p.v1),
                                  detail: withDetail ? try RiskJSON.encode(r, pretty: false) : Data())
        }
    }

    /// JSON, or the app configuration in protobuf text format as the CWA server published it.
    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        var policy = UnknownFieldPolicy(allow: options.allowUnknownFields)
        let p = try ConfigurationText.cwaV1(parameters, file: source, policy: &policy)
        try p.validate()
        return (Rule(p: p), policy.warnings + ConfigurationReach.warnings(cwaV1: p))
    }
}
