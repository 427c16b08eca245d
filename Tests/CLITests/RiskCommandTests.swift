import Foundation
import Testing

/// `gaenctl risk ...` and `gaenctl summaries` end to end, on the repository's risk fixtures.
@Suite struct RiskCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../RiskEnginesTests/Fixtures/risk").standardized.path
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/risk-examples").standardized.path

    @Test func cwaV1WorkedExampleOnThe22nd() throws {
        let r = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", "\(Self.fixtures)/cwa-v1/configuration.json",
                                        "--windows", "\(Self.fixtures)/cwa-v1/windows-2020-09-22.json", "--today", "2020-09-22"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(o["increasedRisk"] as? Bool == true)
        #expect(o["weightedMinutes"] as? Double == 48)
        #expect(o["riskEncounters"] as? Int == 2)
        #expect(o["daysSinceLastRiskEncounter"] as? Int == 6)
        #expect(o["maximumRiskScore"] as? Int == 40)
    }

    @Test func cwaPrintsEveryContractKeyWithNullDates() throws {
        let r = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", "\(Self.fixtures)/cwa/default-app-config-risk-parameters.json",
                                        "--windows", "\(Self.examples)/windows.json", "--today", "2021-02-03"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(Set(o.keys) == ["totalRiskLevel", "mostRecentDateWithLowRisk", "mostRecentDateWithHighRisk", "numberOfDaysWithLowRisk",
                                "numberOfDaysWithHighRisk", "minimumDistinctEncountersWithLowRisk", "minimumDistinctEncountersWithHighRisk"])
        #expect(o["totalRiskLevel"] as? Int == 2)
        #expect(o["mostRecentDateWithHighRisk"] as? String == "2021-02-01")
        #expect(o["mostRecentDateWithLowRisk"] is NSNull)
    }

    @Test func nhsScoresEveryWindow() throws {
        let r = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", "\(Self.fixtures)/nhs/exposure-configuration.json",
                                        "--windows", "\(Self.examples)/windows.json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(o["method"] as? String == "v2")
        #expect((o["windows"] as? [Any])?.count == 3)
        #expect(o["riskThreshold"] as? Double == 120)
    }

    @Test func summariesJSON() throws {
        let r = try CLI.run("gaenctl", ["summaries", "--windows", "\(Self.examples)/windows.json",
                                        "--config", "\(Self.examples)/daily-summaries-config.json", "--today", "2021-02-03", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let days = try #require(try CLI.json(r.stdout) as? [[String: Any]])
        #expect(days.map { $0["date"] as? String } == ["2021-01-28", "2021-02-01"])
        let data = try #require(days[1]["summaryData"] as? [String: Any])
        #expect(data["scoreSum"] as? Double == 2400)
    }

    @Test func badParametersFailWithTheFieldNamed() throws {
        let r = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", "\(Self.examples)/gaen-v1-configuration.json",
                                        "--windows", "\(Self.examples)/windows.json"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("minutesAtAttenuationWeights: missing"), "\(r.stderr)")
        let d = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", "\(Self.fixtures)/cwa-v1/configuration.json",
                                        "--windows", "\(Self.examples)/windows.json", "--today", "2021-13-01"])
        #expect(d.status != 0 && d.stderr.contains("--today"), "\(d.stderr)")
    }
}
