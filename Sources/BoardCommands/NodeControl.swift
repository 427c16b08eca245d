import ArgumentParser
import DBusCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaendClient

/// `gaenctl start`: enable the node (advertising and scanning; persists across restarts).
package struct StartCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(commandName: "start", abstract: "Enable gaend's node: advertising and scanning start.")

    package init() {}

    @OptionGroup var bus: BusOptions

    package func run() async throws { try await setNodeEnabled(true, bus) }
}

/// `gaenctl stop`: disable the node; keys, sightings and results are kept.
package struct StopCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(commandName: "stop", abstract: "Disable gaend's node: advertising and scanning stop; data is kept.")

    package init() {}

    @OptionGroup var bus: BusOptions

    package func run() async throws { try await setNodeEnabled(false, bus) }
}

/// What `start` and `stop` do: enable or disable the node and say which it is now.
func setNodeEnabled(_ enabled: Bool, _ bus: BusOptions) async throws {
    try await withDaemon(enabled ? "start" : "stop", bus) { client in
        if enabled { try await client.start() } else { try await client.stop() }
        print("gaend: \(enabled ? "enabled" : "disabled")")
    }
}

/// Connects, runs `body`, closes; any failure (a named D-Bus error included) becomes one
/// stderr line "gaenctl COMMAND: error" and exit status 1.
package func withDaemon(_ command: String, _ bus: BusOptions, _ body: (GaendClient) async throws -> Void) async throws {
    let client: GaendClient
    do { client = try await bus.connectToGaend() } catch where error is GaendDiscoveryError || error is DBusNamedError {
        // No single gaend on the bus, or discovery's own calls to the bus failed (a policy, a broken bus).
        printError("gaenctl \(command): \(error)")
        throw ExitCode(1)
    } catch let e as DBusBindingError {
        // Its own words already say which bus could not be reached.
        printError("gaenctl \(command): \(e)")
        throw ExitCode(1)
    } catch {
        printError("gaenctl \(command): cannot connect to the bus \(bus.bus): \(error)")
        throw ExitCode(1)
    }
    defer { client.bus.close() }
    do {
        try await body(client)
    } catch let e as ExitCode {
        throw e
    } catch let e as DBusNamedError where e.name == "org.freedesktop.DBus.Error.ServiceUnknown" || e.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
        // A --name nobody owns: say so in words, as discovery does, keeping the error's name.
        let where_ = bus.bus == "system" || bus.bus == "session" ? "the \(bus.bus) bus" : "the bus \(bus.bus)"
        printError("gaenctl \(command): gaend is not running as \(client.destination) on \(where_): the name has no owner (\(e.name))")
        throw ExitCode(1)
    } catch {
        printError("gaenctl \(command): \(error)")
        throw ExitCode(1)
    }
}

/// Milliseconds since the epoch as an ISO 8601 UTC time, for people.
package func isoTime(ms: Int64) -> String {
    Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601)
}
