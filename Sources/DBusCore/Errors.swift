/// A named D-Bus error: what a remote peer replied, or what a service handler throws to reply
/// with (`org.gaend.Error.RateLimited`, `org.freedesktop.DBus.Error.InvalidArgs`, ...).
public struct DBusNamedError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    public static func invalidArgs(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }
    public static func unknownMethod(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.UnknownMethod", message: message)
    }
    public static func unknownObject(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.UnknownObject", message: message)
    }
    public static func unknownInterface(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.UnknownInterface", message: message)
    }
    public static func unknownProperty(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.UnknownProperty", message: message)
    }
    public static func propertyReadOnly(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: message)
    }
    public static func accessDenied(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.AccessDenied", message: message)
    }
    public static func failed(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.Failed", message: message)
    }
    /// What libdbus itself reports when a call gets no reply in time.
    public static func noReply(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.NoReply", message: message)
    }
    public static func disconnected(_ message: String) -> Self {
        .init(name: "org.freedesktop.DBus.Error.Disconnected", message: message)
    }
}

/// An error a handler can throw to choose the D-Bus error name of the reply.
public protocol DBusErrorConvertible: Error {
    var dbusError: DBusNamedError { get }
}

extension DBusNamedError: DBusErrorConvertible {
    public var dbusError: DBusNamedError { self }
}

/// Local failures of the binding (before or without a remote reply).
public enum DBusBindingError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidBusAddress(String)
    case connectFailed(bus: String, name: String, message: String)
    case nameTaken(String)
    case nameNotPermitted(name: String, reason: String)
    case nameRequestFailed(name: String, reply: UInt32)
    case invalidName(kind: String, value: String)
    case invalidValue(String)
    case signatureMismatch(expected: String, actual: String)
    case unixFDNotSupported
    case closed
    case outOfMemory

    public var description: String {
        switch self {
        case .invalidBusAddress(let a): "invalid bus '\(a)': expected system, session or a D-Bus address such as unix:path=/run/bus"
        case .connectFailed(let bus, let n, let m): "cannot connect to the \(bus) bus: \(n): \(m)"
        case .nameTaken(let n): "the bus name \(n) is already owned by another connection"
        case .nameNotPermitted(let n, let r): "not permitted to own the bus name \(n): \(r)"
        case .nameRequestFailed(let n, let r): "requesting the bus name \(n) failed (reply \(r))"
        case .invalidName(let k, let v): "invalid D-Bus \(k) '\(v)'"
        case .invalidValue(let r): "invalid D-Bus value: \(r)"
        case .signatureMismatch(let e, let a): "signature mismatch: expected '\(e)', got '\(a)'"
        case .unixFDNotSupported: "this connection cannot pass Unix file descriptors"
        case .closed: "the D-Bus connection is closed"
        case .outOfMemory: "libdbus ran out of memory"
        }
    }
}

/// Why a received message could not be decoded into values.
public enum DBusDecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    case limitExceeded(what: String, limit: Int, actual: Int)
    case unexpectedTypeCode(Int32)
    case invalidUTF8(what: String)
    case missingUnixFD

    public var description: String {
        switch self {
        case .missingUnixFD: "a file descriptor argument refers to no descriptor the message carries"
        case .limitExceeded(let w, let l, let a): "\(w) exceeds the limit: \(a) > \(l)"
        case .unexpectedTypeCode(let c): "unexpected type code \(c) in message body"
        case .invalidUTF8(let w): "\(w) is not valid UTF-8"
        }
    }
}
