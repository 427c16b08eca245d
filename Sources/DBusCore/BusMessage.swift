import CDBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A D-Bus message as a Sendable value: headers and decoded body. Converted from and to
/// libdbus messages on the connection's loop thread only.
public struct BusMessage: Sendable {
    public enum Kind: Int32, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    public var kind: Kind
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var destination: String?
    public var sender: String?
    public var serial: UInt32 = 0
    public var replySerial: UInt32 = 0
    public var noReplyExpected = false
    public var body: [DBusValue]

    public init(
        kind: Kind, path: String? = nil, interface: String? = nil, member: String? = nil,
        errorName: String? = nil, destination: String? = nil, body: [DBusValue] = []
    ) {
        self.kind = kind
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.destination = destination
        self.body = body
    }

    /// The body's signature.
    public var signature: String { DBusValue.signature(of: body) }

    public static func methodCall(
        destination: String?, path: String, interface: String?, member: String, body: [DBusValue] = []
    ) -> BusMessage {
        BusMessage(kind: .methodCall, path: path, interface: interface, member: member,
                   destination: destination, body: body)
    }

    public static func signal(
        path: String, interface: String, member: String, body: [DBusValue] = [], destination: String? = nil
    ) -> BusMessage {
        BusMessage(kind: .signal, path: path, interface: interface, member: member,
                   destination: destination, body: body)
    }

    /// The successful reply to `call`.
    public static func methodReturn(to call: BusMessage, body: [DBusValue] = []) -> BusMessage {
        var m = BusMessage(kind: .methodReturn, destination: call.sender, body: body)
        m.replySerial = call.serial
        return m
    }

    /// The error reply to `call`.
    public static func error(to call: BusMessage, _ error: DBusNamedError) -> BusMessage {
        var m = BusMessage(kind: .error, errorName: error.name, destination: call.sender,
                           body: [.string(error.message)])
        m.replySerial = call.serial
        return m
    }

    /// The error this message carries, if it is an error reply.
    public var namedError: DBusNamedError? {
        guard kind == .error else { return nil }
        return DBusNamedError(name: errorName ?? "org.freedesktop.DBus.Error.Failed",
                              message: body.first?.stringValue ?? "")
    }

    // MARK: Wire form (D-Bus specification, "Message Format")

    /// Decodes a message from its wire bytes (e.g. a capture), within `limits`. Messages that
    /// carry Unix file descriptors cannot be decoded this way (the descriptors are not in the bytes).
    public init(marshalled bytes: Data, limits: DBusLimits = .default) throws {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        let raw = bytes.withUnsafeBytes { buf -> OpaquePointer? in
            guard let base = buf.baseAddress, buf.count <= Int(Int32.max) else { return nil }
            return dbus_message_demarshal(base.assumingMemoryBound(to: CChar.self), Int32(buf.count), &err)
        }
        guard let raw else {
            let reason = err.message.map { String(cString: $0) } ?? "not a D-Bus message"
            throw DBusBindingError.invalidValue("cannot decode message bytes: \(reason)")
        }
        defer { dbus_message_unref(raw) }
        guard BusMessage.rawSignature(of: raw).utf8.contains(UInt8(ascii: "h")) == false else {
            throw DBusBindingError.unixFDNotSupported
        }
        guard var m = BusMessage.headers(of: raw) else {
            throw DBusBindingError.invalidValue("unknown message type \(dbus_message_get_type(raw))")
        }
        m.body = try Marshal.decode(raw, limits: limits)
        self = m
    }

    /// The message's wire bytes (serial 0 unless set; descriptors are not representable).
    public func marshalled() throws -> Data {
        let raw = try makeRaw()
        defer { dbus_message_unref(raw) }
        if serial != 0 { dbus_message_set_serial(raw, serial) }
        var bytes: UnsafeMutablePointer<CChar>? = nil
        var count: Int32 = 0
        guard dbus_message_marshal(raw, &bytes, &count) != 0, let bytes else { throw DBusBindingError.outOfMemory }
        defer { dbus_free(bytes) }
        return Data(bytes: bytes, count: Int(count))
    }

    // MARK: libdbus conversion (loop thread)

