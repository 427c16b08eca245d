import Foundation
import Testing

/// trial report's attenuation rows as JSON lines (--attenuation-format jsonl), read back by
/// --attenuations: the same report, and bad lines named by file, line and field.
@Suite struct AttenuationJSONLinesTests {
    @Test func jsonLinesRoundTripGivesTheSameReport() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        var csv = "time,receiver,transmitter,distance,attenuation,rpi,tx_power,rssi,rssi_correction\n"
        for i in 0..<60 {
            let d = [0.499999, 1.4999999, 1.5000001, 1.999, 2.0000004, 3.3333333, 7.125][i % 7]
            csv += "\(1_700_000_000 + i),\"rx \"\"1\"\"\",tx\(i % 3),\(d),\(48 + (i * 7) % 30).25,\(i % 2 == 0 ? "00112233445566778899aabbccddeeff" : ""),-20,\(-70 - i % 5),\(i % 3)\n"
        }
        let input = dir.appendingPathComponent("in.csv")
        try csv.write(to: input, atomically: true, encoding: .utf8)
        let a = dir.appendingPathComponent("a"), b = dir.appendingPathComponent("b"), c = dir.appendingPathComponent("c")
        let ra = try CLI.run("gaenctl", ["trial", "report", "--attenuations", input.path, "--close-contact", "1.5", "-o", a.path])
        let rb = try CLI.run("gaenctl", ["trial", "report", "--attenuations", input.path, "--close-contact", "1.5", "--attenuation-format", "jsonl", "-o", b.path])
        let rc = try CLI.run("gaenctl", ["trial", "report", "--attenuations", b.appendingPathComponent("attenuation.jsonl").path,
                                         "--close-contact", "1.5", "-o", c.path])
        #expect(ra.status == 0 && rb.status == 0 && rc.status == 0, "\(ra.stderr) \(rb.stderr) \(rc.stderr)")
        #expect(!FileManager.default.fileExists(atPath: b.appendingPathComponent("attenuation.csv").path))
        let lines = try String(contentsOf: b.appendingPathComponent("attenuation.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 60)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(Set(first.keys) == ["time", "receiver", "transmitter", "distance", "attenuation", "site", "rpi", "txPower", "rssi", "rssiCorrection"])
        #expect(first["receiver"] as? String == "rx \"1\"" && first["distance"] as? Double == 0.499999 && first["txPower"] as? Int == -20)
        // Every table and the attenuation rows are the same, whichever form went in between.
        for f in ["report.json", "report.md", "distances.csv", "fit.csv", "detection.csv", "curve.csv", "attenuation.csv"] {
            #expect(try TrialImportReplayTests.numbers(a, f) == TrialImportReplayTests.numbers(c, f), "\(f)")
        }
    }

    @Test func badJSONLinesAreNamed() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (line, message) in [
            ("{\"time\":1,\"attenuation\":-127,\"distance\":1}", "column 'attenuation' expected dB in -70...147"),
            ("{\"time\":1,\"attenuation\":true,\"distance\":1}", "column 'attenuation' expected a number"),
            ("{\"time\":1,\"attenuation\":60,\"distance\":-1}", "column 'distance' expected metres >= 0"),
            ("{\"time\":1,\"attenuation\":60,\"distance\":1,\"rssi\":1.5}", "column 'rssi' expected an integer"),
            ("{\"attenuation\":60}", "column 'time' expected Unix seconds"),
            ("{not json", "expected a JSON object"),
        ] {
            let f = dir.appendingPathComponent("bad.jsonl")
            try "{\"time\":0,\"attenuation\":50,\"distance\":1}\n\(line)\n".write(to: f, atomically: true, encoding: .utf8)
            let r = try CLI.run("gaenctl", ["trial", "report", "--attenuations", f.path, "-o", dir.appendingPathComponent("out").path])
            #expect(r.status == 1 && r.stderr.contains("bad.jsonl:2:") && r.stderr.contains(message), "\(line): \(r.stderr)")
        }
    }
}
