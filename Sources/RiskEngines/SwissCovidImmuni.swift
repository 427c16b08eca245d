#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// SwissCovid's notification rule on exposure windows (DP-3T SDK, ExposureWindowMatchingWorker
/// from September 2020; no SDK code is used). Per UTC day, each scan instance's minutes
/// (secondsSinceLastScan / 60, whole minutes, as the SDK divides integers) go to the low bucket
/// when its typical attenuation is below `attenuationThresholdLow`, the medium bucket below
/// `attenuationThresholdMedium`, else nowhere that counts. A day is an exposure day when
/// low x attenuationFactorLow + medium x attenuationFactorMedium >= minDurationForExposure.
public struct SwissCovidConfiguration: Sendable, Equatable, Codable {
    public var attenuationThresholdLow: Int
    public var attenuationThresholdMedium: Int
    public var attenuationFactorLow: Double
    public var attenuationFactorMedium: Double
    /// Minutes.
    public var minDurationForExposure: Double

    /// SwissCovid's values as the DP-3T SDK made them its defaults "to the used attenuation
    /// thresholds of SwissCovid" (DP-3T/dp3t-sdk-android commit f6bb902, 2020-09-11:
    /// AppConfigManager DEFAULT_ATTENUATION_THRESHOLD_LOW 55, _MEDIUM 63, factors 1.0 and 0.5,
    /// DEFAULT_MIN_DURATION_FOR_EXPOSURE 15).
    public static let published = SwissCovidConfiguration(attenuationThresholdLow: 55, attenuationThresholdMedium: 63,
                                                          attenuationFactorLow: 1.0, attenuationFactorMedium: 0.5, minDurationForExposure: 15)

    public init(attenuationThresholdLow: Int, attenuationThresholdMedium: Int, attenuationFactorLow: Double,
                attenuationFactorMedium: Double, minDurationForExposure: Double) {
        self.attenuationThresholdLow = attenuationThresholdLow
        self.attenuationThresholdMedium = attenuationThresholdMedium
        self.attenuationFactorLow = attenuationFactorLow
        self.attenuationFactorMedium = attenuationFactorMedium
        self.minDurationForExposure = minDurationForExposure
    }

    public func validate() throws {
        guard attenuationThresholdLow <= attenuationThresholdMedium else {
            throw RiskError.invalidParameter(name: "attenuationThresholdLow/Medium", expected: "low <= medium",
                                             actual: "\(attenuationThresholdLow), \(attenuationThresholdMedium)")
        }
        for (n, v) in [("attenuationFactorLow", attenuationFactorLow), ("attenuationFactorMedium", attenuationFactorMedium),
                       ("minDurationForExposure", minDurationForExposure)] where !v.isFinite || v < 0 {
            throw RiskError.invalidParameter(name: n, expected: "a finite number >= 0", actual: "\(v)")
        }
    }
}

public struct SwissCovidDay: Sendable, Equatable, Codable {
    public var date: String
    public var minutesLow: Int
    public var minutesMedium: Int
    public var weightedMinutes: Double
    public var exposed: Bool
}

public struct SwissCovidResult: Sendable, Equatable, Codable {
    public var exposed: Bool
    public var exposureDays: [String]
    public var days: [SwissCovidDay]
}

