import ENProtocol
import Foundation
import Testing

/// `gaenctl keys publish` as the timer runs it, against a hostile inbox and bad options (issue 29).
@Suite struct KeysPublishCommandTests {
    static let day: Int64 = 86_400
    static let now: Int64 = 20_400 * day + 15 * 3600 + 1_200
    static var today: Int64 { now / day }

    final class Site {
        let root: URL
        var inbox: URL { root.appendingPathComponent("inbox") }
        var out: URL { root.appendingPathComponent("www/keys") }
        var pem: URL { root.appendingPathComponent("signing.pem") }
        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("publish-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("inbox"), withIntermediateDirectories: true)
            try P256PrivateKey.generate().pemRepresentation.write(to: root.appendingPathComponent("signing.pem"), atomically: true, encoding: .utf8)
        }
        deinit { try? FileManager.default.removeItem(at: root) }

        func upload(_ name: String, _ keys: [[String: Any]], mtime: Int64) throws {
            let file = inbox.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try JSONSerialization.data(withJSONObject: keys).write(to: file)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(mtime))], ofItemAtPath: file.path)
        }

        func publish(_ extra: [String], now: String? = nil) throws -> CLIResult {
            try CLI.runBounded("gaenctl", ["keys", "publish", "--inbox", inbox.path, "-o", out.path, "--signing-key", pem.path, "--key-id", "T",
                                           "--min-keys", "1", "--now", now ?? String(KeysPublishCommandTests.now)] + extra)
        }

        /// Every key (hex) in the CWA day packages and the Google files of the tree.
        func publishedKeys() throws -> [String] {
            var keys: [String] = []
            let e = FileManager.default.enumerator(atPath: out.path)
            while let path = e?.nextObject() as? String {
                guard !path.contains("app-config"), !path.contains("app_config"),
                      let data = FileManager.default.contents(atPath: out.appendingPathComponent(path).path), data.starts(with: [0x50, 0x4b]) else { continue }
                let file = try KeyExportFile(parsing: data)
                keys += file.keyBatches().flatMap { $0 }.map { $0.key.bytes.map { String(format: "%02x", $0) }.joined() }
            }
            return keys
        }
    }

    static func key(_ n: Int, day: Int64, _ extra: [String: Any] = [:]) -> [String: Any] {
        var k: [String: Any] = ["keyData": String(format: "%032x", n), "rollingStartIntervalNumber": day * 144]
        k.merge(extra) { $1 }
        return k
    }

    @Test("keys every app would refuse are not signed; each board's refusals are counted with their reason")
    func hostileKeysNotPublished() throws {
        let site = try Site()
        try site.upload("board-a/keys.json", [
            Self.key(1, day: Self.today - 2), Self.key(2, day: Self.today - 3), Self.key(3, day: Self.today - 2),
            Self.key(4, day: Self.today - 2, ["daysSinceOnsetOfSymptoms": 2_147_483_647]),
            Self.key(5, day: Self.today - 2, ["transmissionRiskLevel": 99]),
            Self.key(6, day: 1),
        ], mtime: Self.now - 5 * 3600)
        let r = try site.publish([])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("3 keys published") && r.stdout.contains("3 keys refused"), "\(r.stdout)")
        #expect(r.stderr.contains("board 'board-a': 3 keys accepted, 3 refused (1 days since onset, 1 older than retention, 1 transmission risk)"), "\(r.stderr)")
        let published = Set(try site.publishedKeys())
        #expect(published == Set([1, 2, 3].map { String(format: "%032x", $0) }))
        // What was published, gaend accepts: every package passes checkAcceptable.
        let e = FileManager.default.enumerator(atPath: site.out.path)
        while let path = e?.nextObject() as? String {
            guard path.hasSuffix(".zip"), !path.contains("app-config") else { continue }
            var perDay: [UInt32: Int] = [:]
            try KeyExportFile(parsing: Data(contentsOf: site.out.appendingPathComponent(path))).checkAcceptable(now: Double(Self.now), keysPerDay: &perDay)
        }
    }

    @Test("one board flooding within the web server's limits gets its budget; the honest boards' keys are all published")
    func floodingBoardIsCapped() throws {
        let site = try Site()
        for f in 0..<40 {
            try site.upload("flood/u\(f).json", (0..<200).map { Self.key(1_000_000 + f * 1000 + $0, day: Self.today - 1) }, mtime: Self.now - 4 * 3600)
        }
        for b in 0..<5 { try site.upload("board-\(b)/k.json", [Self.key(10 + b, day: Self.today - 1)], mtime: Self.now - 4 * 3600) }
        let r = try site.publish([])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("20 keys published"), "\(r.stdout)")
        #expect(r.stderr.contains("board 'flood': 15 keys accepted"), "\(r.stderr)")
        let published = Set(try site.publishedKeys())
        for b in 0..<5 { #expect(published.contains(String(format: "%032x", 10 + b))) }
    }

    @Test("with --trial-clock the publisher's now and the uploads' times are the trial's: a key of the trial's yesterday is published in the trial's 02:00 hour")
    func trialClock() throws {
        let site = try Site()
        // One real second is a trial hour; the rehearsal began 10 s ago at trial 2026-03-02 00:00.
        let realEpoch = Int64(Date().timeIntervalSince1970) - 10
        let trialDay: Int64 = 20_514 // 2026-03-02
        let clock = site.root.appendingPathComponent("clock")
        try Data("""
            scale: 3600
            real_epoch: \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(realEpoch))))
            trial_epoch: 2026-03-02T00:00:00Z

            """.utf8).write(to: clock)
        // Uploaded (real) at the epoch: trial 2026-03-02 00:00, the key of 2026-03-01.
        try site.upload("board-a/keys.json", [Self.key(1, day: trialDay - 1)], mtime: realEpoch)
        let args = ["keys", "publish", "--inbox", site.inbox.path, "-o", site.out.path, "--signing-key", site.pem.path, "--key-id", "T", "--min-keys", "1"]
        let r = try CLI.runBounded("gaenctl", args + ["--trial-clock", clock.path])
        #expect(r.status == 0 && r.stdout.hasPrefix("1 keys published"), "\(r.stdout) \(r.stderr)")
        #expect(Set(try site.publishedKeys()) == [String(format: "%032x", 1)])
        // Both clocks at once, or a clock that cannot be used, are refused with the reason.
        let both = try CLI.runBounded("gaenctl", args + ["--trial-clock", clock.path, "--now", String(Self.now)])
        #expect(both.status == 64 && both.stderr.contains("give --now or --trial-clock, not both"), "\(both.stderr)")
        try Data("scale: 0\nreal_epoch: 2026-03-02T00:00:00Z\ntrial_epoch: 2026-03-02T00:00:00Z\n".utf8).write(to: clock)
        let bad = try CLI.runBounded("gaenctl", args + ["--trial-clock", clock.path])
        #expect(bad.status == 1 && bad.stderr.contains("--trial-clock: trial clock \(clock.path): scale must be a number in 1...100000, got 0.0"), "\(bad.stderr)")
    }

    @Test("--now in milliseconds or at Int64's ends is a usage error naming the range, not a crash")
    func nowValidated() throws {
        let site = try Site()
        for bad in ["9999999999999999", "-9223372036854775808", "1764000000000", "99999999999999999999999", "soon"] {
            let r = try CLI.runBounded("gaenctl", ["keys", "publish", "--inbox", site.inbox.path, "-o", site.out.path, "--signing-key", site.pem.path,
                                                   "--key-id", "T", "--now=\(bad)"])
            #expect(r.status == 64, "\(bad): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("--now"), "\(bad): \(r.stderr)")
        }
    }

    @Test("a FIFO as --signing-key is refused at once; --inbox that is a file is named as such")
    func specialFilesRefused() throws {
        let site = try Site()
        let fifo = site.root.appendingPathComponent("key.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let r = try CLI.runBounded("gaenctl", ["keys", "publish", "--inbox", site.inbox.path, "-o", site.out.path, "--signing-key", fifo,
                                               "--key-id", "T", "--now", String(Self.now)], timeout: 20)
        #expect(r.status == 1 && r.stderr.contains("FIFO"), "\(r.status) \(r.stderr)")
        let file = site.root.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: file)
        let s = try CLI.runBounded("gaenctl", ["keys", "publish", "--inbox", file.path, "-o", site.out.path, "--signing-key", site.pem.path,
                                               "--key-id", "T", "--now", String(Self.now)])
        #expect(s.status == 1 && s.stderr.contains("the inbox is a regular file, not a directory") && !s.stderr.contains("NSCocoaErrorDomain"), "\(s.stderr)")
    }

    @Test("a run with a wrong --now does not freeze publication: the next run repairs the ledger, says so and exits 1, and new uploads are published")
    func wrongNowRecovers() throws {
        let site = try Site()
        try site.upload("b/one.json", [Self.key(1, day: Self.today - 1)], mtime: Self.now - 4 * 3600)
        let ahead = Self.now + 300 * Self.day
        _ = try site.publish([], now: String(ahead))
        try site.upload("b/two.json", [Self.key(2, day: Self.today - 1)], mtime: Self.now - 2 * 3600)
        let r = try site.publish([])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("is after now"), "\(r.stderr)")
        #expect(r.stdout.contains("the ledger's clock was repaired"), "\(r.stdout)")
        // The next hour both keys are out; the run is clean again.
        let next = try site.publish([], now: String(Self.now + 3600))
        #expect(next.status == 0 && next.stdout.hasPrefix("2 keys published") && next.stdout.contains("0 waiting"), "\(next.stdout) \(next.stderr)")
    }

    @Test("names from the inbox reach the terminal escaped; a killed run's staging tree is removed")
    func namesEscapedAndStaleTreesRemoved() throws {
        let site = try Site()
        try site.upload("evil\u{1b}[2J\nboard/k.json", [Self.key(1, day: Self.today - 1, ["transmissionRiskLevel": 99])], mtime: Self.now - 4 * 3600)
        let stale = site.root.appendingPathComponent("www/.keys.new-999999")
        try FileManager.default.createDirectory(at: stale.appendingPathComponent("version"), withIntermediateDirectories: true)
        let r = try site.publish([])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("\u{1b}") && r.stderr.contains("evil\\u{1b}[2J\\nboard"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        #expect(r.stderr.contains("removed 1 half-built tree"), "\(r.stderr)")
    }

    @Test("a file rewritten with the same path, time and size does not change a published package")
    func publishedPackagesNeverChange() throws {
        let site = try Site()
        let t = Self.now - 5 * 3600
        try site.upload("b/keys.json", [Self.key(0x11, day: Self.today - 1)], mtime: t)
        _ = try site.publish([])
        let before = try Self.tree(site.out)
        try site.upload("b/keys.json", [Self.key(0x22, day: Self.today - 1)], mtime: t)
        let r = try site.publish([], now: String(Self.now + 3600))
        #expect(r.status == 0, "\(r.stderr)")
        let after = try Self.tree(site.out)
        #expect(before.values.filter { $0.starts(with: [0x50, 0x4b]) }.count == 2) // the hour's CWA package and Google file
        for (path, bytes) in before where bytes.starts(with: [0x50, 0x4b]) { // every package, both layouts
            #expect(after[path] == bytes, "\(path) changed")
        }
        #expect(Set(try site.publishedKeys()).contains(String(format: "%032x", 0x22)))
    }

    static func tree(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let e = FileManager.default.enumerator(atPath: root.path)
        while let path = e?.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path, isDirectory: &isDir), !isDir.boolValue {
                files[path] = try Data(contentsOf: root.appendingPathComponent(path))
            }
        }
        return files
    }
}

extension CLI {
    /// `run`, but a child still running after `timeout` seconds is killed and the test fails
    /// (a hang, such as a read on a FIFO, must fail the test rather than stall the suite).
    static func runBounded(_ program: String, _ arguments: [String], timeout: Double = 60) throws -> CLIResult {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let out = tmp.appendingPathComponent("out"), err = tmp.appendingPathComponent("err")
        for p in [out, err] { _ = FileManager.default.createFile(atPath: p.path, contents: nil) }
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(program)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning {
            // SIGKILL: a gaenctl blocked opening a FIFO did not end on SIGTERM (seen with the old publisher).
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("\(program) \(arguments.joined(separator: " ")) still ran after \(timeout) s")
        }
        process.waitUntilExit()
        return CLIResult(status: process.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
                         stderr: try String(contentsOf: err, encoding: .utf8))
    }
}
