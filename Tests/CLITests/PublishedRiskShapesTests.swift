import Foundation
import Testing

/// `trial replay` explaining itself (warnings, --per-contact) and the risk commands on the
/// files as the apps and datasets publish them: configuration files with `#` comment lines,
/// the CWA v1 configuration in protobuf text format, the CWA test-case windows, the NHS
/// headerless scan-instance recordings.
@Suite struct PublishedRiskShapesTests {
    static let examples = TrialImportReplayTests.examples
    static let fixtures = RiskCommandTests.fixtures

    func contacts(_ dir: URL, _ extra: [String]) throws -> String {
        let out = dir.appendingPathComponent("contacts.json").path
        let r = try CLI.run("gaenctl", ["trial", "import", "histogram", "\(Self.examples)/histogram.csv", "-o", out] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        return out
    }

    @Test func replayWarnsAboutMissingLevelsAndShowsTheNumbersPerContact() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Without a transmission risk level: cwa-v1 weighs levels 1...8 differently, so it cannot judge them as the app.
        let bare = try contacts(dir, [])
        let warned = try CLI.run("gaenctl", ["trial", "replay", "--contacts", bare, "--rule", "cwa-v1", "--rule", "swisscovid", "--close-contact", "2"])
        #expect(warned.status == 0, "\(warned.stderr)")
        #expect(warned.stderr.contains("warning: cwa-v1: 8 of 8 contacts have windows without a transmission risk level"), "\(warned.stderr)")
        #expect(!warned.stderr.contains("warning: swisscovid"), "\(warned.stderr)")

        let withLevel = try contacts(dir, ["--transmission-risk-level", "8"])
        let r = try CLI.run("gaenctl", ["trial", "replay", "--contacts", withLevel, "--rule", "cwa-v1", "--rule", "swisscovid", "--rule", "immuni",
                                        "--close-contact", "2", "--per-contact", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("warning"), "\(r.stderr)")
        let doc = try #require(try CLI.json(r.stdout) as? [String: Any])
        let list = try #require(doc["contacts"] as? [[String: Any]])
        #expect(list.count == 8)
        // Contact 2 (A/D 2 m): 8 minutes at 51 dB and 10 at 61 dB.
        #expect(list[2]["label"] as? String == "A/D 2 m" && list[2]["close"] as? Bool == true)
        let verdicts = try #require(list[2]["verdicts"] as? [[String: Any]])
        func numbers(_ i: Int) -> [String: Double] { verdicts[i]["numbers"] as? [String: Double] ?? [:] }
        // cwa-v1: (8 + 10 x 0.5) x 40 / 25 = 20.8 weighted minutes, at least 15: increased risk.
        #expect(verdicts[0]["rule"] as? String == "cwa-v1" && verdicts[0]["notified"] as? Bool == true)
        #expect(abs((numbers(0)["weightedMinutes"] ?? 0) - 20.8) < 1e-9 && numbers(0)["increasedRiskMinutes"] == 15, "\(numbers(0))")
        // swisscovid: 8 x 1.0 + 10 x 0.5 = 13 weighted minutes, under 15: not notified.
        #expect(verdicts[1]["notified"] as? Bool == false)
        #expect(numbers(1)["weightedMinutes"] == 13 && numbers(1)["minutesLow"] == 8 && numbers(1)["minutesMedium"] == 10
                && numbers(1)["minDurationForExposure"] == 15, "\(numbers(1))")
        // immuni: 18 minutes bucketised to 20 (> 15), mean attenuation 56.5 -> 57 dB (<= 63): 3 x 5 = 15.
        #expect(verdicts[2]["notified"] as? Bool == true && numbers(2)["bucketizedMinutes"] == 20 && numbers(2)["maximumRiskScore"] == 15, "\(numbers(2))")
        // The table form lists each contact and rule.
        let table = try CLI.run("gaenctl", ["trial", "replay", "--contacts", withLevel, "--rule", "swisscovid", "--close-contact", "2", "--per-contact"])
        #expect(table.stdout.contains("#2 A/D 2 m  2 m  close  swisscovid  not notified  weightedMinutes=13 minDurationForExposure=15 minutesLow=8 minutesMedium=10"),
                "\(table.stdout)")
    }

    /// A contacts file as a dataset ships it, with `#` comment lines above the JSON (indented
    /// ones too): read as the same file without them.
    @Test func contactsFileWithCommentLines() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = try contacts(dir, ["--transmission-risk-level", "8"])
        let commented = dir.appendingPathComponent("commented.json")
        let text = try String(contentsOfFile: plain, encoding: .utf8)
        try ("# Office trial contacts, exported with trial import histogram\n  # distances in metres\n" + text)
            .write(to: commented, atomically: true, encoding: .utf8)
        let args = ["--rule", "cwa-v1", "--rule", "immuni", "--close-contact", "2", "--per-contact", "--json"]
        let a = try CLI.run("gaenctl", ["trial", "replay", "--contacts", plain] + args)
        let b = try CLI.run("gaenctl", ["trial", "replay", "--contacts", commented.path] + args)
        #expect(a.status == 0 && b.status == 0, "\(b.stderr)")
        #expect(!a.stdout.isEmpty && b.stdout == a.stdout)
    }

    @Test func cwaV1InProtobufTextFormatAndCommentedJSON() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = "\(Self.examples)/cwa-v1-app-config.textproto"
        // The text format gives the same answers as the JSON configuration (the worked example).
        let r = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", text,
                                        "--windows", "\(Self.fixtures)/cwa-v1/windows-2020-09-22.json", "--today", "2020-09-22"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(o["weightedMinutes"] as? Double == 48 && o["increasedRisk"] as? Bool == true && o["maximumRiskScore"] as? Int == 40, "\(o)")
        // And in replay, the same verdicts as the built-in mid-2020 configuration.
        let contacts = try contacts(dir, ["--transmission-risk-level", "8"])
        let a = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "cwa-v1=\(text)", "--rule", "cwa-v1", "--close-contact", "2", "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        let rules = try #require((try CLI.json(a.stdout) as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(rules[0]["notified"] as? Int == 2 && rules[1]["notified"] as? Int == 2 && rules[0]["truePositives"] as? Int == 2)
        // A broken text file names its line.
        let broken = dir.appendingPathComponent("broken.textproto")
        try "minRiskScore: 11\nexposureConfig {\n  transmission { app_defined_1: RISK_LEVEL_SOMETIMES }\n".write(to: broken, atomically: true, encoding: .utf8)
        let b = try CLI.run("gaenctl", ["risk", "cwa-v1", "--configuration", broken.path, "--windows", "\(Self.fixtures)/cwa-v1/windows-2020-09-22.json", "--today", "2020-09-22"])
        #expect(b.status == 1 && b.stderr.contains("line 4: message never closed"), "\(b.stderr)")
        // JSON configurations with a leading comment line, as datasets ship them.
        let commented = dir.appendingPathComponent("swisscovid.json")
        try "# SwissCovid thresholds of September 2020\n# (DP-3T SDK f6bb902)\n{\"attenuationThresholdLow\": 55, \"attenuationThresholdMedium\": 63, \"attenuationFactorLow\": 1.0, \"attenuationFactorMedium\": 0.5, \"minDurationForExposure\": 15}\n"
            .write(to: commented, atomically: true, encoding: .utf8)
        let c = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "swisscovid=\(commented.path)", "--close-contact", "2", "--json"])
        #expect(c.status == 0, "\(c.stderr)")
        let crules = try #require((try CLI.json(c.stdout) as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(crules[0]["notified"] as? Int == 1)
        let risk = try CLI.run("gaenctl", ["risk", "swisscovid", "--configuration", commented.path, "--windows", "\(Self.fixtures)/cwa-v1/windows-2020-09-22.json"])
        #expect(risk.status == 0, "\(risk.stderr)")
    }

    @Test func riskCommandsReadTheAppsTestShapes() throws {
        let cases = "\(Self.fixtures)/cwa/exposure-windows-risk-calculation.json"
        // The whole test-case file: its configuration as --parameters, one case as --windows.
        let none = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", cases, "--windows", cases])
        #expect(none.status != 0 && none.stderr.contains("pick one with --test-case"), "\(none.stderr)")
        let r = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", cases, "--windows", cases, "--test-case", "3", "--today", "2020-12-01"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        // Case 3, "keep Exposure Windows (< 73 dB)": expTotalRiskLevel 2, high risk 1 day ago, one high-risk day.
        #expect(o["totalRiskLevel"] as? Int == 2 && o["mostRecentDateWithHighRisk"] as? String == "2020-11-30"
                && o["numberOfDaysWithHighRisk"] as? Int == 1, "\(o)")
        // An NHS scan-instance recording, headerless secondsSinceLastScan,attenuation: one window,
        // scored within 5 % of the Python model's score_16 (12.242712672039051).
        let nhs = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", "\(Self.fixtures)/nhs/exposure-configuration.json",
                                          "--windows", "\(Self.fixtures)/nhs/ScanInstances/high-427-thetahigh;3.27,-6.61.csv"])
        #expect(nhs.status == 0, "\(nhs.stderr)")
        let windows = try #require((try CLI.json(nhs.stdout) as? [String: Any])?["windows"] as? [[String: Any]])
        let score = try #require(windows.first?["score"] as? Double)
        #expect(windows.count == 1 && abs(score - 12.242712672039051) < 0.05 * 12.242712672039051, "\(score)")
    }
}
