import DBusCore

/// A D-Bus client: method calls with timeouts, properties, introspection, signal streams and
/// file-descriptor passing over one `BusConnection`. gaenctl and the tests both use it.
/// Remote failures are thrown as `DBusNamedError` with the error's D-Bus name.
public final class BusClient: Sendable {
    public let connection: BusConnection
    public let timeout: Duration

    public init(connection: BusConnection, timeout: Duration = .seconds(25)) {
        self.connection = connection
        self.timeout = timeout
    }

    /// Connects to `bus` (`system`, `session` or an address, see `BusAddress(parsing:)`).
    public convenience init(bus: BusAddress, timeout: Duration = .seconds(25), limits: DBusLimits = .default) throws {
        self.init(connection: try BusConnection.connect(bus, limits: limits), timeout: timeout)
    }

    public func close() { connection.close() }

    /// Calls `interface.method` on `path` at `destination`; returns the reply's values.
    /// Pass file descriptors as `.unixFD(DBusUnixFD(duplicating: fd))`.
    public func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
                     _ args: [DBusValue] = [], timeout: Duration? = nil) async throws -> [DBusValue] {
        let reply = try await connection.call(
            .methodCall(destination: destination, path: path, interface: interface, member: method, body: args),
            timeout: timeout ?? self.timeout)
        return reply.body
    }

    public func getProperty(_ destination: String, _ path: String, _ interface: String, _ name: String) async throws -> DBusValue {
        let out = try await call(destination, path, "org.freedesktop.DBus.Properties", "Get",
                                 [.string(interface), .string(name)])
        guard out.count == 1, let v = out[0].variantValue else {
            throw DBusBindingError.signatureMismatch(expected: "v", actual: DBusValue.signature(of: out))
        }
        return v
    }

    public func getAllProperties(_ destination: String, _ path: String, _ interface: String) async throws -> [String: DBusValue] {
        let out = try await call(destination, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        guard out.count == 1, let d = out[0].vardictValue else {
            throw DBusBindingError.signatureMismatch(expected: "a{sv}", actual: DBusValue.signature(of: out))
        }
        return d
    }

    public func setProperty(_ destination: String, _ path: String, _ interface: String, _ name: String,
                            _ value: DBusValue) async throws {
        _ = try await call(destination, path, "org.freedesktop.DBus.Properties", "Set",
                           [.string(interface), .string(name), .variant(value)])
    }

    public func introspect(_ destination: String, _ path: String) async throws -> String {
        let out = try await call(destination, path, "org.freedesktop.DBus.Introspectable", "Introspect")
        guard out.count == 1, let xml = out[0].stringValue else {
            throw DBusBindingError.signatureMismatch(expected: "s", actual: DBusValue.signature(of: out))
        }
        return xml
    }

    /// Subscribes to signals (nil = any). The bus filters by sender; this side filters by
    /// path, interface and member, and, with a `sender`, by the sender's unique name too: a
    /// match rule does not stop another connection from sending a signal straight to this
    /// one (a unicast signal is delivered whatever the rules), so every signal whose sender is
    /// not the unique name owning `sender` when the subscription was made is dropped.
    /// The stream ends when the connection closes; cancelling its consumer removes the subscription.
    public func signals(sender: String? = nil, path: String? = nil, interface: String? = nil,
                        member: String? = nil) async throws -> AsyncStream<BusMessage> {
        // A unique name is its own owner; a well-known one is asked once (the bus answers
        // NameHasNoOwner when no daemon owns it, which the caller's next call would too).
        var resolved: String? = sender
        if let sender, !sender.hasPrefix(":") { resolved = try await connection.nameOwner(of: sender) }
        let owner = resolved
        var rule = "type='signal'"
        for (key, value) in [("sender", sender), ("path", path), ("interface", interface), ("member", member)] {
            guard let value else { continue }
            guard !value.contains("'"), !value.contains(",") else {
                throw DBusBindingError.invalidValue("match rule value \(value)")
            }
            rule += ",\(key)='\(value)'"
        }
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self, bufferingPolicy: .bufferingNewest(4096))
        let id = connection.addSignalObserver { message in
            guard let message else { return continuation.finish() }
            if let owner, message.sender != owner { return }
            if let path, message.path != path { return }
            if let interface, message.interface != interface { return }
            if let member, message.member != member { return }
            continuation.yield(message)
        }
        do {
            try await connection.addMatch(rule)
        } catch {
            connection.removeSignalObserver(id)
            throw error
        }
        continuation.onTermination = { [connection, rule] _ in
            connection.removeSignalObserver(id)
            Task { try? await connection.removeMatch(rule) }
        }
        return stream
    }
}
