import DBusCore
import DBusNames
import GaendAPI

/// Why no single gaend could be chosen on a bus.
public enum GaendDiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `--name` is not a well-known name (nor a suffix that makes one).
    case invalidName(String, WellKnownNameError)
    /// Neither `org.gaend` nor any `org.gaend.*` name has an owner. The bus error name is
    /// kept in the message: scripts and people know it from `dbus-send`.
    case notRunning(bus: String)
    /// More than one `org.gaend.*` name has an owner (one gaend per controller).
    case severalInstances([String])

    public var description: String {
        switch self {
        case .invalidName(let n, let e): "--name: '\(n)' is not a D-Bus well-known name: it \(e)"
        case .notRunning(let bus):
            "gaend is not running on \(bus == "system" || bus == "session" ? "the \(bus) bus" : "the bus \(bus)"): neither \(GaendBus.busName) nor any \(GaendBus.busName).* name has an owner (org.freedesktop.DBus.Error.ServiceUnknown)"
        case .severalInstances(let names):
            "several gaend instances on this bus: \(names.joined(separator: ", ")); choose one with --name"
        }
    }
}

/// Finds the bus name of the gaend to talk to. Every gaend owns one name: `org.gaend` (the
/// default) or `org.gaend.SUFFIX` (one instance per controller, `org.gaend.hci0`).
public enum GaendDiscovery {
    /// The name a user typed: a full name, or a suffix without dots (`hci1`) that stands for
    /// `org.gaend.hci1`.
    public static func expand(_ name: String) throws(GaendDiscoveryError) -> String {
        let full = name.contains(".") || name.isEmpty ? name : "\(GaendBus.busName).\(name)"
        do { try WellKnownName.validate(full) } catch { throw .invalidName(name, error) }
        return full
    }

    /// `org.gaend` if it has an owner; else the one owned `org.gaend.*` name. Throws
    /// `severalInstances` (listing them, sorted) or `notRunning`.
    public static func discover(on client: BusClient) async throws -> String {
        let bus = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
        let has = try await client.call(bus.0, bus.1, bus.2, "NameHasOwner", [.string(GaendBus.busName)])
        guard has.count == 1, let owned = has[0].boolValue else {
            throw DBusBindingError.signatureMismatch(expected: "b", actual: DBusValue.signature(of: has))
        }
        if owned { return GaendBus.busName }
        let listed = try await client.call(bus.0, bus.1, bus.2, "ListNames")
        guard listed.count == 1, case .array(.string, let items) = listed[0] else {
            throw DBusBindingError.signatureMismatch(expected: "as", actual: DBusValue.signature(of: listed))
        }
        let names = items.compactMap(\.stringValue)
            .filter { WellKnownName.isWithin($0, prefix: GaendBus.busName) && $0 != GaendBus.busName }
            // The app half's names (org.gaend.App1, org.gaend.App1.hci0) are not gaend's.
            .filter { !WellKnownName.isWithin($0, prefix: GaendAppBus.busName) }
            .sorted()
        switch names.count {
        case 0: throw GaendDiscoveryError.notRunning(bus: client.connection.bus.description)
        case 1: return names[0]
        default: throw GaendDiscoveryError.severalInstances(names)
        }
    }

    /// `requested` expanded if given, else discovered.
    public static func resolve(_ requested: String?, on client: BusClient) async throws -> String {
        if let requested { return try expand(requested) }
        return try await discover(on: client)
    }
}
