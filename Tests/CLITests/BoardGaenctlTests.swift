import ENProtocol
import Foundation
import Testing

/// The board's gaenctl (gaend's binary called as `gaenctl`): the board's commands, which are the
/// full gaenctl's own (one copy, BoardCommands), and for the research tools a word on where they are.
@Suite struct BoardGaenctlTests {
    static let boardCommands = ["keys", "app", "radio", "status", "metrics", "collect", "start", "stop"]

    /// The names under SUBCOMMANDS in a root's help.
    static func subcommands(_ help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        // Up to the blank line before "See 'gaenctl help <subcommand>'".
        return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }.compactMap { line in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map(String.init)
        }
    }

    @Test func listsTheBoardsCommandsAndSaysWhereTheRestAre() throws {
        let board = try CLI.run(CLI.boardGaenctl, ["--help"]), full = try CLI.run("gaenctl", ["--help"])
        #expect(board.status == 0 && full.status == 0)
        #expect(Self.subcommands(board.stdout) == Self.boardCommands, "\(board.stdout)")
        let research = Self.subcommands(full.stdout).filter { !Self.boardCommands.contains($0) }
        #expect(research.count > 5 && research.contains("trial"), "\(full.stdout)")
        // Every other command of the full gaenctl (the board's list of them is whole).
        for name in research {
            for args in [[name], ["--bus", "session", name, "--help"]] {
                let r = try CLI.run(CLI.boardGaenctl, args)
                #expect(r.status == 64 && r.stderr.contains("'gaenctl \(name)' is one of the research tools") && r.stderr.contains("gaend-research"),
                        "\(args): \(r.status) \(r.stderr)")
            }
        }
        #expect(try CLI.run(CLI.boardGaenctl, ["--version"]).stdout == (try CLI.run("gaend", ["--version"])).stdout)
    }

    /// Each board command's help, usage errors and file errors are the full gaenctl's, word for word.
    @Test(arguments: [["status"], ["keys"], ["keys", "inspect"], ["keys", "create"], ["keys", "history"], ["keys", "provide"], ["keys", "publish"],
                      ["app"], ["app", "sync"], ["app", "submit"], ["app", "status"], ["metrics"], ["collect"], ["start"], ["stop"],
                      ["radio"], ["radio", "probe"], ["radio", "advertise"], ["radio", "scan"]])
    func helpIsTheFullGaenctls(command: [String]) throws {
        let board = try CLI.run(CLI.boardGaenctl, command + ["--help"]), full = try CLI.run("gaenctl", command + ["--help"])
        #expect(board.status == 0 && board.stdout == full.stdout && !board.stdout.isEmpty, "\(command): \(board.stderr)")
    }

    @Test(arguments: [["status", "--timeout", "inf"], ["metrics", "--bus", "nowhere"], ["keys", "inspect", "/nonexistent-gaend-board"],
                      ["keys", "provide"], ["collect", "--server", "http://127.0.0.1:1/"], ["app", "status", "--state-dir", "/nonexistent-gaend-board"],
                      ["--bus", "unix:path=/nonexistent-gaend-board", "status"], ["radio", "probe", "--controller", "hci999", "--command-timeout", "0.2"]])
    func failuresAreTheFullGaenctls(arguments: [String]) throws {
        let board = try CLI.run(CLI.boardGaenctl, arguments), full = try CLI.run("gaenctl", arguments)
        #expect(board.status != 0 && board.status == full.status, "\(arguments): \(board.status) \(board.stderr)")
        #expect(board.stderr == full.stderr && board.stdout == full.stdout, "\(arguments): \(board.stderr) | \(full.stderr)")
    }

    /// The daemon in the same binary loads no libcurl until an HTTP request (the app, collect):
    /// its idle memory stays without libcurl's libraries (Sources/CCurl).
    @Test func theBinaryLinksNoLibcurl() throws {
        let ldd = Process()
        ldd.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        ldd.arguments = [CLI.productsDirectory.appendingPathComponent("gaend").path]
        let pipe = Pipe()
        ldd.standardOutput = pipe
        try ldd.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ldd.waitUntilExit()
        #expect(ldd.terminationStatus == 0 && out.contains("libdbus-1") && !out.contains("libcurl"), "\(out)")
    }

    /// A file error in the system's words on the board too (it links no full Foundation, whose
    /// rendering of a file error the full gaenctl's process would otherwise show).
    @Test func spoolErrorSaysTheSystemsReason() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("board-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let password = dir.appendingPathComponent("password").path
        try "secret\n".write(toFile: password, atomically: true, encoding: .utf8)
        let blocker = dir.appendingPathComponent("file").path
        try "x".write(toFile: blocker, atomically: true, encoding: .utf8)
        let args = ["collect", "--server", "http://127.0.0.1:1/collect/", "--password-file", password, "--spool", blocker + "/spool"]
        let board = try CLI.run(CLI.boardGaenctl, args), full = try CLI.run("gaenctl", args)
        #expect(board.status == 1 && board.stderr == "gaenctl collect: cannot create the spool \(blocker)/spool: Not a directory\n", "\(board.stderr)")
        #expect(full.status == 1 && full.stderr == board.stderr, "\(full.stderr)")
    }

    /// A signed key file written and read on the board (JSON key list in, ZIP out, JSON out),
    /// byte for byte what the full gaenctl prints; a bad key list is refused in the same words.
    @Test func keysOnTheBoard() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("board-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let signer = try P256PrivateKey.generate()
        let privatePEM = dir.appendingPathComponent("signing.pem").path, publicPEM = dir.appendingPathComponent("public.pem").path
        try signer.pemRepresentation.write(toFile: privatePEM, atomically: true, encoding: .utf8)
        try signer.publicKey.pemRepresentation.write(toFile: publicPEM, atomically: true, encoding: .utf8)
        let keys = dir.appendingPathComponent("keys.json").path
        try #"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":2650032,"transmissionRiskLevel":4,"reportType":"REVOKED"},{"keyData":"ffeeddccbbaa99887766554433221100","rollingStartIntervalNumber":2650176,"rollingPeriod":12.0,"daysSinceOnsetOfSymptoms":true}]"#
            .write(toFile: keys, atomically: true, encoding: .utf8)
        let zip = dir.appendingPathComponent("out.zip").path
        let c = try CLI.run(CLI.boardGaenctl, ["keys", "create", "--keys", keys, "--signing-key", privatePEM, "--key-id", "262", "-o", zip])
        #expect(c.status == 0, "\(c.stderr)")
        let inspect = ["keys", "inspect", zip, "--trust", "262=\(publicPEM)", "--require-signature"]
        let board = try CLI.run(CLI.boardGaenctl, inspect), full = try CLI.run("gaenctl", inspect)
        #expect(board.status == 0 && board.stdout == full.stdout, "\(board.stderr)")
        #expect(board.stdout.contains(#""keyData":"ffeeddccbbaa99887766554433221100""#) && board.stdout.contains(#""daysSinceOnsetOfSymptoms":1"#), "\(board.stdout)")
        for bad in [#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1.5}]"#, #"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":"1"}]"#,
                    #"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1,"reportType":[1]}]"#, "[", #"{"x":1}"#] {
            try bad.write(toFile: keys, atomically: true, encoding: .utf8)
            let args = ["keys", "create", "--keys", keys, "--signing-key", privatePEM, "--key-id", "262", "-o", zip]
            let b = try CLI.run(CLI.boardGaenctl, args), f = try CLI.run("gaenctl", args)
            #expect(b.status == 1 && b.stderr == f.stderr, "\(bad): \(b.stderr) | \(f.stderr)")
        }
    }
}
