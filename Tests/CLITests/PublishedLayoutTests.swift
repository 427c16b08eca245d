import Foundation
import Testing

/// The importers on fixtures in the layouts as published: Google's calibration tables with
/// their long headers (two generations), zone-less timestamps, gzip files, dataset-named device
/// columns, several DP-3T scenarios.
@Suite struct PublishedLayoutTests {
    static let examples = TrialImportReplayTests.examples

    static func gzip(_ source: String, to path: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "gzip -n -c \"$0\" > \"$1\"", source, path]
        try p.run(); p.waitUntilExit()
        try #require(p.terminationStatus == 0)
    }

    @Test func calibrationTablesAsPublishedPickedByDate() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let june = "\(Self.examples)/en-calibration-2020-06.csv", december = "\(Self.examples)/en-calibration-2020-12.csv"
        let input = "\(Self.examples)/dp3t-results.csv"
        // Two tables and no date: refused, naming both dates.
        let out = dir.appendingPathComponent("att.csv").path
        let refused = try CLI.run("gaenctl", ["trial", "import", "dp3t", input, "--calibration", june, "--calibration", december, "-o", out])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("2020-06-01, 2020-12-01") && refused.stderr.contains("--calibration-date"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))

        // June's table (the one in force in July 2020): Pixel 3a is a generic row there.
        let r1 = try CLI.run("gaenctl", ["trial", "import", "dp3t", input, "--calibration", june, "--calibration", december,
                                         "--calibration-date", "2020-07-15", "-o", out])
        #expect(r1.status == 0, "\(r1.stderr)")
        #expect(r1.stderr.contains("table of 2020-06-01"), "\(r1.stderr)")
        #expect(r1.stderr.contains("3 models used, 2 measured (SM-G960F: 3 rx, 1 tx; iPhone 8: 1 rx, 1 tx), 1 generic (Pixel 3a: 0 rx, 2 tx); 2 of 4 rows use a generic value"), "\(r1.stderr)")
        let juneRows = try TrialImportReplayTests.rows(out)
        #expect(juneRows.map { $0["attenuation"] } == ["35", "37", "63", "44"])
        #expect(juneRows.map { $0["calibration_measured"] } == ["no", "no", "yes", "yes"])
        // tx_power is the TX the attenuation used; the row's own stays beside it.
        #expect(juneRows[0]["tx_power"] == "-30" && juneRows[0]["reported_tx_power"] == "-21")

        // December's: other values, every row measured.
        let r2 = try CLI.run("gaenctl", ["trial", "import", "dp3t", input, "--calibration", june, "--calibration", december,
                                         "--calibration-date", "2021-01-10", "-o", out])
        #expect(r2.status == 0, "\(r2.stderr)")
        #expect(r2.stderr.contains("table of 2020-12-01") && r2.stderr.contains("0 of 4 rows use a generic value"), "\(r2.stderr)")
        // -29 - (-70 + 4), -29 - (-72 + 4), -12 - (-80 + 4) (the corrected transmitter model, iPhone 8), -25 - (-65 - 3).
        #expect(try TrialImportReplayTests.rows(out).map { $0["attenuation"] } == ["37", "39", "64", "43"])

        // A date before every table.
        let early = try CLI.run("gaenctl", ["trial", "import", "dp3t", input, "--calibration", june, "--calibration", december,
                                            "--calibration-date", "2020-05-01", "-o", out])
        #expect(early.status != 0 && early.stderr.contains("no calibration table dated on or before 2020-05-01"), "\(early.stderr)")
    }

    @Test func dp3tScenariosStayApart() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("01_office.csv").path, b = dir.appendingPathComponent("02_train.csv.gz").path
        try FileManager.default.copyItem(atPath: "\(Self.examples)/dp3t-results.csv", toPath: a)
        try Self.gzip("\(Self.examples)/dp3t-results.csv", to: b)
        let out = dir.appendingPathComponent("att.csv").path
        let r = try CLI.run("gaenctl", ["trial", "import", "dp3t", a, b, "--calibration", "\(Self.examples)/en-calibration-2020-06.csv", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("14 rows read, 8 written") && r.stderr.contains("2 scenarios"), "\(r.stderr)")
        let rows = try TrialImportReplayTests.rows(out)
        #expect(rows.map { $0["scenario"]! } == Array(repeating: "01_office", count: 4) + Array(repeating: "02_train", count: 4))
        // The report takes one scenario with --site.
        let report = try CLI.run("gaenctl", ["trial", "report", "--attenuations", out, "--site", "02_train", "-o", dir.appendingPathComponent("rep").path])
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.hasPrefix("4 sightings with ground truth"), "\(report.stdout)")
        let md = try String(contentsOfFile: dir.appendingPathComponent("rep/report.md").path, encoding: .utf8)
        #expect(md.contains("02_train"))
        // attenuation.csv carries the TX the import used (the calibration's -30 for Pixel 3a), not the reported -21.
        let att = try TrialImportReplayTests.rows(dir.appendingPathComponent("rep/attenuation.csv").path)
        #expect(att.first?["tx_power"] == "-30", "\(att.first ?? [:])")
    }

    @Test func zonelessTimesNeedAZone() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("att.csv").path
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: out))
        let args = ["trial", "import", "rssi", "\(Self.examples)/mitll-rssi-zoneless.csv", "--tx-power", "-20", "--distance-column", "range_ft",
                    "--distance-scale", "0.3048", "--receiver-column", "rx_phone", "--transmitter-column", "tx_phone", "-o", out]
        let refused = try CLI.run("gaenctl", args)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("mitll-rssi-zoneless.csv:2: column 'timestamp'") && refused.stderr.contains("2020-05-11 12:40:06.223")
                && refused.stderr.contains("--timezone"), "\(refused.stderr)")
        // A failed import leaves the existing output alone.
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "keep me\n")

        let r = try CLI.run("gaenctl", args + ["--timezone", "America/New_York"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try TrialImportReplayTests.rows(out)
        // 12:40:06.223 EDT (UTC-4) is 16:40:06.223 UTC.
        #expect(rows.map { $0["time"] } == ["1589215206.223", "1589215207.101", "1589215270.5", "1589215335.01"])
        #expect(rows.map { $0["receiver"] } == ["pixel2-a", "pixel2-a", "pixel2-a", "galaxyS9-b"])
        #expect(rows.map { $0["transmitter"] } == ["galaxyS9-b", "galaxyS9-b", "galaxyS9-b", "pixel2-a"])
        #expect(rows.map { $0["tx_power"] } == ["-20", "-20", "-20", "-20"])
    }

    @Test func gzipTableReadDirectly() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("att.csv").path
        let r = try CLI.run("gaenctl", ["trial", "import", "rssi", "\(Self.examples)/mitll-rssi-zoneless.csv.gz", "--tx-power", "-20",
                                        "--distance-column", "range_ft", "--receiver-column", "rx_phone", "--transmitter-column", "tx_phone",
                                        "--timezone", "UTC", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("5 rows read, 4 written, 1 dropped"), "\(r.stderr)")
        #expect(try TrialImportReplayTests.rows(out).first?["time"] == "1589200806.223")
        // A truncated gzip file is named as such, not printed.
        let cut = dir.appendingPathComponent("cut.csv.gz").path
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(Self.examples)/mitll-rssi-zoneless.csv.gz"))
        try bytes.prefix(bytes.count - 12).write(to: URL(fileURLWithPath: cut))
        let bad = try CLI.run("gaenctl", ["trial", "import", "rssi", cut, "--tx-power", "-20", "-o", out])
        #expect(bad.status != 0 && bad.stderr.contains("truncated"), "\(bad.stderr)")
    }
}
