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
/// counts when its v1 risk score reaches `minimum_risk_score` and is above 0. The app notified
/// only when the summary's maximum risk score reached `exposure_info_minimum_risk_score` (the
/// app configuration's own key beside `exposure_configuration`: below it the app did not even
/// ask for the exposures' details), so that is the notification threshold when the file gives
/// it. With the built-in values the score of an exposure is 3 x 5 = 15 (typical attenuation at
/// most 63 dB, more than 15 minutes) or 0.
public struct ImmuniConfiguration: Sendable, Equatable, Codable {
    public var attenuationThresholds: [Int]
    public var attenuationBucketScores: [Int]
    public var daysSinceLastExposureBucketScores: [Int]
    public var durationBucketScores: [Int]
    public var transmissionRiskBucketScores: [Int]
    public var minimumRiskScore: Int
    /// The app configuration's `exposure_info_minimum_risk_score`; absent when the file gives
    /// only the exposure configuration (then an exposure counted notifies).
    public var exposureInfoMinimumRiskScore: Int?
    /// Not in the app's files: how the replay rounds durations (GAENv1DurationRounding).
    public var durationRounding: GAENv1DurationRounding = .nearest

    enum CodingKeys: String, CodingKey {
        case attenuationThresholds = "attenuation_thresholds"
        case attenuationBucketScores = "attenuation_bucket_scores"
        case daysSinceLastExposureBucketScores = "days_since_last_exposure_bucket_scores"
        case durationBucketScores = "duration_bucket_scores"
        case transmissionRiskBucketScores = "transmission_risk_bucket_scores"
        case minimumRiskScore = "minimum_risk_score"
        case exposureInfoMinimumRiskScore = "exposure_info_minimum_risk_score"
    }

    /// The app's built-in configuration (immuni-app-ios, Core Configuration.swift,
    /// ExposureDetectionConfiguration defaults: thresholds [50, 70], attenuation scores
    /// [0,0,3,3,3,3,3,3], days all 1, duration [0,0,0,0,5,5,5,5], transmission all 1, minimum 1).
    public static let published = ImmuniConfiguration(attenuationThresholds: [50, 70], attenuationBucketScores: [0, 0, 3, 3, 3, 3, 3, 3],
                                                      daysSinceLastExposureBucketScores: [1, 1, 1, 1, 1, 1, 1, 1],
                                                      durationBucketScores: [0, 0, 0, 0, 5, 5, 5, 5],
                                                      transmissionRiskBucketScores: [1, 1, 1, 1, 1, 1, 1, 1], minimumRiskScore: 1)

    public init(attenuationThresholds: [Int], attenuationBucketScores: [Int], daysSinceLastExposureBucketScores: [Int],
                durationBucketScores: [Int], transmissionRiskBucketScores: [Int], minimumRiskScore: Int,
                exposureInfoMinimumRiskScore: Int? = nil) {
        self.attenuationThresholds = attenuationThresholds
        self.attenuationBucketScores = attenuationBucketScores
        self.daysSinceLastExposureBucketScores = daysSinceLastExposureBucketScores
        self.durationBucketScores = durationBucketScores
        self.transmissionRiskBucketScores = transmissionRiskBucketScores
        self.minimumRiskScore = minimumRiskScore
        self.exposureInfoMinimumRiskScore = exposureInfoMinimumRiskScore
    }

    static let blockKeys = ["attenuation_thresholds", "attenuation_bucket_scores", "days_since_last_exposure_bucket_scores",
                            "duration_bucket_scores", "transmission_risk_bucket_scores", "minimum_risk_score"]

    /// Reads the configuration itself or the app configuration that holds it, key by key, so
    /// that a misspelt key is named as such (Codable would report another key missing). In the
    /// exposure configuration every key must be known; the app configuration's other settings
    /// (URLs, notification periods, ...) are not read, but a key a couple of letters off
    /// `exposure_configuration` or `exposure_info_minimum_risk_score` is refused as a likely typo.
    public static func decode(from data: Data, file: String) throws -> ImmuniConfiguration {
        func bad(_ detail: String) -> RiskError { RiskError.malformedParameters(file: file, detail: detail) }
        let json: JSONValue
        do { json = try JSONValue.parse(data) } catch { throw bad("not valid JSON (\(error))") }
        guard case let .object(top) = json else { throw bad("top level: expected a JSON object") }
        func integer(_ v: JSONValue, _ path: String) throws -> Int {
            switch v {
            case let .int(i) where abs(i) < 1 << 31: return Int(i)
            case let .double(d) where d == d.rounded() && abs(d) < 1e9: return Int(d)
            default: throw bad("\(path): expected an integer, got \(v)")
            }
        }
        func typo(_ key: String, of known: [String]) -> String? {
            known.first { k in k != key && EditDistance.between(key, k) <= max(2, k.count / 8) }
        }
        let block: [String: JSONValue]
        let prefix: String
        var info: Int?
        if let ec = top["exposure_configuration"] {
            guard case let .object(b) = ec else { throw bad("exposure_configuration: expected a JSON object") }
            block = b; prefix = "exposure_configuration."
            for key in top.keys.sorted() where key != "exposure_info_minimum_risk_score" && key != "exposure_configuration" {
                if let k = typo(key, of: ["exposure_info_minimum_risk_score", "exposure_configuration"]) {
                    throw bad("\(key): unknown key (did you mean \(k)?)")
                }
            }
            if let v = top["exposure_info_minimum_risk_score"] { info = try integer(v, "exposure_info_minimum_risk_score") }
        } else {
            if let near = top.keys.sorted().first(where: { typo($0, of: ["exposure_configuration"]) != nil }) {
                throw bad("\(near): unknown key (did you mean exposure_configuration?)")
            }
            block = top; prefix = ""
            if let v = top["exposure_info_minimum_risk_score"] { info = try integer(v, "exposure_info_minimum_risk_score") }
        }
        for key in block.keys.sorted() where !blockKeys.contains(key) && !(prefix.isEmpty && key == "exposure_info_minimum_risk_score") {
            let hint = typo(key, of: blockKeys).map { " (did you mean \(prefix)\($0)?)" } ?? " (known: \(blockKeys.joined(separator: ", ")))"
            throw bad("\(prefix)\(key): unknown key\(hint)")
        }
        func list(_ key: String) throws -> [Int] {
            guard let v = block[key] else { throw bad("\(prefix)\(key): missing") }
            guard case let .array(a) = v else { throw bad("\(prefix)\(key): expected a JSON array of integers, got \(v)") }
            return try a.enumerated().map { try integer($1, "\(prefix)\(key)[\($0)]") }
        }
        guard let minimum = block["minimum_risk_score"] else { throw bad("\(prefix)minimum_risk_score: missing") }
        return ImmuniConfiguration(attenuationThresholds: try list("attenuation_thresholds"), attenuationBucketScores: try list("attenuation_bucket_scores"),
                                   daysSinceLastExposureBucketScores: try list("days_since_last_exposure_bucket_scores"),
                                   durationBucketScores: try list("duration_bucket_scores"),
                                   transmissionRiskBucketScores: try list("transmission_risk_bucket_scores"),
                                   minimumRiskScore: try integer(minimum, "\(prefix)minimum_risk_score"), exposureInfoMinimumRiskScore: info)
    }