public enum SwissCovidRisk {
    /// Scores each window alone (as a per-contact verdict) or all windows together per day.
    public static func calculate(_ windows: [ExposureWindow], configuration c: SwissCovidConfiguration) throws -> SwissCovidResult {
        try c.validate()
        var buckets: [UTCDay: (low: Int, medium: Int)] = [:]
        for w in windows where w.reportType != 5 {
            var b = buckets[w.day] ?? (0, 0)
            for s in w.scanInstances {
                let minutes = max(s.secondsSinceLastScan, 0) / 60
                if s.typicalAttenuationDb < c.attenuationThresholdLow { b.low += minutes }
                else if s.typicalAttenuationDb < c.attenuationThresholdMedium { b.medium += minutes }
            }
            buckets[w.day] = b
        }
        let days = buckets.keys.sorted().map { d -> SwissCovidDay in
            let b = buckets[d]!
            let weighted = Double(b.low) * c.attenuationFactorLow + Double(b.medium) * c.attenuationFactorMedium
            return SwissCovidDay(date: d.isoDate, minutesLow: b.low, minutesMedium: b.medium, weightedMinutes: weighted,
                                 exposed: weighted >= c.minDurationForExposure)
        }
        return SwissCovidResult(exposed: days.contains(where: \.exposed), exposureDays: days.filter(\.exposed).map(\.date), days: days)
    }
}

/// Immuni's (Italy) rule on the framework's v1 scoring: its exposure configuration
/// (`exposure_configuration`, snake_case names) is a framework v1 configuration; an exposure
/// counts when its v1 risk score reaches `minimum_risk_score` and is above 0, and the user is
/// notified when any exposure counts. With the published values the score of an exposure is
/// 3 x 5 = 15 (typical attenuation at most 63 dB, more than 15 minutes) or 0.
public struct ImmuniConfiguration: Sendable, Equatable, Codable {
    public var attenuationThresholds: [Int]
    public var attenuationBucketScores: [Int]
    public var daysSinceLastExposureBucketScores: [Int]
    public var durationBucketScores: [Int]
    public var transmissionRiskBucketScores: [Int]
    public var minimumRiskScore: Int

    enum CodingKeys: String, CodingKey {
        case attenuationThresholds = "attenuation_thresholds"
        case attenuationBucketScores = "attenuation_bucket_scores"
        case daysSinceLastExposureBucketScores = "days_since_last_exposure_bucket_scores"
        case durationBucketScores = "duration_bucket_scores"
        case transmissionRiskBucketScores = "transmission_risk_bucket_scores"
        case minimumRiskScore = "minimum_risk_score"
    }

    /// The app's built-in configuration (immuni-app-ios, Core Configuration.swift,
    /// ExposureDetectionConfiguration defaults: thresholds [50, 70], attenuation scores
    /// [0,0,3,3,3,3,3,3], days all 1, duration [0,0,0,0,5,5,5,5], transmission all 1, minimum 1).
    public static let published = ImmuniConfiguration(attenuationThresholds: [50, 70], attenuationBucketScores: [0, 0, 3, 3, 3, 3, 3, 3],
                                                      daysSinceLastExposureBucketScores: [1, 1, 1, 1, 1, 1, 1, 1],
                                                      durationBucketScores: [0, 0, 0, 0, 5, 5, 5, 5],
                                                      transmissionRiskBucketScores: [1, 1, 1, 1, 1, 1, 1, 1], minimumRiskScore: 1)

    public init(attenuationThresholds: [Int], attenuationBucketScores: [Int], daysSinceLastExposureBucketScores: [Int],
                durationBucketScores: [Int], transmissionRiskBucketScores: [Int], minimumRiskScore: Int) {
        self.attenuationThresholds = attenuationThresholds
        self.attenuationBucketScores = attenuationBucketScores
        self.daysSinceLastExposureBucketScores = daysSinceLastExposureBucketScores
        self.durationBucketScores = durationBucketScores
        self.transmissionRiskBucketScores = transmissionRiskBucketScores
        self.minimumRiskScore = minimumRiskScore
    }

    /// Reads the configuration itself or the app configuration that holds it.
    public static func decode(from data: Data, file: String) throws -> ImmuniConfiguration {
        struct Wrapped: Decodable { var exposure_configuration: ImmuniConfiguration }
        if let w = try? JSONDecoder().decode(Wrapped.self, from: data) { return w.exposure_configuration }
        return try RiskJSON.decodeParameters(ImmuniConfiguration.self, from: data, file: file)
    }

