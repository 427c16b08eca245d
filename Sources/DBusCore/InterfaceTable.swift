/// One argument of a method or signal.
public struct DBusArgument: Sendable, Equatable {
    public var name: String
    public var signature: String
    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}

public struct DBusMethodDecl: Sendable, Equatable {
    public var name: String
    public var inArgs: [DBusArgument]
    public var outArgs: [DBusArgument]
    /// The interface revision in which the method appeared.
    public var since: Int
    /// Error names the method may reply with (documentation and checks; not exhaustive for
    /// standard org.freedesktop.DBus.Error.* errors).
    public var errors: [String]
    public var deprecated: Bool

    public init(_ name: String, in inArgs: [DBusArgument] = [], out outArgs: [DBusArgument] = [],
                since: Int = 1, errors: [String] = [], deprecated: Bool = false) {
        self.name = name
        self.inArgs = inArgs
        self.outArgs = outArgs
        self.since = since
        self.errors = errors
        self.deprecated = deprecated
    }

    public var inSignature: String { inArgs.map(\.signature).joined() }
    public var outSignature: String { outArgs.map(\.signature).joined() }
}

public enum DBusPropertyAccess: String, Sendable {
    case read, write, readwrite
    public var isReadable: Bool { self != .write }
    public var isWritable: Bool { self != .read }
}

/// The `org.freedesktop.DBus.Property.EmitsChangedSignal` annotation.
public enum DBusEmitsChanged: String, Sendable {
    /// PropertiesChanged carries the new value.
    case `true`
    /// PropertiesChanged names the property as invalidated, without its value.
    case invalidates
    /// The value never changes while the object exists.
    case const
    /// No signal: clients must poll.
    case `false`
}

public struct DBusPropertyDecl: Sendable, Equatable {
    public var name: String
    public var signature: String
    public var access: DBusPropertyAccess
    public var emitsChanged: DBusEmitsChanged
    public var since: Int

    public init(_ name: String, _ signature: String, _ access: DBusPropertyAccess,
                emitsChanged: DBusEmitsChanged = .true, since: Int = 1) {
        self.name = name
        self.signature = signature
        self.access = access
        self.emitsChanged = emitsChanged
        self.since = since
    }
}

public struct DBusSignalDecl: Sendable, Equatable {
    public var name: String
    public var args: [DBusArgument]
    public var since: Int

    public init(_ name: String, _ args: [DBusArgument] = [], since: Int = 1) {
        self.name = name
        self.args = args
        self.since = since
    }

    public var signature: String { args.map(\.signature).joined() }
}

public struct DBusErrorDecl: Sendable, Equatable {
    public var name: String
    public var summary: String
    public init(_ name: String, _ summary: String) {
        self.name = name
        self.summary = summary
    }
}

/// The declarative table of one D-Bus interface: the single source from which dispatch,
/// argument checks, org.freedesktop.DBus.Properties and introspection XML are derived.
public struct DBusInterfaceDecl: Sendable, Equatable {
    /// Versioned name, e.g. `org.gaend.ExposureNotification1`.
    public var name: String
    /// Current revision: every member's `since` is at most this.
    public var revision: Int
    public var methods: [DBusMethodDecl]
    public var properties: [DBusPropertyDecl]
    public var signals: [DBusSignalDecl]
    public var errors: [DBusErrorDecl]

    public init(name: String, revision: Int = 1, methods: [DBusMethodDecl] = [],
                properties: [DBusPropertyDecl] = [], signals: [DBusSignalDecl] = [],
                errors: [DBusErrorDecl] = []) {
        self.name = name
        self.revision = revision
        self.methods = methods
        self.properties = properties
        self.signals = signals
        self.errors = errors
    }

    public func method(_ name: String) -> DBusMethodDecl? { methods.first { $0.name == name } }
    public func property(_ name: String) -> DBusPropertyDecl? { properties.first { $0.name == name } }
    public func signal(_ name: String) -> DBusSignalDecl? { signals.first { $0.name == name } }

    /// Checks names, signatures, revisions and uniqueness; an exported table must pass.
    public func validate() throws(DBusTableError) {
        func bad(_ what: String) -> DBusTableError { .invalid(interface: name, reason: what) }
        guard dbus_validateInterface(name) else { throw bad("invalid interface name") }
        var seen = Set<String>()
        func member(_ n: String, _ since: Int) throws(DBusTableError) {
            guard dbus_validateMember(n) else { throw bad("invalid member name '\(n)'") }
            guard seen.insert(n).inserted else { throw bad("duplicate member '\(n)'") }
            guard since >= 1, since <= revision else { throw bad("'\(n)' since \(since) outside 1...\(revision)") }
        }
        func signature(_ s: String, _ owner: String) throws(DBusTableError) {
            do { _ = try DBusType.parse(s) } catch { throw bad("'\(owner)': \(error)") }
        }
        for m in methods {
            try member(m.name, m.since)
            for a in m.inArgs + m.outArgs { try signature(a.signature, m.name + "." + a.name) }
            for e in m.errors where !dbus_validateErrorName(e) { throw bad("invalid error name '\(e)'") }
        }
        for p in properties {
            try member(p.name, p.since)
            do { _ = try DBusType.parseSingle(p.signature) } catch { throw bad("'\(p.name)': \(error)") }
        }
        for s in signals {
            try member(s.name, s.since)
            for a in s.args { try signature(a.signature, s.name + "." + a.name) }
        }
        for e in errors where !dbus_validateErrorName(e.name) { throw bad("invalid error name '\(e.name)'") }
    }
}

public enum DBusTableError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(interface: String, reason: String)
    case unboundMethod(interface: String, method: String)
    case unboundProperty(interface: String, property: String, access: String)
    case unknownMember(interface: String, member: String)

    public var description: String {
        switch self {
        case .invalid(let i, let r): "interface \(i): \(r)"
        case .unboundMethod(let i, let m): "interface \(i): method \(m) has no handler"
        case .unboundProperty(let i, let p, let a): "interface \(i): property \(p) has no \(a) handler"
        case .unknownMember(let i, let m): "interface \(i): handler given for undeclared member \(m)"
        }
    }
}

import CDBus

/// Name checks by libdbus's own validators (D-Bus specification, "Valid Names").
public enum DBusNames {
    public static func isValidObjectPath(_ s: String) -> Bool { Marshal.isValidObjectPath(s) }
    public static func isValidInterface(_ s: String) -> Bool { dbus_validateInterface(s) }
    public static func isValidMember(_ s: String) -> Bool { dbus_validateMember(s) }
    public static func isValidErrorName(_ s: String) -> Bool { dbus_validateErrorName(s) }
    public static func isValidBusName(_ s: String) -> Bool { !s.utf8.contains(0) && dbus_validate_bus_name(s, nil) != 0 }
}

func dbus_validateInterface(_ s: String) -> Bool { !s.utf8.contains(0) && dbus_validate_interface(s, nil) != 0 }
func dbus_validateMember(_ s: String) -> Bool { !s.utf8.contains(0) && dbus_validate_member(s, nil) != 0 }
func dbus_validateErrorName(_ s: String) -> Bool { !s.utf8.contains(0) && dbus_validate_error_name(s, nil) != 0 }
