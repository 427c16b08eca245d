#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// The apps' published configurations, the defaults of `gaenctl trial replay` (and of `risk
/// swisscovid`/`risk immuni` without --configuration). Values only (facts), with their sources:
/// - cwa (current): cwa-app-android, Corona-Warn-App/src/main/assets/default_app_config_android.bin
///   at commit d98f9c20c595ca5dc877f87f032b47d8b8175a79 (v3.2.1), its riskCalculationParameters
///   as protobuf JSON; the same as Tests/RiskEnginesTests/Fixtures/risk/cwa/default-app-config-risk-parameters.json.
/// - cwa-v1 (mid-2020): the CWA v1 exposure configuration (minimumRiskScore 11, attenuation
///   level values 0,1,1,1,1,1,1,1, days 5 x 8, duration 0,0,0,1,1,1,1,1, TRL 1...8, thresholds
///   55/63, bucket weights 1, 0.5, 0, normalization divisor 25, 15 minutes): the cwa-server's
///   launch values of 2020-06-15 (`dated`, below), as
///   Tests/RiskEnginesTests/Fixtures/risk/cwa-v1/configuration.json gives it.
/// - cwa and cwa-v1 by date: `dated` and `published(_:on:generation:)`, below.
/// - nhs (current): ukhsa-collaboration/covid-19-app-ios-ag-public ExposureConfigurationHandler
///   at 8d7a64bc5e10c0dc89889bad3558bcf648f97378 (Tests/RiskEnginesTests/Fixtures/risk/nhs/exposure-configuration.json).
/// - swisscovid, immuni: SwissCovidConfiguration.published, ImmuniConfiguration.published.
public enum PublishedRiskConfigurations {
    public static let cwa = #"""
{
 "minutesAtAttenuationWeights": [
  {
   "attenuationRange": {
    "max": 63.0,
    "maxExclusive": true
   },
   "weight": 0.8
  },
  {
   "attenuationRange": {
    "min": 63.0,
    "max": 73.0,
    "maxExclusive": true
   },
   "weight": 1.0
  },
  {
   "attenuationRange": {
    "min": 73.0,
    "max": 79.0,
    "maxExclusive": true
   },
   "weight": 0.1
  }
 ],
 "normalizedTimePerEWToRiskLevelMapping": [
  {
   "normalizedTimeRange": {
    "max": 9.0,
    "maxExclusive": true
   },
   "riskLevel": 1
  },
  {
   "normalizedTimeRange": {
    "min": 9.0,
    "max": 9999.0
   },
   "riskLevel": 2
  }
 ],
 "normalizedTimePerDayToRiskLevelMapping": [
  {
   "normalizedTimeRange": {
    "min": 5.0,
    "max": 9.0,
    "maxExclusive": true
   },
   "riskLevel": 1
  },
  {
   "normalizedTimeRange": {
    "min": 9.0,
    "max": 9999.0
   },
   "riskLevel": 2
  }
 ],
 "trlEncoding": {
  "infectiousnessOffsetStandard": 1,
  "infectiousnessOffsetHigh": 2,
  "reportTypeOffsetSelfReport": 2,
  "reportTypeOffsetConfirmedClinicalDiagnosis": 4,
  "reportTypeOffsetConfirmedTest": 6
 },
 "transmissionRiskValueMapping": [
  {
   "transmissionRiskLevel": 1
  },
  {
   "transmissionRiskLevel": 2
  },
  {
   "transmissionRiskLevel": 3,
   "transmissionRiskValue": 0.6
  },
  {
   "transmissionRiskLevel": 4,
   "transmissionRiskValue": 0.8
  },
  {
   "transmissionRiskLevel": 5,
   "transmissionRiskValue": 1.0
  },
  {
   "transmissionRiskLevel": 6,
   "transmissionRiskValue": 1.2
  },
  {
   "transmissionRiskLevel": 7,
   "transmissionRiskValue": 1.4
  },
  {
   "transmissionRiskLevel": 8,
   "transmissionRiskValue": 1.6
  }
 ],
 "maxEncounterAgeInDays": 10
}
"""#

    public static let cwaV1 = #"""
{"minimumRiskScore": 11, "attenuationLevelValues": [0, 1, 1, 1, 1, 1, 1, 1], "daysSinceLastExposureLevelValues": [5, 5, 5, 5, 5, 5, 5, 5], "durationLevelValues": [0, 0, 0, 1, 1, 1, 1, 1], "transmissionRiskLevelValues": [1, 2, 3, 4, 5, 6, 7, 8], "attenuationDurationThresholds": [55, 63], "attenuationDurationWeights": [1.0, 0.5, 0.0], "defaultBucketOffset": 0, "riskScoreNormalizationDivisor": 25, "increasedRiskMinutes": 15}
"""#

    public static let nhs = #"""
{
 "exposureNotification": {
  "minimumRiskScore": 11,
  "attenuationDurationThresholds": [
   55,
   63
  ],
  "attenuationLevelValues": [
   0,
   1,
   1,
   1,
   1,
   1,
   1,
   1
  ],
  "daysSinceLastExposureLevelValues": [
   5,
   5,
   5,
   5,
   5,
   5,
   5,
   5
  ],
  "durationLevelValues": [
   0,
   0,
   0,
   1,
   1,
   1,
   1,
   1
  ],
  "transmissionRiskLevelValues": [
   1,
   2,
   3,
   4,
   5,
   6,
   7,
   8
  ],
  "attenuationWeight": 50.0,
  "daysSinceLastExposureWeight": 20,
  "durationWeight": 50.0,
  "transmissionRiskWeight": 50.0
 },
 "riskCalculation": {
  "durationBucketWeights": [
   1.0,
   0.5,
   0.0
  ],
  "riskThreshold": 20.0
 },
 "riskScore": {
  "sampleResolution": 1.0,
  "expectedDistance": 0.1,
  "minimumDistance": 1.0,
  "rssiParameters": {
   "weightCoefficient": 0.1270547531082051,
   "intercept": 4.2309333657856945,
   "covariance": 0.4947614361027773
  },
  "powerLossParameters": {
   "wavelength": 0.125,
   "pathLossFactor": 20.0,
   "refDeviceLoss": 0.0
  },
  "observationType": "log",
  "initialData": {
   "mean": 2.0,
   "covariance": 10.0
  },
  "smootherParameters": {
   "alpha": 1.0,
   "beta": 0.0,
   "kappa": 0.0
  }
 },
 "v2RiskCalculation": {
  "daysSinceOnsetToInfectiousness": [
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   1,
   1,
   1,
   2,
   2,
   2,
   2,
   2,
   2,
   1,
   1,
   1,
   1,
   1,
   1,
   0,
   0,
   0,
   0,
   0
  ],
  "infectiousnessWeights": [
   0.0,
   0.4,
   1.0
  ],
  "reportTypeWhenMissing": 1,
  "riskThreshold": 120
 }
}
"""#
}

/// The configurations the Corona-Warn-App's server published, by date: the engine inputs of each
/// state of the served files in the cwa-server repository's history, one entry per commit that
/// changed a value the engine reads (commits that changed only comments, names or values no
/// engine reads are not entries). Each entry is in force from its commit's date on the main
/// branch until the next entry of its line; that is the date the values were committed, not a
/// deployment date, which the repository does not record. The files as published are test
/// fixtures (Tests/RiskEnginesTests/Fixtures/published/cwa-server/<commit>/<path>) and each
/// entry is checked against them.
extension PublishedRiskConfigurations {
    public static let cwaServerRepository = "https://github.com/corona-warn-app/cwa-server"

    public enum DatedRule: String, Sendable, CaseIterable, Codable {
        case cwa, cwaV1 = "cwa-v1"
    }

    /// Where an entry's values were read.
    public struct Source: Sendable, Equatable, Codable {
        public var repository: String
        public var commit: String
        /// The commit's date on the main branch (committer date, YYYY-MM-DD).
        public var commitDate: String
        public var paths: [String]

        init(commit: String, commitDate: String, paths: [String]) {
            self.repository = PublishedRiskConfigurations.cwaServerRepository
            self.commit = commit; self.commitDate = commitDate; self.paths = paths
        }
    }

    /// One published state: the engine's input (the JSON `gaenctl risk` reads), in force from
    /// `from` until `until` (inclusive; nil: no later change in the repository).
    public struct Dated: Sendable, Equatable, Codable {
        public var rule: DatedRule
        /// cwa only: the calculation of the apps that read the file (1.9 for app_config, read by
        /// CWA 1.9-1.14; 1.15 for app_config_android/ios, read by CWA 1.15 and later).
        public var generation: CWAGeneration?
        public var from: String
        public var until: String?
        public var source: Source
        public var note: String
        public var json: String

        init(rule: DatedRule, generation: CWAGeneration?, from: String, source: Source, note: String, json: String) {
            self.rule = rule; self.generation = generation; self.from = from; self.until = nil
            self.source = source; self.note = note; self.json = json
        }

        /// The apps that read it, as people name them.
        public var apps: String {
            switch generation {
            case nil: return "CWA on ENF v1 (app_config)"
            case .v1_9?: return "CWA 1.9-1.14 (app_config)"
            case .v1_15?, .v2_19?: return "CWA 1.15 and later (app_config_android/ios)"
            }
        }

        /// One line for people: the rule, the range and the source commit.
        public var summary: String {
            "\(rule.rawValue) \(from)..\(until ?? "") for \(apps): cwa-server \(source.commit.prefix(9)) (\(source.commitDate))"
        }

        public func cwaParameters() throws -> CWAParameters {
            try CWAParameters.decode(from: Data(json.utf8), file: "published cwa configuration of \(from)")
        }

        public func cwaV1Configuration() throws -> CWAv1Configuration {
            let c = try RiskJSON.decodeParameters(CWAv1Configuration.self, from: Data(json.utf8), file: "published cwa-v1 configuration of \(from)")
            try c.validate()
            return c
        }
    }

    public struct DateError: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Every entry, each line in date order, with `until` filled in.
    public static let dated: [Dated] = {
        var all = entries
        for i in all.indices {
            let next = all[(i + 1)...].first { $0.rule == all[i].rule && $0.generation == all[i].generation }
            if let next, let d = UTCDay(isoDate: next.from) { all[i].until = d.advanced(by: -1).isoDate }
        }
        return all
    }()

    /// The entry in force on `day`. For cwa, `generation` (from the app version) picks the file:
    /// 1.9 the app_config one, 1.15 and later the app_config_android/ios one; without it, the
    /// newest apps' file published by that day. A day before the first publication is refused,
    /// naming the first date.
    public static func published(_ rule: DatedRule, on day: UTCDay, generation: CWAGeneration? = nil) throws -> Dated {
        var line = dated.filter { $0.rule == rule }
        if rule == .cwa, let generation {
            let wanted: CWAGeneration = generation == .v1_9 ? .v1_9 : .v1_15
            line = line.filter { $0.generation == wanted }
        }
        guard let first = line.map(\.from).min() else {
            throw DateError(description: "\(rule.rawValue): no published configuration")
        }
        let inForce = line.filter { (UTCDay(isoDate: $0.from) ?? day) <= day }
        guard !inForce.isEmpty else {
            let apps = line.first.map { rule == .cwa ? " for \($0.apps)" : "" } ?? ""
            throw DateError(description: "\(rule.rawValue): \(day.isoDate) is before the first published configuration\(apps), \(first) (cwa-server commit \(line.first!.source.commit.prefix(9)))")
        }
        // The newest line's latest entry: the 1.15 file from its first day on.
        let newestGeneration = inForce.compactMap(\.generation).max { $0.rank < $1.rank }
        return inForce.filter { $0.generation == newestGeneration }.max { $0.from < $1.from }!
    }

    static let entries: [Dated] = [
        Dated(rule: .cwaV1, generation: nil, from: "2020-06-15",
              source: Source(commit: "d6c0ad58f6473bd55af9a0cbe2c0cc8db3914af6", commitDate: "2020-06-15",
                             paths: ["services/distribution/src/main/resources/master-config/exposure-config.yaml",
                                     "services/distribution/src/main/resources/master-config/attenuation-duration.yaml",
                                     "services/distribution/src/main/resources/master-config/risk-score-classification.yaml",
                                     "services/distribution/src/main/resources/master-config/app-config.yaml"]),
              note: "#576, the launch values: score = attenuation (0 above 73 dB, else 1) x days 5 x duration (0 under 10 min, else 1) x transmission risk level; risk encounter from 11; weights 1/0.5/0 at 55/63 dB; divisor 25; increased risk from 15 (the HIGH class). The HIGH class's max went from 72 to 9999 on 2020-09-11 (3ef4ecfe1, #758), which no engine input reads and 72 is already the highest weighted time these values allow (45 minutes x 40 / 25).",
              json: #"{"minimumRiskScore": 11, "attenuationLevelValues": [0, 1, 1, 1, 1, 1, 1, 1], "daysSinceLastExposureLevelValues": [5, 5, 5, 5, 5, 5, 5, 5], "durationLevelValues": [0, 0, 0, 1, 1, 1, 1, 1], "transmissionRiskLevelValues": [1, 2, 3, 4, 5, 6, 7, 8], "attenuationDurationThresholds": [55, 63], "attenuationDurationWeights": [1.0, 0.5, 0.0], "defaultBucketOffset": 0, "riskScoreNormalizationDivisor": 25, "increasedRiskMinutes": 15}"#),
        Dated(rule: .cwaV1, generation: nil, from: "2020-09-14",
              source: Source(commit: "8c7f6ebf49f723f56b84ff22a9dc443e013a988f", commitDate: "2020-09-14",
                             paths: ["services/distribution/src/main/resources/master-config/exposure-config.yaml",
                                     "services/distribution/src/main/resources/master-config/attenuation-duration.yaml",
                                     "services/distribution/src/main/resources/master-config/risk-score-classification.yaml",
                                     "services/distribution/src/main/resources/master-config/app-config.yaml"]),
              note: "#765: transmission risk levels 1 and 2 score 0. At minimum risk score 11 an exposure at those levels scored 5 or 10 before, never a risk encounter, so no result of the engine changes.",
              json: #"{"minimumRiskScore": 11, "attenuationLevelValues": [0, 1, 1, 1, 1, 1, 1, 1], "daysSinceLastExposureLevelValues": [5, 5, 5, 5, 5, 5, 5, 5], "durationLevelValues": [0, 0, 0, 1, 1, 1, 1, 1], "transmissionRiskLevelValues": [0, 0, 3, 4, 5, 6, 7, 8], "attenuationDurationThresholds": [55, 63], "attenuationDurationWeights": [1.0, 0.5, 0.0], "defaultBucketOffset": 0, "riskScoreNormalizationDivisor": 25, "increasedRiskMinutes": 15}"#),
        Dated(rule: .cwaV1, generation: nil, from: "2020-09-15",
              source: Source(commit: "f3d66840ef59e2ced10fb9b42f08a8938e76075a", commitDate: "2020-09-15",
                             paths: ["services/distribution/src/main/resources/master-config/exposure-config.yaml",
                                     "services/distribution/src/main/resources/master-config/attenuation-duration.yaml",
                                     "services/distribution/src/main/resources/master-config/risk-score-classification.yaml",
                                     "services/distribution/src/main/resources/master-config/app-config.yaml"]),
              note: "#775/#776: attenuation level values 2 (was 1) and normalization divisor 50 (was 25): every score doubles and the divisor with it, so weightedMinutes and every verdict stay as on 2020-09-14; maximumRiskScore doubles.",
              json: #"{"minimumRiskScore": 11, "attenuationLevelValues": [0, 2, 2, 2, 2, 2, 2, 2], "daysSinceLastExposureLevelValues": [5, 5, 5, 5, 5, 5, 5, 5], "durationLevelValues": [0, 0, 0, 1, 1, 1, 1, 1], "transmissionRiskLevelValues": [0, 0, 3, 4, 5, 6, 7, 8], "attenuationDurationThresholds": [55, 63], "attenuationDurationWeights": [1.0, 0.5, 0.0], "defaultBucketOffset": 0, "riskScoreNormalizationDivisor": 50, "increasedRiskMinutes": 15}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2020-11-11",
              source: Source(commit: "4f4da45c99ad311363b42b16d6950152eb8f65c6", commitDate: "2020-11-11",
                             paths: ["services/distribution/src/main/resources/master-config/v2/risk-calculation-parameters.yaml"]),
              note: "#973, first ENF v2 parameters (app_config, read by CWA 1.9-1.14): the minutes-at-attenuation filter is written as two list items, one with only attenuationRange [0, 73) and one with only dropIfMinutesInRange [0, 10); read as protobuf reads them (an absent range is [0, 0]), the second drops every window without 10 minutes at 0 dB, so no window counts. Fixed 2020-11-23.",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":73,"maxExclusive":true}},{"dropIfMinutesInRange":{"min":0,"max":10,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":0,"infectiousnessOffsetHigh":4,"reportTypeOffsetRecursive":4,"reportTypeOffsetSelfReport":3,"reportTypeOffsetConfirmedClinicalDiagnosis":2,"reportTypeOffsetConfirmedTest":1}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2020-11-23",
              source: Source(commit: "b64c1df1d6ae56c9cec51dd1811723f0314588b4", commitDate: "2020-11-23",
                             paths: ["services/distribution/src/main/resources/master-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1004: one filter, drop a window with under 10 minutes below 73 dB.",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":73,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":10,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":0,"infectiousnessOffsetHigh":4,"reportTypeOffsetRecursive":4,"reportTypeOffsetSelfReport":3,"reportTypeOffsetConfirmedClinicalDiagnosis":2,"reportTypeOffsetConfirmedTest":1}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2020-11-30",
              source: Source(commit: "351aa2244d06e54a36a354aba8d44d59130c4c38", commitDate: "2020-11-30",
                             paths: ["services/distribution/src/main/resources/master-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1023 (1.7 merged): the TRL encoding the app still uses (standard 1, high 2; confirmed test 6, clinical 4, self report 2, recursive 0).",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":73,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":10,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2021-02-03",
              source: Source(commit: "b7748e3c09b7d80953e9df43382687d96bfeb070", commitDate: "2021-02-03",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1175: the high day range's upper bound 9999 -> 99999.",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":73,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":10,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2021-02-22",
              source: Source(commit: "f5b3490b5ecca692661e26a98b8b7af9ed149153", commitDate: "2021-02-22",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1213: a window is dropped with under 5 minutes below 73 dB (was 10).",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":73,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":5,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2021-03-18",
              source: Source(commit: "e88332397d4010c3854bd91de5b1a60b52658c58", commitDate: "2021-03-18",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1262: filter up to 79 dB; weights 0.8 below 63, 1.0 63-73, 0.1 73-79 dB; high from 13.",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":79,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":5,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":63,"maxExclusive":true},"weight":0.8},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":73,"max":79,"maxExclusive":true},"weight":0.1}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_9, from: "2022-03-09",
              source: Source(commit: "6236ee798924fd89f1a826a4dd148d6b070fa8d7", commitDate: "2022-03-09",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml"]),
              note: "#1749: maxEncounterAgeInDays 10 (absent before: the app's 14).",
              json: #"{"minutesAtAttenuationFilters":[{"attenuationRange":{"min":0,"max":79,"maxExclusive":true},"dropIfMinutesInRange":{"min":0,"max":5,"maxExclusive":true}}],"trlFilters":[{"dropIfTrlInRange":{"min":1,"max":2}}],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":63,"maxExclusive":true},"weight":0.8},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":73,"max":79,"maxExclusive":true},"weight":0.1}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0.2,"maxEncounterAgeInDays":10,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_15, from: "2021-03-01",
              source: Source(commit: "2d8ceaec87f10ce1d5521cd0fd600b2d48a0be60", commitDate: "2021-03-01",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters-1.15.yaml"]),
              note: "#1231, first parameters for CWA 1.15 and later (app_config_android/ios): no filters; weights 1/0.5/0.3 below 55/63/73 dB; transmissionRiskValueMapping; a day is low from 5, high from 15.",
              json: #"{"minutesAtAttenuationFilters":[],"trlFilters":[],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":55,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":55,"max":63,"maxExclusive":true},"weight":0.5},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":0.3}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":5,"max":15,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":15,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0,"transmissionRiskValueMapping":[{"transmissionRiskLevel":1,"transmissionRiskValue":0},{"transmissionRiskLevel":2,"transmissionRiskValue":0},{"transmissionRiskLevel":3,"transmissionRiskValue":0.6},{"transmissionRiskLevel":4,"transmissionRiskValue":0.8},{"transmissionRiskLevel":5,"transmissionRiskValue":1},{"transmissionRiskLevel":6,"transmissionRiskValue":1.2},{"transmissionRiskLevel":7,"transmissionRiskValue":1.4},{"transmissionRiskLevel":8,"transmissionRiskValue":1.6}],"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_15, from: "2021-03-18",
              source: Source(commit: "e88332397d4010c3854bd91de5b1a60b52658c58", commitDate: "2021-03-18",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters-1.15.yaml"]),
              note: "#1262: weights 0.8 below 63, 1.0 63-73, 0.1 73-79 dB; high from 13 (day low from 5). The value mapping moved to the persistence module's trl-value-mapping-1.15.yaml on 2021-03-25 (6a471dbf2) with the same values.",
              json: #"{"minutesAtAttenuationFilters":[],"trlFilters":[],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":63,"maxExclusive":true},"weight":0.8},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":73,"max":79,"maxExclusive":true},"weight":0.1}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":5,"max":13,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":13,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0,"transmissionRiskValueMapping":[{"transmissionRiskLevel":1,"transmissionRiskValue":0},{"transmissionRiskLevel":2,"transmissionRiskValue":0},{"transmissionRiskLevel":3,"transmissionRiskValue":0.6},{"transmissionRiskLevel":4,"transmissionRiskValue":0.8},{"transmissionRiskLevel":5,"transmissionRiskValue":1},{"transmissionRiskLevel":6,"transmissionRiskValue":1.2},{"transmissionRiskLevel":7,"transmissionRiskValue":1.4},{"transmissionRiskLevel":8,"transmissionRiskValue":1.6}],"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6}}"#),
        Dated(rule: .cwa, generation: .v1_15, from: "2021-04-15",
              source: Source(commit: "9e3b0990fc8e82929c0c7e060a4d8a8e5ebaf326", commitDate: "2021-04-15",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters-1.15.yaml",
                                     "common/persistence/src/main/resources/trl-value-mapping-1.15.yaml"]),
              note: "#1338 (2.0 merged): high from 9 (day low from 5).",
              json: #"{"minutesAtAttenuationFilters":[],"trlFilters":[],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":63,"maxExclusive":true},"weight":0.8},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":73,"max":79,"maxExclusive":true},"weight":0.1}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":9,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":9,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":5,"max":9,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":9,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6},"transmissionRiskValueMapping":[{"transmissionRiskLevel":1,"transmissionRiskValue":0},{"transmissionRiskLevel":2,"transmissionRiskValue":0},{"transmissionRiskLevel":3,"transmissionRiskValue":0.6},{"transmissionRiskLevel":4,"transmissionRiskValue":0.8},{"transmissionRiskLevel":5,"transmissionRiskValue":1},{"transmissionRiskLevel":6,"transmissionRiskValue":1.2},{"transmissionRiskLevel":7,"transmissionRiskValue":1.4},{"transmissionRiskLevel":8,"transmissionRiskValue":1.6}]}"#),
        Dated(rule: .cwa, generation: .v1_15, from: "2022-03-10",
              source: Source(commit: "24abfe37166d88d22ef0cb4764e90810288d8a50", commitDate: "2022-03-10",
                             paths: ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters-1.15.yaml",
                                     "common/persistence/src/main/resources/trl-value-mapping-1.15.yaml"]),
              note: "#1759: maxEncounterAgeInDays 10; the values of the app's v3.2.1 built-in default (PublishedRiskConfigurations.cwa). From 2022-03-29 (ada608f80) the file reads it from the environment, default 10.",
              json: #"{"minutesAtAttenuationFilters":[],"trlFilters":[],"minutesAtAttenuationWeights":[{"attenuationRange":{"min":0,"max":63,"maxExclusive":true},"weight":0.8},{"attenuationRange":{"min":63,"max":73,"maxExclusive":true},"weight":1.0},{"attenuationRange":{"min":73,"max":79,"maxExclusive":true},"weight":0.1}],"normalizedTimePerEWToRiskLevelMapping":[{"normalizedTimeRange":{"min":0,"max":9,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":9,"max":9999},"riskLevel":2}],"normalizedTimePerDayToRiskLevelMapping":[{"normalizedTimeRange":{"min":5,"max":9,"maxExclusive":true},"riskLevel":1},{"normalizedTimeRange":{"min":9,"max":99999},"riskLevel":2}],"transmissionRiskLevelMultiplier":0,"maxEncounterAgeInDays":10,"trlEncoding":{"infectiousnessOffsetStandard":1,"infectiousnessOffsetHigh":2,"reportTypeOffsetRecursive":0,"reportTypeOffsetSelfReport":2,"reportTypeOffsetConfirmedClinicalDiagnosis":4,"reportTypeOffsetConfirmedTest":6},"transmissionRiskValueMapping":[{"transmissionRiskLevel":1,"transmissionRiskValue":0},{"transmissionRiskLevel":2,"transmissionRiskValue":0},{"transmissionRiskLevel":3,"transmissionRiskValue":0.6},{"transmissionRiskLevel":4,"transmissionRiskValue":0.8},{"transmissionRiskLevel":5,"transmissionRiskValue":1},{"transmissionRiskLevel":6,"transmissionRiskValue":1.2},{"transmissionRiskLevel":7,"transmissionRiskValue":1.4},{"transmissionRiskLevel":8,"transmissionRiskValue":1.6}]}"#),
    ]
}

extension CWAGeneration {
    /// Order of introduction (1.9 < 1.15 < 2.19).
    var rank: Int { CWAGeneration.allCases.firstIndex(of: self)! }
}