    public var v1: GAENv1Configuration {
        GAENv1Configuration(minimumRiskScore: minimumRiskScore, attenuationLevelValues: attenuationBucketScores,
                            daysSinceLastExposureLevelValues: daysSinceLastExposureBucketScores, durationLevelValues: durationBucketScores,
                            transmissionRiskLevelValues: transmissionRiskBucketScores, attenuationDurationThresholds: attenuationThresholds)
    }

    /// The score an exposure must reach to notify: minimum_risk_score, and
    /// exposure_info_minimum_risk_score when the file gives it; never 0.
    public var notificationThreshold: Int { max(minimumRiskScore, exposureInfoMinimumRiskScore ?? 0, 1) }
}

/// Levenshtein distance, to name the key a misspelt one was probably meant to be.
enum EditDistance {
    static func between(_ a: String, _ b: String) -> Int {
        let x = Array(a.utf8), y = Array(b.utf8)
        var row = Array(0...y.count)
        for i in 1...max(x.count, 1) where !x.isEmpty {
            var prev = row[0]
            row[0] = i
            for j in 1...max(y.count, 1) where !y.isEmpty {
                let cur = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (x[i - 1] == y[j - 1] ? 0 : 1))
                prev = cur
            }
        }
        return x.isEmpty ? y.count : row[y.count]
    }
}

public struct ImmuniResult: Sendable, Equatable, Codable {
    public var notified: Bool
    public var maximumRiskScore: Int
    /// The score that notifies (ImmuniConfiguration.notificationThreshold).
    public var notificationThreshold: Int
    public var exposures: [GAENv1Exposure]
}

public enum ImmuniRisk {
    public static func calculate(_ windows: [ExposureWindow], configuration c: ImmuniConfiguration, today: UTCDay) throws -> ImmuniResult {
        let v1 = c.v1
        try v1.validate()
        var exposures: [GAENv1Exposure] = []
        for (i, w) in windows.enumerated() where w.reportType != 5 {
            exposures.append(try GAENv1.score(w, index: i, configuration: v1, today: today, durationRounding: c.durationRounding))
        }
        let counted = exposures.filter { $0.counted && $0.riskScore > 0 }
        let best = counted.map(\.riskScore).max() ?? 0
        return ImmuniResult(notified: best >= c.notificationThreshold, maximumRiskScore: best,
                            notificationThreshold: c.notificationThreshold, exposures: exposures)
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

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        let (p, warnings) = try ConfigurationText.decodeJSON(SwissCovidConfiguration.self, parameters, known: ConfigurationText.swissCovidKeys,
                                                             file: source, allowUnknownFields: options.allowUnknownFields)
        try p.validate()
        return (Rule(p: p), warnings)
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
            // A contact never heard has no attenuation: NaN, printed as NA (not 0 dB).
            return RiskAssessment(notified: r.notified,
                                  numbers: [("maximumRiskScore", Double(best?.riskScore ?? 0)), ("minimumRiskScore", Double(p.minimumRiskScore)),
                                            ("notificationThreshold", Double(p.notificationThreshold)),
                                            ("attenuationDb", best.map { Double($0.attenuationDb) } ?? .nan), ("bucketizedMinutes", best?.durationMinutes ?? 0)],
                                  unjudged: unjudgedTransmissionRisk(entries, p.v1),
                                  detail: withDetail ? try RiskJSON.encode(r, pretty: false) : Data())
        }
    }

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        var p = try ImmuniConfiguration.decode(from: ConfigurationText.strippingCommentLines(parameters), file: source)
        try p.v1.validate()
        p.durationRounding = options.durationRounding
        let threshold = p.exposureInfoMinimumRiskScore != nil ? "the notification threshold (exposure_info_minimum_risk_score)" : "minimum_risk_score"
        return (Rule(p: p), ConfigurationReach.warnings(v1: p.v1, threshold: p.notificationThreshold, thresholdName: threshold))
    }
}
