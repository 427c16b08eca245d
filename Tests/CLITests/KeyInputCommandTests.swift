import ENProtocol
import Foundation
import Testing

/// Every command that takes key files takes export ZIPs, bare export.bin files and JSON key lists
/// (`match` and `windows` once refused JSON key lists and described them as hex).
@Suite struct KeyInputCommandTests {
    @Test func matchAndWindowsTakeEveryKeyInput() throws {
        let s = try MatchCommandTests().setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let file = try KeyExportFile(parsing: Data(contentsOf: URL(fileURLWithPath: s.keys)))
        let bin = s.dir.appendingPathComponent("visitor.bin")
        try file.exportBin.write(to: bin)
        // The JSON key list, with report types by name as `keys create` takes them.
        let list = s.dir.appendingPathComponent("visitor.json")
        let keys = file.keyBatches().flatMap { $0 }
        let names = ["UNKNOWN", "CONFIRMED_TEST", "CONFIRMED_CLINICAL_DIAGNOSIS", "SELF_REPORT", "RECURSIVE", "REVOKED"]
        let json: [[String: Any]] = keys.map { k in
            var o: [String: Any] = ["keyData": k.key.hexString, "rollingStartIntervalNumber": k.rollingStartIntervalNumber.rawValue,
                                    "rollingPeriod": k.rollingPeriod]
            if let r = k.reportType { o["reportType"] = names[r.rawValue] }
            if let t = k.transmissionRiskLevel { o["transmissionRiskLevel"] = t }
            if let d = k.daysSinceOnsetOfSymptoms { o["daysSinceOnsetOfSymptoms"] = d }
            return o
        }
        try JSONSerialization.data(withJSONObject: json).write(to: list)
        let reference = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", s.keys])
        let windows = try CLI.run("gaenctl", ["windows", "--sightings", s.sightings, "--keys", s.keys])
        #expect(reference.status == 0 && windows.status == 0)
        for path in [bin.path, list.path] {
            let m = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", path])
            #expect(m.status == 0, "\(path): \(m.stderr)")
            let stem = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
            #expect(m.stdout == reference.stdout.replacingOccurrences(of: "\"transmitter\":\"keys\"", with: "\"transmitter\":\"\(stem)\""), "\(path)")
            let w = try CLI.run("gaenctl", ["windows", "--sightings", s.sightings, "--keys", path])
            #expect(w.status == 0 && w.stdout == windows.stdout, "\(path): \(w.stderr)")
        }
        // A JSON list has no signature: with --trust it is refused, saying why.
        let trusted = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", list.path, "--trust", "test:v1=\(s.pem)"])
        #expect(trusted.status == 1 && trusted.stderr.contains("JSON key list carries no signature"), "\(trusted.stderr)")
        // A broken list names the key and field.
        try #"[{"keyData":"00112233445566778899aabbccddeeff","rollingStartIntervalNumber":1,"reportType":"POSITIVE"}]"#
            .write(to: list, atomically: true, encoding: .utf8)
        let bad = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", list.path])
        #expect(bad.status == 1 && bad.stderr.contains("visitor.json[0].reportType: unknown name 'POSITIVE'"), "\(bad.stderr)")
    }
}
