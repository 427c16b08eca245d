import Foundation
import Testing
@testable import ENProtocol
@testable import RiskEngines

/// The NHS COVID-19 app's scoring against its published expected values
/// (ukhsa-collaboration/riskscore-swift-public tests: the example data to 1e-8, the Python
/// model's scores for the scenario CSVs to 5%, gamma quantiles; app tests for the v1 factor).
@Suite struct NHSRiskTests {
    static func configuration() throws -> NHSExposureConfiguration {
        try RiskJSON.decodeParameters(NHSExposureConfiguration.self, from: RiskFixtures.data("nhs/exposure-configuration.json"),
                                      file: "exposure-configuration.json")
    }

    static func calculator() throws -> NHSRiskScoreCalculator {
        NHSRiskScoreCalculator(parameters: try #require(try configuration().riskScore))
    }

    @Test func exampleDataScoreMatchesTheirs() throws {
        // riskscore-swift-public ExampleData (exampleDataSingleValues) and its expected score.
        let example: [(attenuation: Double, seconds: Double)] = [
            (97.03021291, 201.06532745872457), (85.81504891, 225.75565160910116), (83.44136722, 279.3777909268962),
            (64.5678367, 215.4689826255009), (78.41303166, 263.05165262029305), (83.62187329, 211.07091989780974),
            (73.51912742, 228.45034015853247), (76.64553678, 183.48910595748023), (66.65088196, 189.9994479121982),
            (70.27063972, 190.48134624246617),
        ]
        let score = try Self.calculator().score(example)
        #expect(abs(score - 2.149345279234102) < 1e-8, "score \(score)")
    }

    @Test func observationsPadMissingStepsAndSkipNonFiniteValues() throws {
        let c = try Self.calculator()
        let obs = c.observations([(97, 201), (85, 3.5), (.infinity, 2), (64, 1)])
        #expect(obs.count == 7) // steps 0, 3, 5, 6 (first instance at 0)
        #expect(obs[0] == log(97.0) && obs[3] == log(85.0) && obs[5] == nil && obs[6] == log(64.0))
        #expect(obs[1] == nil && obs[2] == nil && obs[4] == nil)
    }

    @Test func scenarioScoresAgreeWithThePythonModel() throws {
        let csv = String(decoding: try RiskFixtures.data("nhs/pythonRiskScores.csv"), as: UTF8.self)
        var expected: [String: Double] = [:]
        for line in csv.split(separator: "\n").dropFirst() {
            // index, risk_score, score_14, score_15, score_16, pf_15, pf_16, "scenario_csv" (which holds commas)
            let fields = line.split(separator: ",", maxSplits: 7, omittingEmptySubsequences: false)
            expected[fields[7].trimmingCharacters(in: CharacterSet(charactersIn: "\""))] = Double(fields[4])
        }
        let dir = RiskFixtures.url("nhs/ScanInstances")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".csv") }.sorted()
        #expect(files.count == 10)
        let calculator = try Self.calculator()
        for name in files {
            let rows = String(decoding: try Data(contentsOf: dir.appendingPathComponent(name)), as: UTF8.self)
                .split(separator: "\n").map { $0.split(separator: ",") }
            let instances = rows.map { (attenuation: Double($0[1])!, seconds: Double($0[0])!) }
            let want = try #require(expected[name], "no expected score for \(name)")
            let got = calculator.score(instances)
            #expect(abs(got - want) < 0.05 * want, "\(name): expected \(want), got \(got)")
        }
    }

    @Test func gammaQuantilesMatchTheirs() {
        #expect(abs(GammaFunction.inverseRegularizedLowerP(2.5, 1.199675720590626e-02) - 0.3) < 1e-9)
        #expect(abs(GammaFunction.inverseRegularizedLowerP(10, 1.114254783387200e-07) - 1.0) < 1e-9)
        #expect(GammaFunction.inverseRegularizedLowerP(0.5, 0) == 0)
        #expect(abs(GammaFunction.gammaMedian(shape: 2.5, scale: 1) - 2.175730095547763) < 1e-12)
        #expect(abs(GammaFunction.gammaMedian(shape: 2.5, scale: 3) - 3 * 2.175730095547763) < 1e-11)
        #expect(GammaFunction.gammaMedian(shape: -1, scale: 1) == 1e-3)
        // Round trip over a range of shapes, small and large.
        for a in [0.05, 0.3, 1, 4.2, 37, 400, 5000] {
            for p in [1e-6, 0.01, 0.5, 0.9, 0.999] {
                let x = GammaFunction.inverseRegularizedLowerP(a, p)
                #expect(abs(GammaFunction.regularizedLowerP(a, x) - p) < 1e-9 * max(1, p * 10), "a \(a) p \(p)")
            }
        }
    }

    @Test func v2WindowRiskIsSixtyTimesScoreTimesInfectiousnessWeight() throws {
        let c = try Self.configuration()
        let day = UTCDay(isoDate: "2021-01-10")!
        let scans = [(typical: 50, min: 45, seconds: 0), (typical: 50, min: 45, seconds: 180), (typical: 52, min: 48, seconds: 180)]
        let standard = RiskFixtures.window(day: day, infectiousness: 1, scans)
        let high = RiskFixtures.window(day: day.advanced(by: 1), infectiousness: 2, scans)
        let r = try NHSRiskCalculation.calculate([standard, high], configuration: c)
        #expect(r.method == "v2")
        // secondsSinceLastScan 0 is dropped, as the apps do.
        let score = try Self.calculator().score([(45, 180), (48, 180)])
        #expect(r.windows[0].score == score && r.windows[1].score == score)
        #expect(r.windows[0].infectiousnessFactor == 0.4 && r.windows[1].infectiousnessFactor == 1.0)
        #expect(abs(r.windows[0].riskScore - 60 * score * 0.4) < 1e-9)
        #expect(abs(r.maximumRiskScore - 60 * score) < 1e-9)
        #expect(r.riskThreshold == 120)
        #expect(r.crossesThreshold == (60 * score >= 120))
    }

    @Test func v2CrossesTheThresholdForALongCloseContact() throws {
        // Thirty minutes at 45 dB: score ~ 30 minutes at <= 1 m; 60 x 30 x 1.0 is far above 120.
        let c = try Self.configuration()
        let day = UTCDay(isoDate: "2021-01-10")!
        let w = RiskFixtures.window(day: day, infectiousness: 2, Array(repeating: (45, 40, 180), count: 10))
        let r = try NHSRiskCalculation.calculate([w], configuration: c)
        #expect(r.crossesThreshold && r.mostRelevantExposureDate == "2021-01-10")
        let none = try NHSRiskCalculation.calculate([RiskFixtures.window(day: day, [(60, 60, 0)])], configuration: c)
        #expect(none.windows[0].score == 0 && !none.crossesThreshold)
    }

    @Test func v1FallbackWeightsBucketSecondsAndInfectiousness() throws {
        let c = try Self.configuration()
        let day = UTCDay(isoDate: "2021-01-10")!
        // 300 s in each bucket (<= 55, 55..63, > 63) x [1.0, 0.5, 0.0] = 450 (NHS app test value).
        let scans = [(typical: 50, min: 50, seconds: 300), (typical: 60, min: 60, seconds: 300), (typical: 70, min: 70, seconds: 300)]
        let r = try NHSRiskCalculation.calculate([RiskFixtures.window(day: day, trl: 8, scans), RiskFixtures.window(day: day, trl: 5, scans)],
                                                 configuration: c, method: .v1)
        #expect(r.method == "v1")
        #expect(r.windows[0].score == 450 && r.windows[0].riskScore == 450)
        #expect(r.windows[1].infectiousnessFactor == 0.5515397744971644)
        #expect(r.riskThreshold == 20 && r.crossesThreshold)
    }

    @Test func infectiousnessFactorMatchesTheAppTable() {
        let table = [1.0, 0.9360225578954148, 0.7676181961208854, 0.5515397744971644, 0.3472010612276297,
                     0.19149519501466308, 0.09253528115842204, 0.03917684398136177]
        for (days, f) in table.enumerated() {
            #expect(abs(NHSRiskCalculation.infectiousnessFactor(daysFromOnset: days) - f) < 1e-15)
        }
    }
}

