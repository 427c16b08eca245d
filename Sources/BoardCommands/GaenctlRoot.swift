import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import GaendAPI
import PlatformSupport
import RadioCommands

/// What gaenctl's two roots share: the full gaenctl (every command, the research tools) and the
/// board's (gaend's binary called as `gaenctl`: `BoardGaenCtl`). Each root declares its own
/// subcommands and `@OptionGroup var bus: BusOptions`, and calls these.
package protocol GaenctlRoot: AsyncParsableCommand {
    var bus: BusOptions { get }
}

extension GaenctlRoot {
    /// ArgumentParser's own main, with open captures flushed before the process exits.
    package static func runMain() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            CaptureRegistry.closeAll()
            exit()
        } catch {
            CaptureRegistry.closeAll()
            usageOfNamedCommand(error)
            exit(withError: error)
        }
    }

    /// The bus options are the root's too (`gaenctl --name hci0 status`), so ArgumentParser checks
    /// a bad `gaenctl status --timeout inf` as the root's and prints gaenctl's usage. When a
    /// command was named, its usage is printed instead (exit status 64 all the same).
    static func usageOfNamedCommand(_ error: any Error) {
        guard exitCode(for: error) == .validationFailure, fullMessage(for: error).contains("See 'gaenctl --help'") else { return }
        var command: any ParsableCommand.Type = Self.self
        var path: [String] = []
        for argument in CommandLine.arguments.dropFirst() where !argument.hasPrefix("-") {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { continue }
            command = next
            path.append(argument)
        }
        guard !path.isEmpty else { return }
        StandardStream.writeError("Error: \(message(for: error))\nUsage: \(usageString(for: command))\n  See 'gaenctl \(path.joined(separator: " ")) --help' for more information.\n")
        exit(withError: ExitCode.validationFailure)
    }

    /// `gaenctl --name status` took the command as the option's value and then, with no command
    /// left, printed the help and exited 0: a usage error instead, saying what happened.
    package func validateRoot() throws {
        let commands = Set(Self.configuration.subcommands.map { $0._commandName })
        if let name = bus.name, commands.contains(name) {
            throw ValidationError("--name took the command '\(name)' as its value; give the name before the command: gaenctl --name hci0 \(name)")
        }
    }

    /// Options but no command (`gaenctl --name hci0`): a usage error, not the help and status 0.
    package func runRoot() throws {
        if bus.name != nil {
            throw ValidationError("no command given after the options")
        }
        throw CleanExit.helpRequest(self)
    }
}

/// The board's gaenctl: the commands a board runs, in gaend's own binary (`gaenctl` is a link
/// to `gaend`, which runs this when called by that name: one static Swift runtime for both).
/// The research tools (`trial`, `simulate`, `risk`, `match`, `calibrate`, ...) are the full
/// gaenctl's, in the gaend-research-tools package.
package struct BoardGaenCtl: GaenctlRoot {
    package static let configuration = CommandConfiguration(
        commandName: "gaenctl",
        abstract: "Client of gaend on a board (the research tools are the full gaenctl's, package gaend-research-tools).",
        version: GaendVersion.string,
        subcommands: [
            Keys.self,
            AppCommand.self,
            Radio.self,
            Status.self,
            MetricsCommand.self,
            CollectCommand.self,
            StartCommand.self,
            StopCommand.self,
        ]
    )

    package init() {}

    /// The full gaenctl's other commands (GaenCtl's subcommands; a test keeps the two lists
    /// whole): named on a board, they get a word on where they are instead of "Unexpected
    /// argument".
    package static let researchCommands: Set<String> = ["derive", "match", "windows", "sightings", "mark", "markers", "risk", "summaries",
                                                        "trial", "simulate", "calibrate"]

    /// Runs the command line; a research command is a usage error that says where it is.
    package static func main() async {
        var arguments = CommandLine.arguments.dropFirst()
        // The command: the first word that is neither an option nor a root option's value.
        while let first = arguments.first, first.hasPrefix("-") {
            arguments.removeFirst()
            if ["--bus", "--name", "--timeout"].contains(first) { arguments = arguments.dropFirst() }
        }
        if let command = arguments.first, researchCommands.contains(command) {
            StandardStream.writeError("Error: 'gaenctl \(command)' is one of the research tools, not in a board's gaenctl: they are the full gaenctl's (package gaend-research-tools, `make install-research`).\n")
            exit(withError: ExitCode.validationFailure)
        }
        await runMain()
    }

    /// Accepted before the subcommand too (`gaenctl --bus ADDRESS status`).
    @OptionGroup package var bus: BusOptions

    package func validate() throws { try validateRoot() }

    package func run() throws { try runRoot() }
}