    /// Builds a libdbus message; the caller unrefs it. Everything is validated first.
    func makeRaw() throws(DBusBindingError) -> OpaquePointer {
        try validateHeaders()
        try Marshal.validate(body)
        guard let raw = dbus_message_new(kind.rawValue) else { throw .outOfMemory }
        do {
            if let path { try set(dbus_message_set_path(raw, path)) }
            if let interface { try set(dbus_message_set_interface(raw, interface)) }
            if let member { try set(dbus_message_set_member(raw, member)) }
            if let errorName { try set(dbus_message_set_error_name(raw, errorName)) }
            if let destination { try set(dbus_message_set_destination(raw, destination)) }
            if replySerial != 0 { try set(dbus_message_set_reply_serial(raw, replySerial)) }
            if noReplyExpected { dbus_message_set_no_reply(raw, 1) }
            try Marshal.append(body, to: raw)
        } catch {
            dbus_message_unref(raw)
            throw error
        }
        return raw
    }

    private func set(_ ok: dbus_bool_t) throws(DBusBindingError) {
        guard ok != 0 else { throw .outOfMemory }
    }

    private func validateHeaders() throws(DBusBindingError) {
        func valid(_ s: String?, _ kind: String, _ f: (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t) throws(DBusBindingError) {
            guard let s else { return }
            guard !s.utf8.contains(0), f(s, nil) != 0 else { throw .invalidName(kind: kind, value: s) }
        }
        try valid(path, "object path", dbus_validate_path)
        try valid(interface, "interface name", dbus_validate_interface)
        try valid(member, "member name", dbus_validate_member)
        try valid(errorName, "error name", dbus_validate_error_name)
        try valid(destination, "bus name", dbus_validate_bus_name)
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw .invalidValue("a method call needs a path and a member") }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw .invalidValue("a signal needs a path, an interface and a member")
            }
        case .error:
            guard errorName != nil, replySerial != 0 else { throw .invalidValue("an error needs a name and a reply serial") }
        case .methodReturn:
            guard replySerial != 0 else { throw .invalidValue("a method return needs a reply serial") }
        }
    }

    /// Reads a libdbus message's headers; the body is decoded separately (it may fail limits).
    static func headers(of raw: OpaquePointer) -> BusMessage? {
        guard let kind = Kind(rawValue: dbus_message_get_type(raw)) else { return nil }
        func str(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        var m = BusMessage(kind: kind)
        m.path = str(dbus_message_get_path(raw))
        m.interface = str(dbus_message_get_interface(raw))
        m.member = str(dbus_message_get_member(raw))
        m.errorName = str(dbus_message_get_error_name(raw))
        m.destination = str(dbus_message_get_destination(raw))
        m.sender = str(dbus_message_get_sender(raw))
        m.serial = dbus_message_get_serial(raw)
        m.replySerial = dbus_message_get_reply_serial(raw)
        m.noReplyExpected = dbus_message_get_no_reply(raw) != 0
        return m
    }

    /// The signature libdbus recorded for the body (available before decoding it).
    static func rawSignature(of raw: OpaquePointer) -> String {
        dbus_message_get_signature(raw).map { String(cString: $0) } ?? ""
    }
}

/// Which bus to connect to: `system`, `session`, or an explicit D-Bus address.
public enum BusAddress: Sendable, Equatable, CustomStringConvertible {
    case system
    case session
    case address(String)

    /// Parses `system`, `session` or a D-Bus address (`unix:path=...`, `unix:abstract=...`,
    /// `tcp:host=...,port=...`; validated by libdbus's address parser).
    public init(parsing text: String) throws(DBusBindingError) {
        switch text {
        case "system": self = .system
        case "session": self = .session
        default:
            guard !text.isEmpty, !text.utf8.contains(0) else { throw .invalidBusAddress(text) }
            var entries: UnsafeMutablePointer<OpaquePointer?>? = nil
            var n: Int32 = 0
            guard dbus_parse_address(text, &entries, &n, nil) != 0, n > 0 else {
                throw .invalidBusAddress(text)
            }
            dbus_address_entries_free(entries)
            self = .address(text)
        }
    }

    public var description: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let a): a
        }
    }
}
