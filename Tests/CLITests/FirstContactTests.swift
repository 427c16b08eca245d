import Foundation
import Testing

/// What a new user meets first: versions, usage errors and file errors that read the same in
/// every command.
@Suite struct FirstContactTests {
    @Test(arguments: ["gaend", "gaenctl"])
    func versionOnBothPrograms(program: String) throws {
        let r = try CLI.run(program, ["--version"])
        #expect(r.status == 0, "\(r.stderr)")
        let version = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.split(separator: ".").count == 3 && version.allSatisfy { $0.isNumber || $0 == "." }, "\(version)")
    }

    @Test func bothProgramsReportTheSameVersion() throws {
        let d = try CLI.run("gaend", ["--version"]), c = try CLI.run("gaenctl", ["--version"])
        #expect(d.stdout == c.stdout)
    }

    /// A usage error is exit status 64 (EX_USAGE) in every command, `match` included.
    @Test(arguments: [["match"], ["match", "--sightings", "x.csv"], ["windows", "--sightings", "x.csv"], ["derive"]])
    func usageErrorsExit64(arguments: [String]) throws {
        let r = try CLI.run("gaenctl", arguments)
        #expect(r.status == 64, "\(arguments): \(r.status) \(r.stderr)")
    }

    /// `gaenctl --name status` took the command as the name and printed the help with status 0;
    /// options without a command did the same.
    @Test func optionsWithoutACommandAreAUsageError() throws {
        let swallowed = try CLI.run("gaenctl", ["--name", "status"])
        #expect(swallowed.status == 64 && swallowed.stderr.contains("--name took the command 'status'"), "\(swallowed.status) \(swallowed.stderr)")
        let bare = try CLI.run("gaenctl", ["--name", "hci0"])
        #expect(bare.status == 64 && bare.stderr.contains("no command given"), "\(bare.status) \(bare.stderr)")
        // Nothing at all is still a request for help.
        #expect(try CLI.run("gaenctl", []).status == 0)
    }

    /// A bad bus option after a command is that command's usage error (the options are the
    /// root's too, and their check printed gaenctl's top-level usage).
    @Test(arguments: [["status", "--timeout", "inf"], ["sightings", "export", "--name", "org..x"], ["metrics", "--bus", "nowhere"]])
    func busOptionErrorsShowTheCommandsUsage(arguments: [String]) throws {
        let r = try CLI.run("gaenctl", arguments)
        let command = arguments.prefix { !$0.hasPrefix("-") }.joined(separator: " ")
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("Usage: gaenctl \(command) ") && r.stderr.contains("See 'gaenctl \(command) --help'"), "\(r.stderr)")
    }

    /// A missing input file is named with the system's reason, the same words in each command.
    @Test func missingFilesReadTheSameEverywhere() throws {
        let missing = "/nonexistent-\(UUID().uuidString)"
        let runs = [
            ["match", "--sightings", missing, "--keys", missing],
            ["keys", "inspect", missing],
            ["risk", "cwa", "--parameters", missing, "--windows", missing],
        ]
        for args in runs {
            let r = try CLI.run("gaenctl", args)
            #expect(r.status != 0)
            #expect(r.stderr.contains(missing) && r.stderr.contains("No such file or directory"), "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("could not be completed"), "\(args): \(r.stderr)")
        }
    }

    /// One default in the help of --workers, in words (the core count differs between machines).
    @Test func workersHelpHasOneDefault() throws {
        let r = try CLI.run("gaenctl", ["match", "--help"])
        let line = r.stdout.components(separatedBy: "\n").first { $0.contains("--workers <") && !$0.contains("USAGE") } ?? ""
        #expect(line.contains("(default: every core)"), "\(line)")
        #expect(line.components(separatedBy: "default").count == 2, "\(line)")
    }

    /// A bus that cannot be reached is said once, not as "bus ...: cannot connect to the ... bus".
    @Test func unreachableBusSaidOnce() throws {
        let r = try CLI.run("gaenctl", ["--bus", "unix:path=/nonexistent-\(UUID().uuidString)", "status"])
        #expect(r.status == 1)
        #expect(r.stderr.components(separatedBy: "cannot connect").count == 2, "\(r.stderr)")
    }

    /// gaend has no subcommands, and its manual's synopsis says none.
    @Test func gaendManualHasNoSubcommand() throws {
        let page = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/man/gaend.8").standardized, encoding: .utf8)
        #expect(!page.contains(".Ar subcommand"))
    }
}