/// The NHS engine reads the app's published file key by key: every key of the published file is
/// known, a misspelt nested key is named by its path (not read as absent), and the stated option
/// downgrades it to a warning.
@Suite struct NHSConfigurationKeysTests {
    let engine = NHSEngine()

    @Test func thePublishedFileAndTheFixtureHaveNoUnknownKey() throws {
        for (data, name) in [(Data(PublishedRiskConfigurations.nhs.utf8), "published"),
                             (try RiskFixtures.data("nhs/exposure-configuration.json"), "fixture")] {
            let built = try engine.rule(parameters: data, source: name, dated: nil, options: RiskRuleOptions())
            #expect(built.warnings.isEmpty, "\(name): \(built.warnings)")
        }
    }

    @Test func aMisspeltNestedKeyIsNamedByItsPathAndLine() throws {
        var text = String(decoding: try RiskFixtures.data("nhs/exposure-configuration.json"), as: UTF8.self)
        let range = try #require(text.range(of: "\"pathLossFactor\""))
        text.replaceSubrange(range, with: "\"pathLosFactor\"")
        let line = text[..<range.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
        do {
            _ = try engine.rule(parameters: Data(text.utf8), source: "nhs.json", dated: nil, options: RiskRuleOptions())
            Issue.record("a misspelt key was accepted")
        } catch {
            let message = "\(error)"
            #expect(message.contains("nhs.json"), "\(message)")
            #expect(message.contains("line \(line): unknown key 'riskScore.powerLossParameters.pathLosFactor' (did you mean pathLossFactor?)"), "\(message)")
        }
        // With the option, a key the engine does not know is left out with a warning naming it,
        // and a misspelt required key still fails as missing.
        #expect(throws: RiskError.self) {
            _ = try engine.rule(parameters: Data(text.utf8), source: "nhs.json", dated: nil, options: RiskRuleOptions(allowUnknownFields: true))
        }
        var extra = String(decoding: try RiskFixtures.data("nhs/exposure-configuration.json"), as: UTF8.self)
        extra.replaceSubrange(try #require(extra.range(of: "\"pathLossFactor\"")), with: "\"futureField\": 1, \"pathLossFactor\"")
        #expect(throws: RiskError.self) {
            _ = try engine.rule(parameters: Data(extra.utf8), source: "nhs.json", dated: nil, options: RiskRuleOptions())
        }
        let allowed = try engine.rule(parameters: Data(extra.utf8), source: "nhs.json", dated: nil, options: RiskRuleOptions(allowUnknownFields: true))
        #expect(allowed.warnings.count == 1 && allowed.warnings[0].contains("'riskScore.powerLossParameters.futureField'"), "\(allowed.warnings)")
    }
}
