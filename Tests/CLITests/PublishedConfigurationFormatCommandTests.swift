import Foundation
import Testing

/// `gaenctl trial replay` and `gaenctl risk` on configurations and files as published (issue 32):
/// the CWA configuration in the Leith dataset's text-format layout, unknown fields, a
/// configuration that can notify no one, Immuni's threshold, typo and rounding, the configuration
/// chosen by the contacts' own day, CSV given where JSON was expected, numbers as written.
@Suite struct PublishedConfigurationFormatCommandTests {
    static let examples = TrialImportReplayTests.examples

    static func histogram(_ dir: URL, _ csv: String? = nil, trl: Int = 8) throws -> String {
        var input = "\(examples)/histogram.csv"
        if let csv {
            input = dir.appendingPathComponent("h.csv").path
            try Data(csv.utf8).write(to: URL(fileURLWithPath: input))
        }
        let out = dir.appendingPathComponent("contacts-\(UUID().uuidString).json").path
        let r = try CLI.run("gaenctl", ["trial", "import", "histogram", input, "--transmission-risk-level", String(trl), "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        // No report_type or infectiousness column: what was assumed is said.
        #expect(r.stderr.contains("with report type 1 (CONFIRMED_TEST) assumed") && r.stderr.contains("with infectiousness 1 (STANDARD) assumed"), "\(r.stderr)")
        return out
    }

    static func replay(_ contacts: String, _ rules: [String], _ extra: [String] = []) throws -> (CLIResult, [[String: Any]]) {
        let r = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--close-contact", "2", "--json"]
                            + rules.flatMap { ["--rule", $0] } + extra)
        let rules = r.status == 0 ? ((try? CLI.json(r.stdout) as? [String: Any])?["rules"] as? [[String: Any]]) ?? [] : []
        return (r, rules)
    }

    @Test func leithLayoutCWAConfigurationReplaysAsTheLaunchValues() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let contacts = try Self.histogram(dir)
        let (leith, a) = try Self.replay(contacts, ["cwa-v1=\(Self.examples)/cwa-leith-2020-06.textproto"])
        #expect(leith.status == 0, "\(leith.stderr)")
        #expect(!leith.stderr.contains("warning"), "\(leith.stderr)")
        let (snake, b) = try Self.replay(contacts, ["cwa-v1=\(Self.examples)/cwa-v1-app-config.textproto"])
        #expect(snake.status == 0, "\(snake.stderr)")
        // The worked example of docs/trial.md: 2 notified, both close.
        #expect(a.first?["notified"] as? Int == 2 && a.first?["truePositives"] as? Int == 2, "\(a)")
        #expect(a.first?["notified"] as? Int == b.first?["notified"] as? Int && a.first?["falsePositives"] as? Int == b.first?["falsePositives"] as? Int)
    }

