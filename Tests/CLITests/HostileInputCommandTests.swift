import ENProtocol
import Foundation
import Testing

/// Numbers, files and paths no one means: each refused with one line that says what is wrong
/// (no trap, no Foundation error dump), and files holding keys written 0600.
@Suite struct HostileInputCommandTests {
    func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test("gaenctl --timeout inf, nan, 1e308, -1 and 0: a clear message and exit 64, never a crash", arguments: ["inf", "nan", "1e308", "-1", "0"])
    func timeoutValidated(value: String) throws {
        // `=`: a negative number is the option's value, not another option.
        let r = try CLI.run("gaenctl", ["status", "--bus", "unix:path=/nonexistent", "--timeout=\(value)"])
        #expect(r.status == 64, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("--timeout must be a number of seconds in 0.001...86400.0"), "\(r.stderr)")
    }

    @Test("gaenctl mark --time beyond any date and keys provide --wait inf: a clear message")
    func timesValidated() throws {
        let mark = try CLI.run("gaenctl", ["mark", "--bus", "unix:path=/nonexistent", "--label", "x", "--time", "99999999999999999999"])
        #expect(mark.status == 64, "\(mark.status) \(mark.stderr)")
        #expect(mark.stderr.contains("--time: '99999999999999999999' is outside 1970-01-01T00:00:00Z...3000-01-01T00:00:00Z"), "\(mark.stderr)")
        let bad = try CLI.run("gaenctl", ["mark", "--bus", "unix:path=/nonexistent", "--label", "x", "--time", "yesterday"])
        #expect(bad.status == 64 && bad.stderr.contains("--time: 'yesterday' is not a time"), "\(bad.stderr)")
        let wait = try CLI.run("gaenctl", ["keys", "provide", "--bus", "unix:path=/nonexistent", "--wait", "inf", "/dev/null"])
        #expect(wait.status == 64 && wait.stderr.contains("--wait must be a number of seconds"), "\(wait.stderr)")
    }

    @Test("gaenctl summaries --config /dev/zero or a FIFO: says what it is, at once")
    func configNotAFile() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let windows = dir.appendingPathComponent("w.json")
        try Data("[]".utf8).write(to: windows)
        let zero = try CLI.run("gaenctl", ["summaries", "--windows", windows.path, "--config", "/dev/zero"])
        #expect(zero.status != 0)
        #expect(zero.stderr.contains("'/dev/zero' is a character device, not a regular file"), "\(zero.stderr)")
        #expect(!zero.stderr.lowercased().contains("permission"))
        let fifo = dir.appendingPathComponent("c.fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let f = try CLI.run("gaenctl", ["summaries", "--windows", windows.path, "--config", fifo.path])
        #expect(f.stderr.contains("is a FIFO (named pipe), not a regular file"), "\(f.stderr)")
    }

    @Test("a key file gaenctl writes is 0600 whatever the umask")
    func keyFilesArePrivate() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let signer = try P256PrivateKey.generate()
        let pem = dir.appendingPathComponent("signing.pem")
        try signer.pemRepresentation.write(to: pem, atomically: true, encoding: .utf8)
        let keys = dir.appendingPathComponent("keys.json")
        try Data(#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":2650032}]"#.utf8).write(to: keys)
        let out = dir.appendingPathComponent("out.zip")
        let old = umask(0)
        defer { umask(old) }
        let r = try CLI.run("gaenctl", ["keys", "create", "--keys", keys.path, "--signing-key", pem.path, "--key-id", "x", "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: out.path)[.posixPermissions] as? Int)
        #expect(mode == 0o600, "mode \(String(mode, radix: 8))")
    }

    @Test("gaend --time-scale -1 and --state-dir naming a file: one specific line each")
    func gaendMessages() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scale = try CLI.run("gaend", ["--time-scale", "-1"])
        #expect(scale.status != 0)
        #expect(scale.stderr.contains("--time-scale must be a number in 1...100000, got -1"), "\(scale.stderr)")
        let file = dir.appendingPathComponent("hostname")
        try Data("board\n".utf8).write(to: file)
        let state = try CLI.run("gaend", ["--state-dir", file.path, "--controller", "tcp:127.0.0.1:1", "--bus", "unix:path=/nonexistent"])
        #expect(state.status == 1)
        #expect(state.stderr.contains("state directory \(file.path) exists but is not a directory"), "\(state.stderr)")
        #expect(!state.stderr.contains("CocoaError"))
    }
}
