import Foundation
import Testing
import YAMLReader
@testable import ENProtocol
@testable import RiskEngines

/// The dated CWA configurations against the files the cwa-server published, read with the
/// project's YAML reader from Fixtures/published/cwa-server/<commit>/<path> (the bytes of
/// `git show <commit>:<path>`), and the choice of an entry by date.
@Suite struct PublishedDatedConfigurationTests {
    typealias Published = PublishedRiskConfigurations

    static func fixture(_ commit: String, _ path: String) throws -> String {
        let url = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/published/cwa-server/\(commit)/\(path)")
        return String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    static func yaml(_ commit: String, _ path: String) throws -> YAMLNode {
        var text = try fixture(commit, path)
        // The server's loader resolves its own `!include` tag (app-config.yaml); the reader refuses
        // unknown tags, and the included files are read on their own, so the tag is dropped here.
        text = text.replacingOccurrences(of: "!include ", with: "")
        return try #require(try YAML.compose(text), "\(commit) \(path) is empty")
    }

    /// A YAML node as JSON values, kebab-case keys in the app's camelCase (the server maps
    /// `minutes-at-attenuation-filters` to the protobuf field `minutesAtAttenuationFilters`).
    static func json(_ node: YAMLNode) -> Any {
        switch node {
        case .mapping(let m):
            var o: [String: Any] = [:]
            for e in m.entries {
                let parts = (e.key.string ?? "").split(separator: "-").map(String.init)
                let key = parts.enumerated().map { $0.offset == 0 ? $0.element : $0.element.prefix(1).uppercased() + $0.element.dropFirst() }.joined()
                o[key] = json(e.value)
            }
            return o
        case .sequence(let s): return s.items.map(json)
        case .scalar(let s):
            if let i = s.int { return i }
            if let d = s.double { return d }
            if let b = s.bool { return b }
            return s.string
        }
    }

    /// The v1 engine's input from the four files as the app read them: each risk-level block's
    /// values in file order (lowest-risk bucket first, the framework's order), min-risk-score,
    /// the attenuation-duration block, and increased risk from the HIGH class's min.
    static func cwaV1(_ commit: String) throws -> CWAv1Configuration {
        let dir = "services/distribution/src/main/resources/master-config"
        let exposure = try yaml(commit, "\(dir)/exposure-config.yaml")
        let ad = try yaml(commit, "\(dir)/attenuation-duration.yaml")
        let classes = try yaml(commit, "\(dir)/risk-score-classification.yaml")
        let app = try yaml(commit, "\(dir)/app-config.yaml")
        func mapping(_ n: YAMLNode?) throws -> YAMLMapping {
            guard case .mapping(let m)? = n else { throw YAMLError(problem: "not a mapping") }
            return m
        }
        func levels(_ key: String) throws -> [Int] {
            try mapping(mapping(exposure)[key]).entries.map { try #require($0.value.int, "\(commit) \(key)") }
        }
        let e = try mapping(ad)
        let thresholds = try mapping(e["thresholds"]), weights = try mapping(e["weights"])
        guard case .sequence(let list)? = try mapping(classes)["risk-classes"] else { throw YAMLError(problem: "risk-classes") }
        let high = try #require(try list.items.first { try mapping($0)["label"]?.string == "HIGH" })
        let object: [String: Any] = [
            "minimumRiskScore": try #require(try mapping(app)["min-risk-score"]?.int),
            "attenuationLevelValues": try levels("attenuation"),
            "daysSinceLastExposureLevelValues": try levels("days_since_last_exposure"),
            "durationLevelValues": try levels("duration"),
            "transmissionRiskLevelValues": try levels("transmission"),
            "attenuationDurationThresholds": [try #require(thresholds["lower"]?.int), try #require(thresholds["upper"]?.int)],
            "attenuationDurationWeights": [try #require(weights["low"]?.double), try #require(weights["mid"]?.double), try #require(weights["high"]?.double)],
            "defaultBucketOffset": try #require(e["default-bucket-offset"]?.double),
            "riskScoreNormalizationDivisor": try #require(e["risk-score-normalization-divisor"]?.double),
            "increasedRiskMinutes": try #require(try mapping(high)["min"]?.double),
        ]
        return try RiskJSON.decodeParameters(CWAv1Configuration.self, from: JSONSerialization.data(withJSONObject: object), file: commit)
    }

    /// The v2 engine's input: the parameters file, plus the persistence module's TRL value
    /// mapping where the entry names it.
    static func cwa(_ commit: String, _ paths: [String]) throws -> CWAParameters {
        var object: [String: Any] = [:]
        for p in paths {
            let o = try #require(json(try yaml(commit, p)) as? [String: Any])
            object.merge(o) { _, new in new }
        }
        return try CWAParameters.decode(from: JSONSerialization.data(withJSONObject: object), file: commit)
    }

    @Test(arguments: PublishedRiskConfigurations.dated)
    func everyEntryHoldsTheValuesAsPublished(_ entry: PublishedRiskConfigurations.Dated) throws {
        #expect(entry.source.commitDate == entry.from)
        switch entry.rule {
        case .cwaV1:
            #expect(try entry.cwaV1Configuration() == Self.cwaV1(entry.source.commit), "\(entry.summary)")
        case .cwa:
            #expect(try entry.cwaParameters() == Self.cwa(entry.source.commit, entry.source.paths), "\(entry.summary)")
        }
    }

    @Test func commitsThatChangeNoEngineInputAreNotEntries() throws {
        // 2020-09-11 (#758): only the HIGH class's max (72 -> 9999).
        let june = try Published.published(.cwaV1, on: UTCDay(isoDate: "2020-09-11")!)
        #expect(june.from == "2020-06-15")
        #expect(try Self.cwaV1("3ef4ecfe1d892878a1861750c6b68f7173da35f3") == june.cwaV1Configuration())
        // 2021-03-25: the value mapping moved to the persistence module, same values.
        let march = try Published.published(.cwa, on: UTCDay(isoDate: "2021-03-25")!)
        #expect(march.from == "2021-03-18" && march.generation == .v1_15)
        #expect(try Self.cwa("6a471dbf206438faa98db9530589d355baeed276",
                             ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters-1.15.yaml",
                              "common/persistence/src/main/resources/trl-value-mapping-1.15.yaml"]) == march.cwaParameters())
    }

    @Test func theBuiltInDefaultsAreDatedEntries() throws {
        // The replay default for cwa-v1 is the launch state.
        let v1 = try RiskJSON.decodeParameters(CWAv1Configuration.self, from: Data(Published.cwaV1.utf8), file: "cwaV1")
        #expect(try v1 == Published.published(.cwaV1, on: UTCDay(isoDate: "2020-06-15")!).cwaV1Configuration())
        // The app's v3.2.1 built-in default holds the server's values of 2022-03-10 but for the
        // deprecated multiplier (0 in the served file) and the high day range's upper bound
        // (9999 built in, 99999 served since 2021-02-03), which no day reaches.
        var served = try Published.published(.cwa, on: UTCDay(isoDate: "2022-04-01")!).cwaParameters()
        #expect(served.transmissionRiskLevelMultiplier == 0)
        #expect(served.normalizedTimePerDayToRiskLevelMapping.last?.normalizedTimeRange.max == 99999)
        served.transmissionRiskLevelMultiplier = nil
        served.normalizedTimePerDayToRiskLevelMapping[served.normalizedTimePerDayToRiskLevelMapping.count - 1].normalizedTimeRange.max = 9999
        #expect(try CWAParameters.decode(from: Data(Published.cwa.utf8), file: "cwa") == served)
    }

    @Test func theCWA19TestCaseParametersAreTheServersOf30November2020() throws {
        let file = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation-1.9.json"), file: "1.9")
        let served = try Published.published(.cwa, on: UTCDay(isoDate: "2020-11-30")!)
        #expect(served.source.commit.hasPrefix("351aa2244") && served.generation == .v1_9)
        #expect(try served.cwaParameters() == file)
    }

    @Test func entriesAreChosenByDateAndRangesDoNotOverlap() throws {
        func on(_ rule: Published.DatedRule, _ d: String, _ g: CWAGeneration? = nil) throws -> Published.Dated {
            try Published.published(rule, on: UTCDay(isoDate: d)!, generation: g)
        }
        #expect(try on(.cwaV1, "2020-07-01").from == "2020-06-15")
        #expect(try on(.cwaV1, "2020-09-14").from == "2020-09-14")
        #expect(try on(.cwaV1, "2021-06-01").from == "2020-09-15")
        #expect(try on(.cwaV1, "2020-06-15").until == "2020-09-13")
        #expect(try on(.cwa, "2021-02-02").from == "2020-11-30")
        #expect(try on(.cwa, "2021-02-02").until == "2021-02-02")
        #expect(try on(.cwa, "2021-03-01").generation == .v1_15)
        #expect(try on(.cwa, "2021-03-20", .v1_9).source.paths == ["services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml"])
        #expect(try on(.cwa, "2021-04-15", .v2_19).from == "2021-04-15")
        let early = #expect(throws: Published.DateError.self) { try on(.cwaV1, "2020-06-14") }
        #expect(early?.description.contains("2020-06-15") == true)
        let beforeLine = #expect(throws: Published.DateError.self) { try on(.cwa, "2021-02-28", .v1_15) }
        #expect(beforeLine?.description.contains("2021-03-01") == true)
        // Within a line, each entry ends the day before the next starts.
        for rule in Published.DatedRule.allCases {
            for g in Set(Published.dated.filter { $0.rule == rule }.map(\.generation)) {
                let line = Published.dated.filter { $0.rule == rule && $0.generation == g }
                #expect(line.map(\.from) == line.map(\.from).sorted())
                for (a, b) in zip(line, line.dropFirst()) {
                    #expect(UTCDay(isoDate: a.until!)!.advanced(by: 1) == UTCDay(isoDate: b.from)!)
                }
                #expect(line.last?.until == nil)
            }
        }
    }

    /// September 2020 changed the v1 values twice; under the engine neither changes a verdict:
    /// levels 1-2 scored 5 and 10 (below the minimum 11) before they scored 0, and doubling the
    /// attenuation values doubles every score while the divisor doubles too.
    @Test func theSeptember2020ChangesKeepEveryVerdict() throws {
        let today = UTCDay(isoDate: "2020-10-01")!
        let configs = try ["2020-06-15", "2020-09-14", "2020-09-15"].map {
            try Published.published(.cwaV1, on: UTCDay(isoDate: $0)!).cwaV1Configuration()
        }
        var increased = 0
        for trl in 1...8 {
            for attenuation in [40, 58, 70, 80] {
                for minutes in [5, 12, 20, 30] {
                    let w = RiskFixtures.window(day: today.advanced(by: -2), trl: trl,
                                                [(typical: attenuation, min: attenuation, seconds: minutes * 60)])
                    let r = try configs.map { try CWAv1RiskCalculation.calculate([w], configuration: $0, today: today) }
                    #expect(r[0].increasedRisk == r[1].increasedRisk && r[1].increasedRisk == r[2].increasedRisk)
                    #expect(abs(r[0].weightedMinutes - r[2].weightedMinutes) < 1e-9)
                    #expect(r[2].maximumRiskScore == 2 * r[0].maximumRiskScore)
                    if r[0].increasedRisk { increased += 1 }
                }
            }
        }
        // Not a vacuous grid: some windows raise the risk.
        #expect(increased > 0)
    }
}

extension PublishedRiskConfigurations.Dated: CustomTestStringConvertible {
    public var testDescription: String { summary }
}
