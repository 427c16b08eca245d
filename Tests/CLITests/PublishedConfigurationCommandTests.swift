import Foundation
import Testing

/// `--published-configuration DATE` (gaenctl risk), `--rule NAME@DATE` (gaenctl trial replay) and
/// `gaenctl risk configurations`: the CWA server's configurations chosen by date.
@Suite struct PublishedConfigurationCommandTests {
    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("published-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// One window on 2021-03-19: a confirmed test (report type 1) at standard infectiousness,
    /// 20 minutes at 65 dB (minimum and typical).
    static var window: [String: Any] { [
        "dateMillisSinceEpoch": 1_616_112_000_000, "reportType": 1, "infectiousness": 1, "calibrationConfidence": 0,
        "scanInstances": [["minAttenuationDb": 65, "typicalAttenuationDb": 65, "secondsSinceLastScan": 600],
                          ["minAttenuationDb": 65, "typicalAttenuationDb": 65, "secondsSinceLastScan": 600]]] }

    static func risk(_ args: [String]) throws -> (status: Int32, json: [String: Any]?, stderr: String) {
        let r = try CLI.run("gaenctl", ["risk"] + args)
        return (r.status, r.status == 0 ? try CLI.json(r.stdout) as? [String: Any] : nil, r.stderr)
    }

    @Test func cwaVerdictChangesBetweenTheNovember2020AndMarch2021Parameters() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        try JSONSerialization.data(withJSONObject: [Self.window]).write(to: w)
        // 2020-12-01: the 2020-11-30 file (351aa2244, read by CWA 1.9-1.14). TRL = confirmed test 6 +
        // standard 1 = 7, not in the TRL filter's 1-2; 20 minutes below 73 dB pass the filter (drop
        // under 10); 65 dB has no weight (1.0 below 55, 0.5 below 63), so normalized time is
        // 7 x 0.2 x 20 x 0 = 0: the window and the day are low (0 to 15).
        let nov = try Self.risk(["cwa", "--published-configuration", "2020-12-01", "--windows", w.path, "--today", "2021-03-20"])
        #expect(nov.status == 0, "\(nov.stderr)")
        #expect(nov.json?["totalRiskLevel"] as? Int == 1 && nov.json?["numberOfDaysWithLowRisk"] as? Int == 1)
        #expect(nov.stderr.contains("cwa 2020-11-30..2021-02-02") && nov.stderr.contains("351aa2244"), "\(nov.stderr)")
        // 2021-03-20: the 2021-03-18 file for CWA 1.15 and later (e88332397): TRL 7 has the value
        // 1.4; 65 dB weighs 1.0 (63 to 73): 1.4 x 20 = 28 minutes, high from 13: the day is high.
        let mar = try Self.risk(["cwa", "--published-configuration", "2021-03-20", "--windows", w.path, "--today", "2021-03-20", "--per-window"])
        #expect(mar.status == 0, "\(mar.stderr)")
        let result = mar.json?["result"] as? [String: Any]
        #expect(result?["totalRiskLevel"] as? Int == 2 && result?["mostRecentDateWithHighRisk"] as? String == "2021-03-19")
        #expect(mar.json?["generation"] as? String == "1.15")
        let ws = try #require(mar.json?["windows"] as? [[String: Any]])
        #expect(abs((ws.first?["normalizedTime"] as? Double ?? 0) - 28) < 1e-9)
        #expect(mar.stderr.contains("cwa 2021-03-18..2021-04-14") && mar.stderr.contains("e88332397"), "\(mar.stderr)")
        // The same day for the older apps: their file (1.9 line) of 2021-03-18 weighs 65 dB 1.0 too,
        // with TRL 7 x 0.2 = 1.4: 28, high.
        let old = try Self.risk(["cwa", "--published-configuration", "2021-03-20", "--app-version", "1.12", "--windows", w.path, "--today", "2021-03-20"])
        #expect(old.json?["totalRiskLevel"] as? Int == 2 && old.stderr.contains("CWA 1.9-1.14"), "\(old.stderr)")
    }

