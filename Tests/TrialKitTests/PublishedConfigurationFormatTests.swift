import ENProtocol
import Foundation
import RiskEngines
import Testing
@testable import TrialKit
import TrialFormats

/// Configurations read as the apps served them, or refused naming what is wrong (issue 32):
/// the CWA v1 app configuration in protobuf text format in every spelling the apps served,
/// unknown fields, configurations that can notify no one, Immuni's keys and its notification
/// threshold, the v1 duration rounding, and numbers written without binary noise.
@Suite struct PublishedConfigurationFormatTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/trial-examples").standardized

    static func published() throws -> CWAv1Configuration {
        try RiskJSON.decodeParameters(CWAv1Configuration.self, from: Data(PublishedRiskConfigurations.cwaV1.utf8), file: "published")
    }

    static func decode(_ text: String, allow: Bool = false) throws -> (CWAv1Configuration, [String]) {
        var policy = UnknownFieldPolicy(allow: allow)
        let c = try ConfigurationText.cwaV1(Data(text.utf8), file: "c.textproto", policy: &policy)
        return (c, policy.warnings)
    }

    /// The Leith-layout file (comment header, LOWEST..., camelCase, zero fields left out) is the
    /// launch configuration, value for value.
    @Test func leithLayoutReadsAsTheLaunchConfiguration() throws {
        let text = try String(contentsOf: Self.examples.appendingPathComponent("cwa-leith-2020-06.textproto"), encoding: .utf8)
        let (c, warnings) = try Self.decode(text)
        #expect(warnings.isEmpty)
        // The fixture's HIGH class ends at 72, the JSON's 9999: no engine input, so compare the rest.
        #expect(c == (try Self.published()))
        #expect(c.v1.transmissionRiskLevelValues == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(ConfigurationReach.warnings(cwaV1: c).isEmpty)
        // And the snake_case, RISK_LEVEL_ spelling of the same values reads the same.
        let snake = try String(contentsOf: Self.examples.appendingPathComponent("cwa-v1-app-config.textproto"), encoding: .utf8)
        #expect(try Self.decode(snake).0 == c)
    }

    static let minimal = """
        # a comment line
        minRiskScore: 11
        riskScoreClasses { riskClasses { label: "HIGH" min: 15 max: 72 } }
        exposureConfig {
          transmission { appDefined_1: LOW appDefined_8: HIGHEST }
          duration { gt30Min: LOWEST }
          daysSinceLastExposure { ge0Lt2Days: RISK_LEVEL_MEDIUM_HIGH }
          attenuation { le_10_dbm: 1 }
        }
        attenuationDuration { thresholds { lower: 55 upper: 63 } weights { low: 1 mid: 0.5 } riskScoreNormalizationDivisor: 25 }

        """

    @Test func everySpellingOfAFieldAndAnEnumIsOneField() throws {
        let (c, _) = try Self.decode(Self.minimal)
        #expect(c.v1.transmissionRiskLevelValues == [2, 0, 0, 0, 0, 0, 0, 8])
        #expect(c.v1.durationLevelValues == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(c.v1.daysSinceLastExposureLevelValues == [0, 0, 0, 0, 0, 0, 0, 5])
        #expect(c.v1.attenuationLevelValues == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(c.attenuationDurationWeights == [1, 0.5, 0])
        #expect(c.increasedRiskMinutes == 15)
        // Fields of the app configuration that hold no risk parameter are known, not read.
        let withVersion = Self.minimal + "appVersion { ios { latest { major: 1 minor: 0 patch: 0 } } }\nsupportedCountries: \"DE\"\n"
        #expect(try Self.decode(withVersion).1.isEmpty)
    }

    @Test func unknownFieldIsAnErrorNamingItAndItsLineOrAWarning() throws {
        // Line 5 of the file: inside exposureConfig.transmission.
        let text = Self.minimal.replacingOccurrences(of: "appDefined_1: LOW ", with: "appDefined_1: LOW\n    totallyUnknown: 5\n   ")
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false)[5].contains("totallyUnknown"))
        do {
            _ = try Self.decode(text)
            Issue.record("an unknown field was accepted")
        } catch {
            let s = "\(error)"
            #expect(s.contains("line 6: unknown field 'totallyUnknown' in exposureConfig.transmission"), "\(s)")
            #expect(s.contains("--allow-unknown-fields"), "\(s)")
        }
        let (c, warnings) = try Self.decode(text, allow: true)
        #expect(c.v1.transmissionRiskLevelValues.first == 2)
        #expect(warnings.count == 1 && warnings[0].contains("totallyUnknown") && warnings[0].contains("line 6"), "\(warnings)")
        // A misspelt top-level field too (protobuf would reject it, not read it as 0).
        #expect(throws: RiskError.self) { try Self.decode(Self.minimal.replacingOccurrences(of: "minRiskScore", with: "minRiskScor")) }
        // A field given twice that is not repeated.
        do {
            _ = try Self.decode(Self.minimal.replacingOccurrences(of: "gt30Min: LOWEST", with: "gt30Min: LOWEST gt_30_min: HIGH"))
            Issue.record("a field given twice was accepted")
        } catch { #expect("\(error)".contains("given again"), "\(error)") }
    }

    @Test func aConfigurationThatCanNotifyNoOneIsReported() throws {
        // Every transmission value 0: every score 0 (the symptom of camelCase fields left out).
        let zero = Self.minimal.replacingOccurrences(of: "appDefined_1: LOW appDefined_8: HIGHEST", with: "")
        let (c, _) = try Self.decode(zero)
        #expect(ConfigurationReach.maximumScore(c.v1) == 0)
        let w = ConfigurationReach.warnings(cwaV1: c)
        #expect(w.count == 1 && w[0].contains("notify no one") && w[0].contains("transmission risk 0"), "\(w)")
        // A threshold above the best achievable score (8 x 1 x 5 x 1 = 40).
        let (high, _) = try Self.decode(Self.minimal.replacingOccurrences(of: "minRiskScore: 11", with: "minRiskScore: 41"))
        #expect(ConfigurationReach.warnings(cwaV1: high).first?.contains("40 ") == true)
        let (reachable, _) = try Self.decode(Self.minimal.replacingOccurrences(of: "minRiskScore: 11", with: "minRiskScore: 40"))
        #expect(ConfigurationReach.warnings(cwaV1: reachable).isEmpty)
        // Weighted minutes that can never reach 15: (30 x (0.1 + 0)) x 40 / 100 = 1.2.
        let (weak, _) = try Self.decode(Self.minimal.replacingOccurrences(of: "low: 1 mid: 0.5", with: "low: 0.1")
            .replacingOccurrences(of: "riskScoreNormalizationDivisor: 25", with: "riskScoreNormalizationDivisor: 100"))
        #expect(ConfigurationReach.warnings(cwaV1: weak).first?.contains("at most 1.2 weighted minutes") == true)
        // Immuni with a notification threshold above 15.
        var immuni = ImmuniConfiguration.published
        #expect(ConfigurationReach.warnings(v1: immuni.v1, threshold: immuni.notificationThreshold, thresholdName: "t").isEmpty)
        immuni.exposureInfoMinimumRiskScore = 16
        #expect(!ConfigurationReach.warnings(v1: immuni.v1, threshold: immuni.notificationThreshold, thresholdName: "t").isEmpty)
    }

    static let immuniApp = """
        {"minimum_build_version": 1, "exposure_info_minimum_risk_score": 20,
         "exposure_configuration": {"attenuation_thresholds": [50, 70], "attenuation_bucket_scores": [0, 0, 3, 3, 3, 3, 3, 3],
          "days_since_last_exposure_bucket_scores": [1, 1, 1, 1, 1, 1, 1, 1], "duration_bucket_scores": [0, 0, 0, 0, 5, 5, 5, 5],
          "transmission_risk_bucket_scores": [1, 1, 1, 1, 1, 1, 1, 1], "minimum_risk_score": 1}}
        """

    @Test func immuniTypoNamesTheKeyActuallyWrong() throws {
        func message(_ json: String) -> String {
            do { _ = try ImmuniConfiguration.decode(from: Data(json.utf8), file: "immuni.json"); return "" } catch { return "\(error)" }
        }
        let inBlock = message(Self.immuniApp.replacingOccurrences(of: "\"duration_bucket_scores\"", with: "\"duration_bucket_score\""))
        #expect(inBlock.contains("exposure_configuration.duration_bucket_score: unknown key (did you mean exposure_configuration.duration_bucket_scores?)"), "\(inBlock)")
        let top = message(Self.immuniApp.replacingOccurrences(of: "exposure_info_minimum_risk_score", with: "exposure_info_minimum_risk_scor"))
        #expect(top.contains("exposure_info_minimum_risk_scor: unknown key (did you mean exposure_info_minimum_risk_score?)"), "\(top)")
        let missing = message(Self.immuniApp.replacingOccurrences(of: ", \"minimum_risk_score\": 1", with: ""))
        #expect(missing.contains("exposure_configuration.minimum_risk_score: missing"), "\(missing)")
        let c = try ImmuniConfiguration.decode(from: Data(Self.immuniApp.utf8), file: "immuni.json")
        #expect(c.exposureInfoMinimumRiskScore == 20 && c.notificationThreshold == 20)
    }

    static func window(seconds: Int, attenuation: Int = 55) -> ExposureWindow {
        var scans: [ScanInstance] = []
        var left = seconds
        while left > 0 { let s = min(left, 300); scans.append(ScanInstance(typicalAttenuationDb: attenuation, minAttenuationDb: attenuation, secondsSinceLastScan: s)); left -= s }
        return ExposureWindow(dateMillisSinceEpoch: Int64(UTCDay(isoDate: "2020-06-01")!.rawValue) * 86_400_000, reportType: 1, infectiousness: 1,
                              calibrationConfidence: 0, scanInstances: scans, transmissionRiskLevel: 8)
    }

    @Test func immuniAppliesItsNotificationThresholdAndTheStatedRounding() throws {
        let today = UTCDay(isoDate: "2020-06-01")!
        // 25 minutes at 55 dB: score 3 x 5 = 15 under the built-in values.
        let w = Self.window(seconds: 25 * 60)
        var c = ImmuniConfiguration.published
        #expect(try ImmuniRisk.calculate([w], configuration: c, today: today).notified)
        let app = try ImmuniConfiguration.decode(from: Data(Self.immuniApp.utf8), file: "immuni.json")
        let r = try ImmuniRisk.calculate([w], configuration: app, today: today)
        #expect(r.maximumRiskScore == 15 && !r.notified && r.notificationThreshold == 20)
        // 16.5 minutes: nearest 5-minute step 15 (bucket "<= 15": 0); up 20 (bucket "<= 20": 5).
        let short = Self.window(seconds: 990)
        #expect(try !ImmuniRisk.calculate([short], configuration: c, today: today).notified)
        c.durationRounding = .up
        #expect(try ImmuniRisk.calculate([short], configuration: c, today: today).notified)
        c.durationRounding = .none
        #expect(try ImmuniRisk.calculate([short], configuration: c, today: today).exposures[0].durationMinutes == 16.5)
        c.durationRounding = .down
        #expect(try ImmuniRisk.calculate([Self.window(seconds: 1190)], configuration: c, today: today).exposures[0].durationMinutes == 15)
    }

    @Test func numbersFromInputAreWrittenWithoutBinaryNoise() {
        #expect(Format.exact(3 * 0.3048) == "0.9144000000000001")
        #expect(Format.clean(3 * 0.3048) == "0.9144")
        #expect(Format.clean(0.1 + 0.2) == "0.3")
        #expect(Format.clean(16.563589586801527) == "16.5635895868")
        #expect(Format.clean(2) == "2" && Format.clean(-70.5) == "-70.5")
    }

    /// JSON configurations too: a key the engine does not read is named with its line.
    @Test func jsonConfigurationKeysAreChecked() throws {
        let json = """
            {"attenuationThresholdLow": 55, "attenuationThresholdMedium": 63,
             "attenuationFactorLow": 1.0, "attenuationFactorMedium": 0.5,
             "minDurationForExposur": 15}
            """
        var strict = UnknownFieldPolicy()
        do {
            try ConfigurationText.checkKeys(Data(json.utf8), known: ConfigurationText.swissCovidKeys, file: "s.json", policy: &strict)
            Issue.record("an unknown key was accepted")
        } catch {
            #expect("\(error)".contains("line 3: unknown key 'minDurationForExposur' (did you mean minDurationForExposure?)"), "\(error)")
        }
        var lenient = UnknownFieldPolicy(allow: true)
        try ConfigurationText.checkKeys(Data(json.utf8), known: ConfigurationText.swissCovidKeys, file: "s.json", policy: &lenient)
        #expect(lenient.warnings.count == 1)
        // Through the rule as trial replay builds it: refused for the key misspelt, not for the one "missing".
        do {
            _ = try ReplayRule.parse("swisscovid=s.json") { _ in Data(json.utf8) }
            Issue.record("a misspelt key was accepted")
        } catch { #expect("\(error)".contains("unknown key 'minDurationForExposur'"), "\(error)") }
    }

    /// Prose prints a computed distance to three significant digits, not its binary expansion
    /// (report.md printed "16.563589586801527 m").
    @Test func reportProseRoundsComputedDistances() throws {
        let obs = FitQualityTests.truncatedChannel().map { o -> Observation in
            var o = o
            if o.distance == 20 { o.distance = 16.563589586801527 }
            return o
        }
        let a = ChannelAnalysis(observations: obs)
        let w = try #require(a.warnings.first { $0.hasPrefix("censored by sensitivity") }, "\(a.warnings)")
        #expect(w.contains(" at 16.6 m beyond it") && !w.contains("16.563589586801527"), "\(w)")
    }
}