    @Test func unknownFieldsAreRefusedWithTheirLineOrWarnedAbout() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let contacts = try Self.histogram(dir)
        var lines = try String(contentsOfFile: "\(Self.examples)/cwa-leith-2020-06.textproto", encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let at = try #require(lines.firstIndex(of: "exposureConfig {"))
        lines.insert("  totallyUnknown: 5", at: at + 1)
        let file = dir.appendingPathComponent("unknown.textproto")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let (refused, _) = try Self.replay(contacts, ["cwa-v1=\(file.path)"])
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.contains("line \(at + 2): unknown field 'totallyUnknown' in exposureConfig"), "\(refused.stderr)")
        let (allowed, rules) = try Self.replay(contacts, ["cwa-v1=\(file.path)"], ["--allow-unknown-fields"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(allowed.stderr.contains("warning: cwa-v1=\(file.path): \(file.path): line \(at + 2): unknown field 'totallyUnknown'"), "\(allowed.stderr)")
        #expect(rules.first?["notified"] as? Int == 2)
        #expect((rules.first?["warnings"] as? [String])?.contains { $0.contains("totallyUnknown") } == true)
        // `gaenctl risk cwa-v1` reads the file the same way.
        let windows = "\(RiskCommandTests.fixtures)/cwa-v1/windows-2020-09-22.json"
        let risk = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", file.path, "--windows", windows, "--today", "2020-09-22"])
        #expect(risk.status == 1 && risk.stderr.contains("line \(at + 2): unknown field 'totallyUnknown'"), "\(risk.stderr)")
        let lenient = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", file.path, "--windows", windows, "--today", "2020-09-22", "--allow-unknown-fields"])
        #expect(lenient.status == 0 && lenient.stderr.contains("warning: \(file.path): line \(at + 2): unknown field 'totallyUnknown'"), "\(lenient.stderr)")
        #expect(lenient.stdout.contains("\"increasedRisk\" : true"), "\(lenient.stdout)")
    }

    @Test func aConfigurationThatCanNotifyNoOneIsWarnedAbout() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let contacts = try Self.histogram(dir)
        // Every transmission value 0 (what the camelCase fields left out used to give).
        let text = try String(contentsOfFile: "\(Self.examples)/cwa-leith-2020-06.textproto", encoding: .utf8)
            .split(separator: "\n").filter { !$0.contains("appDefined_") }.joined(separator: "\n")
        let file = dir.appendingPathComponent("zero.textproto")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let (r, rules) = try Self.replay(contacts, ["cwa-v1=\(file.path)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("maximum achievable risk score 0") && r.stderr.contains("the rule can notify no one"), "\(r.stderr)")
        #expect(rules.first?["notified"] as? Int == 0)
        // Immuni with the app's notification threshold above any score its tables allow (15).
        let immuni = dir.appendingPathComponent("immuni.json")
        try Data("""
            {"exposure_info_minimum_risk_score": 20, "exposure_configuration": {"attenuation_thresholds": [50, 70],
             "attenuation_bucket_scores": [0, 0, 3, 3, 3, 3, 3, 3], "days_since_last_exposure_bucket_scores": [1, 1, 1, 1, 1, 1, 1, 1],
             "duration_bucket_scores": [0, 0, 0, 0, 5, 5, 5, 5], "transmission_risk_bucket_scores": [1, 1, 1, 1, 1, 1, 1, 1], "minimum_risk_score": 1}}
            """.utf8).write(to: immuni)
        let (i, irules) = try Self.replay(contacts, ["immuni", "immuni=\(immuni.path)"])
        #expect(i.status == 0, "\(i.stderr)")
        #expect(irules.first?["notified"] as? Int == 2 && irules.last?["notified"] as? Int == 0, "\(irules)")
        #expect(i.stderr.contains("below the notification threshold (exposure_info_minimum_risk_score) 20"), "\(i.stderr)")
        // A typo names the key that is wrong, not another one as missing.
        let typo = dir.appendingPathComponent("typo.json")
        try Data(try String(contentsOf: immuni, encoding: .utf8).replacingOccurrences(of: "\"attenuation_bucket_scores\"", with: "\"attenuation_bucket_scorse\"").utf8).write(to: typo)
        let (t, _) = try Self.replay(contacts, ["immuni=\(typo.path)"])
        #expect(t.status == 1 && t.stderr.contains("exposure_configuration.attenuation_bucket_scorse: unknown key (did you mean exposure_configuration.attenuation_bucket_scores?)"),
                "\(t.stderr)")
    }

    @Test func immuniDurationRoundingIsAStatedOption() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 16.5 minutes at 51 dB, 1 m: the framework's nearest 5-minute step is 15 (score 0).
        let contacts = try Self.histogram(dir, "label,distance,date,50-52\nclose,1,2020-06-01,16.5\n")
        let (near, a) = try Self.replay(contacts, ["immuni"])
        #expect(near.status == 0 && a.first?["notified"] as? Int == 0, "\(near.stderr) \(a)")
        let (up, b) = try Self.replay(contacts, ["immuni"], ["--duration-rounding", "immuni=up"])
        #expect(up.status == 0 && b.first?["notified"] as? Int == 1, "\(up.stderr) \(b)")
        let bad = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "immuni", "--close-contact", "2", "--duration-rounding", "cwa=up"])
        #expect(bad.status != 0 && bad.stderr.contains("--duration-rounding"), "\(bad.stderr)")
    }

    @Test func cwaIsChosenByTheContactsDayAndWarnedAboutBeforeItExisted() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let june2020 = try Self.histogram(dir)
        let (old, _) = try Self.replay(june2020, ["cwa"])
        #expect(old.status == 0, "\(old.stderr)")
        #expect(old.stderr.contains("warning: cwa: the contacts' latest day is 2020-06-02") && old.stderr.contains("(v3.2.1, 2022)")
                && old.stderr.contains("--rule cwa-v1"), "\(old.stderr)")
        // 20 minutes at 65 dB, confirmed test (TRL 7): low under 2020-11-30's file, high from 2021-03-18 (docs/risk.md).
        let march = try Self.histogram(dir, "label,distance,date,64-66\nclose,1,2021-03-20,20\n", trl: 7)
        let (r, rules) = try Self.replay(march, ["cwa"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("cwa: the contacts' latest day is 2021-03-20: using the configuration published in force that day"), "\(r.stderr)")
        #expect(r.stderr.contains("published configuration cwa 2021-03-18"), "\(r.stderr)")
        #expect(rules.first?["notified"] as? Int == 1)
        let (dated, d) = try Self.replay(march, ["cwa@2020-12-01"])
        #expect(dated.status == 0 && d.first?["notified"] as? Int == 0, "\(dated.stderr) \(d)")
    }

    @Test func csvGivenForJSONWindowsSaysSo() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // An NHS recording saved with a header line reads as the recording.
        let headed = dir.appendingPathComponent("scan.csv")
        try Data("secondsSinceLastScan,attenuation\n0,55.5\n240,58.25\n240,60\n".utf8).write(to: headed)
        let bare = dir.appendingPathComponent("bare.csv")
        try Data("0,55.5\n240,58.25\n240,60\n".utf8).write(to: bare)
        let config = "\(RiskCommandTests.fixtures)/nhs/exposure-configuration.json"
        let a = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", config, "--windows", headed.path])
        let b = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", config, "--windows", bare.path])
        #expect(a.status == 0 && a.stdout == b.stdout, "\(a.stderr)")
        // Another CSV is named as CSV, not "not valid JSON".
        let other = dir.appendingPathComponent("other.csv")
        try Data("time,rssi\n1,-60\n".utf8).write(to: other)
        let r = try CLI.run("gaenctl", ["risk", "swisscovid", "--windows", other.path])
        #expect(r.status != 0 && r.stderr.contains("looks like CSV (first line 'time,rssi')") && !r.stderr.contains("not valid JSON"), "\(r.stderr)")
    }

    @Test func reportNumbersAreWrittenAsTheInputGaveThem() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let att = dir.appendingPathComponent("att.csv").path
        let i = try CLI.run("gaenctl", ["trial", "import", "rssi", "\(Self.examples)/mitll-rssi-zoneless.csv", "--tx-power", "-20", "--distance-column", "range_ft",
                                        "--distance-scale", "0.3048", "--receiver-column", "rx_phone", "--transmitter-column", "tx_phone",
                                        "--timezone", "UTC", "-o", att])
        #expect(i.status == 0, "\(i.stderr)")
        // 3, 6 and 12 ft.
        #expect(Set(try TrialImportReplayTests.rows(att).compactMap { $0["distance"] }) == ["0.9144", "1.8288", "3.6576"])
        let out = dir.appendingPathComponent("report").path
        let r = try CLI.run("gaenctl", ["trial", "report", "--attenuations", att, "--thresholds", "57.5,63", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        let receivers = try String(contentsOfFile: "\(out)/receivers.csv", encoding: .utf8)
        #expect(receivers.contains(",0.9144,") && !receivers.contains("0.9144000000000001"), "\(receivers)")
        let plot = try String(contentsOfFile: "\(out)/plot.svg", encoding: .utf8)
        #expect(plot.contains(">57.5 dB</text>") && !plot.contains(">57 dB</text>"), "threshold label")
    }
}
