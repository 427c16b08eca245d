import ArgumentParser
import BoardCommands
import GaendAPI
import RadioCommands

/// gaenctl: the command-line client of gaend and the researcher's offline toolbox.
/// Each subcommand lives in its own file; add it to `subcommands` here. The commands a board
/// runs are BoardCommands' (the board's gaenctl, `BoardGaenCtl`, lists them too).
@main
struct GaenCtl: GaenctlRoot {
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

    static func main() async { await runMain() }

    /// Accepted before the subcommand too (`gaenctl --bus ADDRESS status`).
    @OptionGroup var bus: BusOptions

    func validate() throws { try validateRoot() }

    func run() throws { try runRoot() }
}
