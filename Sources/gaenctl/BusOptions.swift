import ArgumentParser
import DBusCore
import GaenClient

/// `--bus system|session|ADDRESS` and the reply timeout, shared by every subcommand that talks
/// to gaend (`@OptionGroup var bus: BusOptions`). Also declared on the root command so that
/// `gaenctl --bus ADDRESS status` works as well as `gaenctl status --bus ADDRESS`.
struct BusOptions: ParsableArguments {
    @Option(name: .customLong("bus"), help: "gaend's bus: system, session, or a D-Bus address (e.g. unix:path=/tmp/bus).")
    var bus: String = "system"

    @Option(name: .customLong("timeout"), help: "Seconds to wait for each reply from gaend.")
    var timeoutSeconds: Double = 25

    func validate() throws {
        do {
            _ = try BusAddress(parsing: bus)
        } catch {
            throw ValidationError("--bus: \(error)")
        }
        guard timeoutSeconds > 0 else { throw ValidationError("--timeout must be positive") }
    }

    /// Connects to the bus; the caller closes `client.bus` when done.
    func connect() throws -> GaendClient {
        let client = try BusClient(bus: try BusAddress(parsing: bus), timeout: .milliseconds(Int(timeoutSeconds * 1000)))
        return GaendClient(bus: client)
    }
}