    @Test func cwaV1JuneAndSeptember2020GiveTheSameVerdictWithDoubledScores() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        // 20 minutes at 50 dB, transmission risk level 8, on 2020-09-20.
        try JSONSerialization.data(withJSONObject: [[
            "dateMillisSinceEpoch": 1_600_560_000_000, "reportType": 1, "infectiousness": 1, "calibrationConfidence": 0, "transmissionRiskLevel": 8,
            "scanInstances": [["minAttenuationDb": 50, "typicalAttenuationDb": 50, "secondsSinceLastScan": 1200]]]]).write(to: w)
        // June: score 1 x 5 x 1 x 8 = 40; 20 minutes x 40 / 25 = 32 >= 15. September 15th:
        // 2 x 5 x 1 x 8 = 80; 20 x 80 / 50 = 32: the same verdict from doubled scores.
        let june = try Self.risk(["cwa-v1", "--published-configuration", "2020-07-01", "--windows", w.path, "--today", "2020-09-21"])
        let sept = try Self.risk(["cwa-v1", "--published-configuration", "2020-10-01", "--windows", w.path, "--today", "2020-09-21"])
        #expect(june.status == 0 && sept.status == 0, "\(june.stderr) \(sept.stderr)")
        #expect(june.json?["maximumRiskScore"] as? Int == 40 && sept.json?["maximumRiskScore"] as? Int == 80)
        #expect(abs((june.json?["weightedMinutes"] as? Double ?? 0) - 32) < 1e-9 && abs((sept.json?["weightedMinutes"] as? Double ?? 0) - 32) < 1e-9)
        #expect(june.json?["increasedRisk"] as? Bool == true && sept.json?["increasedRisk"] as? Bool == true)
        #expect(june.stderr.contains("cwa-v1 2020-06-15..2020-09-13") && june.stderr.contains("d6c0ad58f"), "\(june.stderr)")
        #expect(sept.stderr.contains("cwa-v1 2020-09-15..") && sept.stderr.contains("f3d66840e"), "\(sept.stderr)")
    }

    @Test func aDateBeforeTheFirstPublicationIsRefusedNamingIt() throws {
        let v1 = try CLI.run("gaenctl", ["risk", "cwa-v1", "--published-configuration", "2020-06-01", "--windows", "/nonexistent"])
        #expect(v1.status != 0 && v1.stderr.contains("before the first published configuration, 2020-06-15"), "\(v1.stderr)")
        let cwa = try CLI.run("gaenctl", ["risk", "cwa", "--published-configuration", "2020-11-10", "--windows", "/nonexistent"])
        #expect(cwa.status != 0 && cwa.stderr.contains("2020-11-11"), "\(cwa.stderr)")
        let both = try CLI.run("gaenctl", ["risk", "cwa", "--published-configuration", "2021-01-01", "--parameters", "x.json", "--windows", "w.json"])
        #expect(both.status != 0 && both.stderr.contains("either --parameters FILE or --published-configuration"), "\(both.stderr)")
        let bad = try CLI.run("gaenctl", ["risk", "cwa-v1", "--published-configuration", "2020-13-01", "--windows", "w.json"])
        #expect(bad.status != 0 && bad.stderr.contains("'2020-13-01' is not a date"), "\(bad.stderr)")
    }

    @Test func replayComparesDatesAsRules() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let contacts = dir.appendingPathComponent("contacts.json")
        try JSONSerialization.data(withJSONObject: ["contacts": [["label": "A/B 1.5 m", "distance": 1.5, "windows": [Self.window]]]]).write(to: contacts)
        // The window above on its own day: low under the 2020-11-30 file, high under 2021-03-18's.
        let r = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts.path, "--rule", "cwa@2020-12-01", "--rule", "cwa@2021-03-20",
                                        "--close-contact", "2", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let rules = try #require((try CLI.json(r.stdout) as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(rules.map { $0["rule"] as? String } == ["cwa@2020-12-01", "cwa@2021-03-20"])
        #expect(rules.map { $0["notified"] as? Int } == [0, 1])
        let used = try #require((try CLI.json(r.stdout) as? [String: Any])?["publishedConfigurations"] as? [[String: Any]])
        #expect(used.map { $0["from"] as? String } == ["2020-11-30", "2021-03-18"])
        #expect(used.map { ($0["source"] as? [String: Any])?["commit"] as? String } == ["351aa2244d06e54a36a354aba8d44d59130c4c38", "e88332397d4010c3854bd91de5b1a60b52658c58"])
        #expect(r.stderr.contains("cwa@2020-12-01: published configuration cwa 2020-11-30..2021-02-02") && r.stderr.contains("e88332397"), "\(r.stderr)")
        for (spec, says) in [("cwa-v1@2020-06-01", "2020-06-15"), ("nhs@2021-01-01", "only cwa and cwa-v1"),
                             ("cwa@2021-01-01=x.json", "not both"), ("cwa@yesterday", "not a date")] {
            let e = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts.path, "--rule", spec, "--close-contact", "2"])
            #expect(e.status != 0 && e.stderr.contains(says), "\(spec): \(e.stderr)")
        }
    }

    @Test func configurationsAreListedWithTheirSources() throws {
        let table = try CLI.run("gaenctl", ["risk", "configurations"])
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("cwa-v1 ") }.count == 3 && lines.filter { $0.hasPrefix("cwa ") }.count == 11, "\(table.stdout)")
        #expect(table.stdout.contains("2020-06-15  2020-09-13") && table.stdout.contains("d6c0ad58f"))
        let json = try CLI.run("gaenctl", ["risk", "configurations", "--json"])
        let list = try #require(try CLI.json(json.stdout) as? [[String: Any]])
        #expect(list.count == 14)
        for e in list {
            let source = e["source"] as? [String: Any]
            #expect((source?["commit"] as? String)?.count == 40 && source?["repository"] as? String == "https://github.com/corona-warn-app/cwa-server")
            #expect(e["configuration"] is [String: Any] && (source?["paths"] as? [String])?.isEmpty == false)
        }
    }
}
