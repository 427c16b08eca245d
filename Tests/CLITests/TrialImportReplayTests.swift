import Foundation
import Testing
import TrialFormats

/// `gaenctl trial import ...` on small fixtures in the published layouts
/// (docs/trial-examples/), `trial replay` on a histogram fixture with answers worked out by
/// hand, and the report -> attenuation.csv -> report round trip.
@Suite struct TrialImportReplayTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/trial-examples").standardized.path

    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("trial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    static func rows(_ path: String) throws -> [[String: String]] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(lines[0], $0)) }
    }

    @Test func dp3tTablesWithCalibration() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("att.csv").path
        let r = try CLI.run("gaenctl", ["trial", "import", "dp3t", "\(Self.examples)/dp3t-results.csv",
                                        "--calibration", "\(Self.examples)/en-calibration-2020-06.csv", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("7 rows read, 4 written, 3 dropped"), "\(r.stderr)")
        #expect(r.stderr.contains("1 without ground truth distance") && r.stderr.contains("1 transmitter model not in the calibration table")
                && r.stderr.contains("1 without an RSSI") && r.stderr.contains("1 transmitter models corrected"), "\(r.stderr)")
        let rows = try Self.rows(out)
        // TX of the transmitter's model - (RSSI + the receiver's correction); SM-G960F/DS is SM-G960F (+5).
        #expect(rows.map { $0["attenuation"] } == ["35", "37", "63", "44"])
        #expect(rows.map { $0["transmitter_model"] } == ["Pixel 3a", "Pixel 3a", "iPhone 8", "SM-G960F"])
        #expect(rows[0]["time"] == "1591005600" && rows[0]["distance"] == "1.5" && rows[0]["receiver"] == "r1" && rows[0]["transmitter"] == "t1")
        // The output is what trial report --attenuations reads.
        let report = try CLI.run("gaenctl", ["trial", "report", "--attenuations", out, "-o", dir.appendingPathComponent("rep").path])
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.hasPrefix("4 sightings with ground truth"))
    }

    @Test func dp3tSQLiteTable() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("results.sqlite").path
        // The CSV fixture loaded into a SQLite table as the DP-3T repository ships them.
        let sql = try Self.rows("\(Self.examples)/dp3t-results.csv").map { r in
            let cols = ["receiver_id", "receiver_model", "transmitter_id", "transmitter_model", "timestamp", "rssi", "tx_power", "ground_truth_distance"]
            return "INSERT INTO results VALUES (" + cols.map { c in
                let v = r[c] ?? ""
                return v.isEmpty ? "NULL" : (Double(v) != nil ? v : "'\(v)'")
            }.joined(separator: ",") + ");"
        }.joined(separator: "\n")
        let create = "CREATE TABLE results (receiver_id TEXT, receiver_model TEXT, transmitter_id TEXT, transmitter_model TEXT, timestamp INTEGER, rssi INTEGER, tx_power INTEGER, ground_truth_distance REAL);\n"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", db, create + sql]
        try p.run(); p.waitUntilExit()
        try #require(p.terminationStatus == 0)
        let out = dir.appendingPathComponent("att.csv").path
        let r = try CLI.run("gaenctl", ["trial", "import", "dp3t", db, "--calibration", "\(Self.examples)/en-calibration-2020-06.csv", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.rows(out).map { $0["attenuation"] } == ["35", "37", "63", "44"])
    }

    @Test func rawRSSITableWithTheSentinel() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("att.csv").path
        let r = try CLI.run("gaenctl", ["trial", "import", "rssi", "\(Self.examples)/mitll-rssi.csv", "--tx-power", "-20", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("6 rows read, 4 written, 2 dropped") && r.stderr.contains("1 with RSSI 127 (not available)"), "\(r.stderr)")
        let rows = try Self.rows(out)
        #expect(rows.map { $0["attenuation"] } == ["35", "41", "50", "62.5"])
        #expect(rows.map { $0["distance"] } == ["0.5", "1", "2", "8"])
    }

    func importHistogram(_ dir: URL, _ extra: [String] = []) throws -> String {
        let out = dir.appendingPathComponent("contacts\(extra.joined()).json").path
        let r = try CLI.run("gaenctl", ["trial", "import", "histogram", "\(Self.examples)/histogram.csv", "--transmission-risk-level", "8", "-o", out] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("10 rows read, 8 written, 2 dropped (1 with no minutes in any bin; 1 without a distance)"), "\(r.stderr)")
        return out
    }

    @Test func histogramBecomesOneWindowPerRowAtBinMidpoints() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = try importHistogram(dir)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any])
        let contacts = try #require(doc["contacts"] as? [[String: Any]])
        #expect(contacts.count == 8)
        #expect(contacts[2]["label"] as? String == "A/D 2 m" && contacts[2]["distance"] as? Double == 2)
        let windows = try #require(contacts[2]["windows"] as? [[String: Any]])
        #expect(windows.count == 1 && windows[0]["transmissionRiskLevel"] as? Int == 8 && windows[0]["dateMillisSinceEpoch"] as? Int == 1_590_969_600_000)
        let scans = try #require(windows[0]["scanInstances"] as? [[String: Any]])
        // 8 minutes at 50-52 (midpoint 51) and 10 at 60-62 (61), in instances of at most 300 s.
        #expect(scans.map { $0["minAttenuationDb"] as? Int } == [51, 51, 61, 61])
        #expect(scans.map { $0["secondsSinceLastScan"] as? Int } == [300, 180, 300, 300])
    }

    @Test func replayAgainstGroundTruthGivesTheWorkedOutAnswers() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let contacts = try importHistogram(dir)
        let r = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "cwa", "--rule", "cwa-v1", "--rule", "swisscovid",
                                        "--rule", "immuni", "--rule", "nhs", "--close-contact", "2", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let rules = try #require((try CLI.json(r.stdout) as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(rules.count == 5 && rules.allSatisfy { Set($0.keys) == ["rule", "notified", "close", "far", "truePositives", "falsePositives", "tpr", "fpr", "precision", "warnings",
                                                                        "closeContact", "accuracy"] })
        // Each rule's intervals: 8 contacts, each its own cluster (the histogram import names none).
        #expect(rules.allSatisfy { ($0["accuracy"] as? [String: Any])?["clusters"] as? Int == 8 && $0["closeContact"] as? Int == 2 })
        func check(_ i: Int, _ name: String, notified: Int, tp: Int, fp: Int) {
            let x = rules[i]
            #expect(x["rule"] as? String == name)
            #expect(x["close"] as? Int == 4 && x["far"] as? Int == 4, "\(name)")
            #expect(x["notified"] as? Int == notified && x["truePositives"] as? Int == tp && x["falsePositives"] as? Int == fp, "\(name): \(x)")
            #expect(abs((x["tpr"] as? Double ?? -1) - Double(tp) / 4) < 1e-12 && abs((x["fpr"] as? Double ?? -1) - Double(fp) / 4) < 1e-12, "\(name)")
            if notified == 0 { #expect(x["precision"] is NSNull) } else {
                #expect(abs((x["precision"] as? Double ?? -1) - Double(tp) / Double(notified)) < 1e-12, "\(name)")
            }
        }
        // Worked by hand (docs/trial.md, "trial replay"): close = 1, 1.5, 2 m and the short 1 m contact.
        // cwa (current): normalized time = minutes x weight (0.8 below 63 dB, 1.0 to 73) x 1.4 >= 9: contacts 1-5 and 8 (63 dB, 9.8).
        check(0, "cwa", notified: 6, tp: 3, fp: 3)
        // cwa-v1: 1 (20 min below 55 dB: 32 weighted minutes) and 3 (8 + 10/2 = 13 x 40/25 = 20.8).
        check(1, "cwa-v1", notified: 2, tp: 2, fp: 0)
        // swisscovid: only contact 1 reaches 15 weighted minutes (contact 3: 8 + 10 x 0.5 = 13).
        check(2, "swisscovid", notified: 1, tp: 1, fp: 0)
        // immuni: score 15 needs > 15 bucketized minutes at <= 63 dB: contacts 1 and 3.
        check(3, "immuni", notified: 2, tp: 2, fp: 0)
        #expect(rules[4]["rule"] as? String == "nhs")
        // Bins at their low edge: contact 8 at 62 dB weighs 0.8 in cwa (7.84 < 9): one false positive fewer.
        let low = try importHistogram(dir, ["--at", "low"])
        let lr = try CLI.run("gaenctl", ["trial", "replay", "--contacts", low, "--rule", "cwa", "--close-contact", "2", "--json"])
        let lrules = try #require((try CLI.json(lr.stdout) as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(lrules[0]["falsePositives"] as? Int == 2 && lrules[0]["truePositives"] as? Int == 3)
        // The table form.
        let table = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "swisscovid", "--close-contact", "2"])
        #expect(table.status == 0 && table.stdout.contains("swisscovid") && table.stdout.contains("8 contacts"), "\(table.stdout)")
        // A rule without a published configuration says so.
        let bad = try CLI.run("gaenctl", ["trial", "replay", "--contacts", contacts, "--rule", "gaen-v1", "--close-contact", "2"])
        #expect(bad.status == 1 && bad.stderr.contains("gaen-v1 has no published configuration"), "\(bad.stderr)")
    }

    @Test func reportAttenuationCSVRoundTripGivesIdenticalNumbers() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Distances with more than 2 decimals, on both sides of the 1.5 m and 2 m boundaries.
        var csv = "time,receiver,transmitter,distance,attenuation\n"
        for i in 0..<60 {
            let d = [0.499999, 1.4999999, 1.5000001, 1.999, 2.0000004, 3.3333333, 7.125][i % 7]
            csv += "\(1_700_000_000 + i),rx,tx\(i % 3),\(d),\(48 + (i * 7) % 30).25\n"
        }
        let input = dir.appendingPathComponent("in.csv")
        try csv.write(to: input, atomically: true, encoding: .utf8)
        let a = dir.appendingPathComponent("a"), b = dir.appendingPathComponent("b")
        let ra = try CLI.run("gaenctl", ["trial", "report", "--attenuations", input.path, "--close-contact", "1.5", "-o", a.path])
        let rb = try CLI.run("gaenctl", ["trial", "report", "--attenuations", a.appendingPathComponent("attenuation.csv").path,
                                         "--close-contact", "1.5", "-o", b.path])
        #expect(ra.status == 0 && rb.status == 0, "\(ra.stderr) \(rb.stderr)")
        for f in ["report.json", "report.md", "distances.csv", "fit.csv", "detection.csv", "attenuation.csv", "curve.csv"] {
            #expect(try Self.numbers(a, f) == Self.numbers(b, f), "\(f) differs after the round trip")
        }
    }

    /// A report file without the input files it names (a round trip reads another file:
    /// in.csv, then attenuation.csv), for comparing what was computed.
    static func numbers(_ dir: URL, _ f: String) throws -> Data {
        let data = try Data(contentsOf: dir.appendingPathComponent(f))
        if f == "report.json" {
            var o = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(o.removeValue(forKey: "sources") != nil)
            return try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
        }
        if f == "report.md" {
            let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.contains { $0.hasPrefix("Sources: data: ") })
            return Data(lines.filter { !$0.hasPrefix("Sources: ") }.joined(separator: "\n").utf8)
        }
        return data
    }

    @Test func trialReportTakesKeyListsWithReportTypeNamesAndRefusesSentinels() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("phone-1.json")
        try #"[{"keyData":"00112233445566778899aabbccddeeff","rollingStartIntervalNumber":2650000,"reportType":"CONFIRMED_TEST"}]"#
            .write(to: keys, atomically: true, encoding: .utf8)
        let sightings = dir.appendingPathComponent("board.csv")
        try "time,rpi,aem,rssi\n".write(to: sightings, atomically: true, encoding: .utf8)
        let r = try CLI.run("gaenctl", ["trial", "report", "--sightings", sightings.path, "--keys", keys.path, "-o", dir.appendingPathComponent("r").path])
        #expect(r.status == 0, "\(r.stderr)")
        let att = dir.appendingPathComponent("att.csv")
        try "time,attenuation,distance\n1,50,1\n2,-127,1\n".write(to: att, atomically: true, encoding: .utf8)
        let bad = try CLI.run("gaenctl", ["trial", "report", "--attenuations", att.path, "-o", dir.appendingPathComponent("s").path])
        #expect(bad.status == 1 && bad.stderr.contains("att.csv:3: column 'attenuation'"), "\(bad.stderr)")
    }
}
