import Foundation
import Testing

@Suite("Key files that are not regular files")
struct KeyFileSpecialFilesTests {
    @Test("keys inspect: a directory and a FIFO are refused at once, saying what they are (issue 29, 10)")
    func directoryAndFIFO() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-keyfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run("gaenctl", ["keys", "inspect", dir.path])
        #expect(r.status == 1 && r.stderr == "gaenctl keys inspect: \(dir.path) is a directory, not a regular file\n", "\(r.stderr)")
        #expect(!r.stderr.contains("NSCocoaErrorDomain"))
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // A FIFO with no writer: the old reader blocked in open(2) for ever.
        let f = try CLI.runBounded("gaenctl", ["keys", "inspect", fifo], timeout: 30)
        #expect(f.status == 1 && f.stderr.contains("is a FIFO (named pipe), not a regular file"), "\(f.stderr)")
    }
}

@Suite("gaenctl risk run and engines: the registry from the command line")
struct RiskRunCommandTests {
    @Test("risk engines lists the registry; risk run runs an engine by name with its published parameters; --per-window is refused")
    func runByName() throws {
        let list = try CLI.run("gaenctl", ["risk", "engines"])
        #expect(list.status == 0)
        let names = list.stdout.split(separator: "\n").dropFirst().map { String($0.split(separator: " ")[0]) }
        #expect(names == ["cwa", "cwa-v1", "nhs", "gaen-v1", "swisscovid", "immuni"], "\(list.stdout)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-riskrun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let windows = dir.appendingPathComponent("w.json")
        // 20 minutes at 50 dB on 2020-09-13: SwissCovid's published 15 weighted minutes are reached.
        let scan = #"{"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}"#
        try Data(#"[{"dateMillisSinceEpoch": 1599955200000, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 0, "scanInstances": [\#(Array(repeating: scan, count: 4).joined(separator: ","))]}]"#.utf8)
            .write(to: windows)
        let r = try CLI.run("gaenctl", ["risk", "run", "swisscovid", "--windows", windows.path, "--today", "2020-09-14"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["engine"] as? String == "swisscovid" && o["notified"] as? Bool == true)
        #expect((o["numbers"] as? [String: Any])?["weightedMinutes"] as? Int == 20)
        let bad = try CLI.run("gaenctl", ["risk", "run", "nope", "--windows", windows.path])
        #expect(bad.status == 64 && bad.stderr.contains("unknown engine 'nope' (one of cwa, cwa-v1, nhs, gaen-v1, swisscovid, immuni)"))
        let per = try CLI.run("gaenctl", ["risk", "run", "cwa", "--windows", windows.path, "--per-window"])
        #expect(per.status == 64 && per.stderr.contains("--per-window: use the engine's own subcommand"))
    }
}
