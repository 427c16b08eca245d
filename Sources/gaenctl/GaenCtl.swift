import ArgumentParser
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
            exit(withError: error)
        }
    }

    /// Accepted before the subcommand too (`gaenctl --bus ADDRESS status`).
    @OptionGroup var bus: BusOptions
}
