import ArgumentParser
import Foundation
import GaendAPI
import RadioCommands

/// gaenctl: the command-line client of gaend and the researcher's offline toolbox.
/// Each subcommand lives in its own file; add it to `subcommands` here.
@main
struct GaenCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gaenctl",
        abstract: "Client of gaend and offline GAEN protocol toolbox.",
        version: GaendVersion.string,
        subcommands: [
            Derive.self,
            Keys.self,
            AppCommand.self,
            MatchCommand.self,
            WindowsCommand.self,
            Radio.self,
            Status.self,
            MetricsCommand.self,
            CollectCommand.self,
            StartCommand.self,
            StopCommand.self,
            SightingsCommand.self,
            MarkCommand.self,
            MarkersCommand.self,
            Risk.self,
            Summaries.self,
            Trial.self,
            Simulate.self,
            Calibrate.self,
        ]
    )

    /// ArgumentParser's own main, with open captures flushed before the process exits.
    static func main() async {
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
    static func usageOfNamedCommand(_ error: Error) {
        guard exitCode(for: error) == .validationFailure, fullMessage(for: error).contains("See 'gaenctl --help'") else { return }
        var command: ParsableCommand.Type = GaenCtl.self
        var path: [String] = []
        for argument in CommandLine.arguments.dropFirst() where !argument.hasPrefix("-") {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { continue }
            command = next
            path.append(argument)
        }
        guard !path.isEmpty else { return }
        let text = "Error: \(message(for: error))\nUsage: \(usageString(for: command))\n  See 'gaenctl \(path.joined(separator: " ")) --help' for more information.\n"
        FileHandle.standardError.write(Data(text.utf8))
        exit(withError: ExitCode.validationFailure)
    }

    /// Accepted before the subcommand too (`gaenctl --bus ADDRESS status`).
    @OptionGroup var bus: BusOptions

    /// `gaenctl --name status` took the command as the option's value and then, with no command
    /// left, printed the help and exited 0: a usage error instead, saying what happened.
    func validate() throws {
        let commands = Set(Self.configuration.subcommands.map { $0._commandName })
        if let name = bus.name, commands.contains(name) {
            throw ValidationError("--name took the command '\(name)' as its value; give the name before the command: gaenctl --name hci0 \(name)")
        }
    }

    /// Options but no command (`gaenctl --name hci0`): a usage error, not the help and status 0.
    func run() throws {
        if bus.name != nil {
            throw ValidationError("no command given after the options")
        }
        throw CleanExit.helpRequest(self)
    }
}