    public var v1: GAENv1Configuration {
        GAENv1Configuration(minimumRiskScore: minimumRiskScore, attenuationLevelValues: attenuationBucketScores,
                            daysSinceLastExposureLevelValues: daysSinceLastExposureBucketScores, durationLevelValues: durationBucketScores,
                            transmissionRiskLevelValues: transmissionRiskBucketScores, attenuationDurationThresholds: attenuationThresholds)
    }
}

public struct ImmuniResult: Sendable, Equatable, Codable {
    public var notified: Bool
    public var maximumRiskScore: Int
    public var exposures: [GAENv1Exposure]
}

public enum ImmuniRisk {
    public static func calculate(_ windows: [ExposureWindow], configuration c: ImmuniConfiguration, today: UTCDay) throws -> ImmuniResult {
        let v1 = c.v1
        try v1.validate()
        var exposures: [GAENv1Exposure] = []
        for (i, w) in windows.enumerated() where w.reportType != 5 {
            exposures.append(try GAENv1.score(w, index: i, configuration: v1, today: today))
        }
        let counted = exposures.filter { $0.counted && $0.riskScore > 0 }
        return ImmuniResult(notified: !counted.isEmpty, maximumRiskScore: counted.map(\.riskScore).max() ?? 0, exposures: exposures)
    }
}

/// SwissCovid's attenuation-threshold minutes in the registry.
public struct SwissCovidEngine: RiskEngine {
    public init() {}
    public let name = "swisscovid"
    public let title = "SwissCovid weighted minutes between two attenuation thresholds"
    public var publishedParameters: Data? { try? RiskJSON.encode(SwissCovidConfiguration.published, pretty: false) }

    struct Rule: RiskRule {
        let p: SwissCovidConfiguration
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let r = try SwissCovidRisk.calculate(integerWindows(entries), configuration: p)
            let day = r.days.max { $0.weightedMinutes < $1.weightedMinutes }
            return RiskAssessment(notified: r.exposed,
                                  numbers: [("weightedMinutes", day?.weightedMinutes ?? 0), ("minDurationForExposure", p.minDurationForExposure),
                                            ("minutesLow", Double(day?.minutesLow ?? 0)), ("minutesMedium", Double(day?.minutesMedium ?? 0))],
                                  detail: withDetail ? try RiskJSON.encode(r, pretty: false) : Data())
        }
    }

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?) throws -> any RiskRule {
        let p = try RiskJSON.decodeParameters(SwissCovidConfiguration.self, from: ConfigurationText.strippingCommentLines(parameters), file: source)
        try p.validate()
        return Rule(p: p)
    }
}

/// Immuni's framework v1 score with its own thresholds in the registry.
public struct ImmuniEngine: RiskEngine {
    public init() {}
    public let name = "immuni"
    public let title = "Immuni framework v1 risk score with the app's minimum risk score"
    public var publishedParameters: Data? { try? RiskJSON.encode(ImmuniConfiguration.published, pretty: false) }

    struct Rule: RiskRule {
        let p: ImmuniConfiguration
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let r = try ImmuniRisk.calculate(integerWindows(entries), configuration: p, today: today)
            let best = r.exposures.max { $0.riskScore < $1.riskScore }
            return RiskAssessment(notified: r.notified,
                                  numbers: [("maximumRiskScore", Double(best?.riskScore ?? 0)), ("minimumRiskScore", Double(p.minimumRiskScore)),
                                            ("attenuationDb", Double(best?.attenuationDb ?? 0)), ("bucketizedMinutes", best?.durationMinutes ?? 0)],
                                  unjudged: unjudgedTransmissionRisk(entries, p.v1),
                                  detail: withDetail ? try RiskJSON.encode(r, pretty: false) : Data())
        }
    }

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?) throws -> any RiskRule {
        let p = try ImmuniConfiguration.decode(from: ConfigurationText.strippingCommentLines(parameters), file: source)
        try p.v1.validate()
        return Rule(p: p)
    }
}
