import ArgumentParser
import CLISupport
import DBusCore
import GaendClient

/// `--bus system|session|ADDRESS`, `--name NAME` and the reply timeout, shared by every
/// subcommand that talks to gaend (`@OptionGroup var bus: BusOptions`). Also declared on the
/// root command so that `gaenctl --bus ADDRESS status` works as well as
/// `gaenctl status --bus ADDRESS`.
package struct BusOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("bus"), help: "gaend's bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).")
    var bus: String = "system"

    @Option(name: .customLong("name"), help: ArgumentHelp(
        "gaend's bus name: org.gaend.hci1, or hci1 for short. Default: org.gaend if it is there, else the one org.gaend.* instance.",
        valueName: "NAME"))
    var name: String?

    @Option(name: .customLong("timeout"), help: "Seconds to wait for each reply from gaend.")
    var timeoutSeconds: Double = 25

    package func validate() throws {
        do {
            _ = try BusAddress(parsing: bus)
        } catch {
            throw ValidationError("--bus: \(error)")
        }
        try NumericOption.check(timeoutSeconds, "--timeout", 0.001...NumericOption.day)
        if let name {
            do { _ = try GaendDiscovery.expand(name) } catch { throw ValidationError("\(error)") }
        }
    }

    /// Connects to the bus (a failure is a `DBusBindingError`), then finds gaend's name there
    /// (`--name`, or discovery: a `GaendDiscoveryError`). The caller closes `client.bus`.
    package func connectToGaend() async throws -> GaendClient {
        let client = try BusClient(bus: try BusAddress(parsing: bus), timeout: .milliseconds(Int(timeoutSeconds * 1000)))
        do {
            return GaendClient(bus: client, destination: try await GaendDiscovery.resolve(name, on: client))
        } catch {
            client.close()
            throw error
        }
    }
}
