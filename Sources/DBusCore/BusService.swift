#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import Synchronization
import Logging

/// A method call as a handler sees it.
public struct DBusMethodCall: Sendable {
    public let message: BusMessage
    let connection: BusConnection
    /// The caller's uid when the service already asked it (method calls: admission).
    let knownUID: UInt32?

    init(message: BusMessage, connection: BusConnection, knownUID: UInt32? = nil) {
        self.message = message
        self.connection = connection
        self.knownUID = knownUID
    }

    /// The arguments, already checked against the declared in-signature.
    public var args: [DBusValue] { message.body }
    /// The caller's unique bus name.
    public var sender: String { message.sender ?? "" }
    public var path: String { message.path ?? "" }
    public var member: String { message.member ?? "" }

    /// The caller's Unix uid, asked from the bus (GetConnectionUnixUser), for authorization.
    public func callerUID() async throws -> UInt32 {
        if let knownUID { return knownUID }
        return try await connection.unixUser(of: sender)
    }
}

public typealias DBusMethodHandler = @Sendable (DBusMethodCall) async throws -> [DBusValue]
public typealias DBusPropertyGetter = @Sendable () async throws -> DBusValue
/// Gets the new value (type already checked) and the Set call (for authorization).
public typealias DBusPropertySetter = @Sendable (DBusValue, DBusMethodCall) async throws -> Void

/// Reads a set of readable properties at once, from one snapshot of the object's state.
public typealias DBusPropertyReader = @Sendable (_ names: [String]) async throws -> [String: DBusValue]

/// A declared interface with its handlers bound. Construction checks that every declared
/// method and property has its handlers and that no handler names an undeclared member, so a
/// table and its implementation cannot drift apart.
public struct DBusInterfaceImplementation: Sendable {
    public let declaration: DBusInterfaceDecl
    let methods: [String: DBusMethodHandler]
    /// The readable properties (each has a getter).
    let readable: Set<String>
    /// Reads the named readable properties: one snapshot per call (Get, GetAll, one
    /// PropertiesChanged), however many properties.
    let read: DBusPropertyReader
    let setters: [String: DBusPropertySetter]

    /// Getters that each read the state themselves (cheap state, or tests).
    public init(
        _ declaration: DBusInterfaceDecl,
        methods: [String: DBusMethodHandler] = [:],
        getters: [String: DBusPropertyGetter] = [:],
        setters: [String: DBusPropertySetter] = [:]
    ) throws(DBusTableError) {
        try self.init(declaration, methods: methods, snapshot: { () }, properties: getters.mapValues { get in { @Sendable _ in try await get() } },
                      setters: setters)
    }

    /// Getters over one snapshot of the object's state, taken once per Get, GetAll or
    /// PropertiesChanged (so a GetAll of twenty properties builds one snapshot, not twenty).
    public init<Snapshot: Sendable>(
        _ declaration: DBusInterfaceDecl,
        methods: [String: DBusMethodHandler] = [:],
        snapshot: @escaping @Sendable () async throws -> Snapshot,
        properties: [String: @Sendable (Snapshot) async throws -> DBusValue],
        setters: [String: DBusPropertySetter] = [:]
    ) throws(DBusTableError) {
        try declaration.validate()
        let i = declaration.name
        for m in declaration.methods where methods[m.name] == nil {
            throw .unboundMethod(interface: i, method: m.name)
        }
        for p in declaration.properties {
            if p.access.isReadable, properties[p.name] == nil {
                throw .unboundProperty(interface: i, property: p.name, access: "get")
            }
            if p.access.isWritable, setters[p.name] == nil {
                throw .unboundProperty(interface: i, property: p.name, access: "set")
            }
        }
        for name in methods.keys where declaration.method(name) == nil {
            throw .unknownMember(interface: i, member: name)
        }
        for name in properties.keys where !(declaration.property(name)?.access.isReadable ?? false) {
            throw .unknownMember(interface: i, member: name)
        }
        for name in setters.keys where !(declaration.property(name)?.access.isWritable ?? false) {
            throw .unknownMember(interface: i, member: name)
        }
        self.declaration = declaration
        self.methods = methods
        self.readable = Set(properties.keys)
        self.read = { names in
            guard !names.isEmpty else { return [:] }
            let state = try await snapshot()
            var out: [String: DBusValue] = [:]
            for name in names {
                if let get = properties[name] { out[name] = try await get(state) }
            }
            return out
        }
        self.setters = setters
    }
}

/// The service side of the bus: exports objects built from interface tables and dispatches
/// calls to them, implementing org.freedesktop.DBus.Properties and Introspectable from the
/// same tables (org.freedesktop.DBus.Peer is answered by libdbus).
///
/// Calls arrive on the connection's loop thread, are queued (bounded) and handled by `run()`,
/// each in its own child task. `run()` admits or refuses each call as it arrives (`CallAdmission`:
/// per uid, in total, with a share kept for other callers, and property reads in a lane of
/// their own), so a call never waits behind others in progress. Handlers are async and may
/// take as long as they need; replies are sent when they return.
public final class BusService: Sendable {
    public let connection: BusConnection
    /// Error name for handler failures that are not `DBusErrorConvertible`.
    public let fallbackErrorName: String
    public var maxConcurrentCalls: Int { admission.limits.maxConcurrentCalls }
    public let admission: CallAdmission
    private let logger: Logger
    /// Method calls whose caller's uid is being asked from the bus (bounded too).
    private let lookups = Mutex(0)
    private let stopping = Mutex(false)
    private let objects = Mutex<[String: [DBusInterfaceImplementation]]>([:])
    private let incoming: AsyncStream<BusMessage>

    public init(connection: BusConnection, fallbackErrorName: String = "org.freedesktop.DBus.Error.Failed",
                maxQueuedCalls: Int = 256, maxConcurrentCalls: Int = 16, callLimits: DBusCallLimits? = nil,
                logger: Logger = Logger(label: "dbus.service")) {
        self.connection = connection
        self.fallbackErrorName = fallbackErrorName
        var limits = callLimits ?? DBusCallLimits()
        if callLimits == nil {
            limits = DBusCallLimits(maxConcurrentCalls: maxConcurrentCalls, maxCallsPerUID: min(limits.maxCallsPerUID, maxConcurrentCalls),
                                    reservedForOtherCallers: limits.reservedForOtherCallers, maxConcurrentReads: limits.maxConcurrentReads)
        }
        self.admission = CallAdmission(limits: limits)
        self.logger = logger
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self, bufferingPolicy: .bufferingOldest(maxQueuedCalls))
        incoming = stream
        connection.setMethodCallHandler { [connection] call in
            if case .dropped = continuation.yield(call), !call.noReplyExpected {
                let reply = BusMessage.error(to: call, DBusNamedError(
                    name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "too many calls in progress"))
                Task { _ = try? await connection.send(reply) }
            }
        }
        _ = connection.addSignalObserver { message in
            if message == nil { continuation.finish() }
        }
    }

    /// Exports `interfaces` at `path` (replacing what was there).
    public func export(path: String, _ interfaces: [DBusInterfaceImplementation]) throws(DBusBindingError) {
        guard DBusNames.isValidObjectPath(path) else { throw .invalidName(kind: "object path", value: path) }
        var names = Set<String>()
        for i in interfaces where !names.insert(i.declaration.name).inserted {
            throw .invalidValue("interface \(i.declaration.name) given twice for \(path)")
        }
        objects.withLock { $0[path] = interfaces }
    }

    public func unexport(path: String) {
        objects.withLock { $0[path] = nil }
    }

    /// Serves calls until the connection closes or the task is cancelled. Cancelling it
    /// cancels the calls in progress too (their handlers see it, and reply); it returns when
    /// they have.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await call in incoming {
                if Task.isCancelled || stopping.withLock({ $0 }) {
                    refuse(call, "org.freedesktop.DBus.Error.Failed", "the service is stopping")
                    continue
                }
                if Self.isRead(call) {
                    if let why = admission.claimRead() { refuse(call, Self.limitsExceeded, why); continue }
                    group.addTask {
                        await self.serve(call, uid: nil)
                        self.admission.releaseRead()
                    }
                    continue
                }
                let cap = 2 * admission.limits.maxConcurrentCalls
                let claimed = lookups.withLock { n -> Bool in
                    guard n < cap else { return false }
                    n += 1
                    return true
                }
                guard claimed else {
                    refuse(call, Self.limitsExceeded, "too many calls arriving at once; retry")
                    continue
                }
                group.addTask { await self.admitAndServe(call) }
            }
        }
    }

    /// Refuses new calls from now on (each gets an error at once); calls in progress go on
    /// until `run()`'s task is cancelled or they return.
    public func beginStopping() { stopping.withLock { $0 = true } }

    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

    /// Property reads and introspection: answered from a snapshot, never from a caller's files.
    static func isRead(_ m: BusMessage) -> Bool {
        switch (m.interface, m.member) {
        case ("org.freedesktop.DBus.Properties", "Get"), ("org.freedesktop.DBus.Properties", "GetAll"),
             ("org.freedesktop.DBus.Introspectable", "Introspect"), (nil, "Introspect"):
            return true
        default:
            return false
        }
    }

    private func refuse(_ call: BusMessage, _ name: String, _ message: String) {
        guard !call.noReplyExpected else { return }
        let reply = BusMessage.error(to: call, DBusNamedError(name: name, message: message))
        Task { [connection] in _ = try? await connection.send(reply) }
    }

    /// A method call: the caller's uid from the bus, then a slot for it, or a refusal at once.
    private func admitAndServe(_ call: BusMessage) async {
        let uid: UInt32
        do {
            defer { lookups.withLock { $0 -= 1 } }
            uid = try await connection.unixUser(of: call.sender ?? "")
        } catch {
            refuse(call, "org.freedesktop.DBus.Error.Failed", "cannot identify the caller: \(error)")
            return
        }
        if let why = admission.claimCall(uid: uid) {
            logger.notice("D-Bus call refused", metadata: ["dbus.member": "\(call.member ?? "")", "caller.uid": "\(uid)", "reason": "\(why)"])
            refuse(call, Self.limitsExceeded, why)
            return
        }
        defer { admission.releaseCall(uid: uid) }
        await serve(call, uid: uid)
    }

    /// Emits a declared signal; the arguments must match its signature.
    public func emit(path: String, interface: String, signal: String, _ args: [DBusValue],
                     destination: String? = nil) async throws {
        guard let impl = lookup(path: path, interface: interface) else {
            throw DBusBindingError.invalidValue("no interface \(interface) exported at \(path)")
        }
        guard let decl = impl.declaration.signal(signal) else {
            throw DBusBindingError.invalidValue("\(interface) declares no signal \(signal)")
        }
        let actual = DBusValue.signature(of: args)
        guard actual == decl.signature else {
            throw DBusBindingError.signatureMismatch(expected: decl.signature, actual: actual)
        }
        try await connection.send(.signal(path: path, interface: interface, member: signal, body: args,
                                          destination: destination))
    }

    /// Emits org.freedesktop.DBus.Properties.PropertiesChanged for `names`, as each property's
    /// EmitsChangedSignal annotation says (value, invalidation, or nothing).
    public func emitPropertiesChanged(path: String, interface: String, _ names: [String]) async throws {
        guard let impl = lookup(path: path, interface: interface) else {
            throw DBusBindingError.invalidValue("no interface \(interface) exported at \(path)")
        }
        var withValue: [String] = []
        var invalidated: [String] = []
        for name in names {
            guard let p = impl.declaration.property(name) else {
                throw DBusBindingError.invalidValue("\(interface) declares no property \(name)")
            }
            switch p.emitsChanged {
            case .true:
                if impl.readable.contains(name) { withValue.append(name) }
            case .invalidates:
                invalidated.append(name)
            case .const, .false:
                continue
            }
        }
        let changed = try await impl.read(withValue)
        guard !changed.isEmpty || !invalidated.isEmpty else { return }
        try await connection.send(.signal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            body: [.string(interface), .vardict(changed), .array(.string, invalidated.map { .string($0) })]))
    }

    /// The introspection XML of `path` (what Introspect returns).
    public func introspect(path: String) -> String? {
        let (impls, children) = objects.withLock { objects -> ([DBusInterfaceImplementation]?, [String]) in
            (objects[path], Self.children(of: path, in: Array(objects.keys)))
        }
        guard impls != nil || !children.isEmpty else { return nil }
        var interfaces = DBusIntrospection.standardInterfaces
        if let impls {
            interfaces += impls.map(\.declaration)
        } else {
            // A parent node with no object of its own: only Introspectable, to walk the tree.
            interfaces = interfaces.filter { $0.name == "org.freedesktop.DBus.Introspectable" }
        }
        return DBusIntrospection.xml(interfaces: interfaces, children: children)
    }

    static func children(of path: String, in paths: [String]) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        var out = Set<String>()
        for p in paths where p.hasPrefix(prefix) && p != path {
            if let first = p.dropFirst(prefix.count).split(separator: "/").first { out.insert(String(first)) }
        }
        return out.sorted()
    }

    // MARK: Dispatch

    private func lookup(path: String, interface: String) -> DBusInterfaceImplementation? {
        objects.withLock { $0[path]?.first { $0.declaration.name == interface } }
    }

    private func serve(_ message: BusMessage, uid: UInt32?) async {
        let result: Result<[DBusValue], DBusNamedError>
        do {
            result = .success(try await dispatch(message, uid: uid))
        } catch let e as DBusErrorConvertible {
            result = .failure(e.dbusError)
        } catch {
            logger.warning("D-Bus handler failed", metadata: [
                "dbus.member": "\(message.interface ?? "").\(message.member ?? "")", "error": "\(error)"])
            result = .failure(DBusNamedError(name: fallbackErrorName, message: "\(error)"))
        }
        guard !message.noReplyExpected else { return }
        let reply: BusMessage
        switch result {
        case .success(let body): reply = .methodReturn(to: message, body: body)
        case .failure(let e): reply = .error(to: message, e)
        }
        do {
            try await connection.send(reply)
        } catch {
            logger.warning("D-Bus reply not sent", metadata: ["dbus.member": "\(message.member ?? "")", "error": "\(error)"])
        }
    }

    private func dispatch(_ m: BusMessage, uid: UInt32?) async throws -> [DBusValue] {
        let path = m.path ?? "/"
        let member = m.member ?? ""
        let call = DBusMethodCall(message: m, connection: connection, knownUID: uid)
        if m.interface == "org.freedesktop.DBus.Introspectable" || (m.interface == nil && member == "Introspect") {
            guard member == "Introspect" else { throw DBusNamedError.unknownMethod("no method \(member) in Introspectable") }
            try expect(m, "")
            guard let xml = introspect(path: path) else { throw DBusNamedError.unknownObject("no object at \(path)") }
            return [.string(xml)]
        }
        guard let impls = objects.withLock({ $0[path] }) else {
            throw DBusNamedError.unknownObject("no object at \(path)")
        }
        if m.interface == "org.freedesktop.DBus.Properties" {
            return try await properties(call, impls)
        }
        let impl: DBusInterfaceImplementation
        if let name = m.interface {
            guard let i = impls.first(where: { $0.declaration.name == name }) else {
                throw DBusNamedError.unknownInterface("no interface \(name) at \(path)")
            }
            impl = i
        } else {
            guard let i = impls.first(where: { $0.declaration.method(member) != nil }) else {
                throw DBusNamedError.unknownMethod("no method \(member) at \(path)")
            }
            impl = i
        }
        let iface = impl.declaration.name
        guard let decl = impl.declaration.method(member), let handler = impl.methods[member] else {
            throw DBusNamedError.unknownMethod("no method \(member) in \(iface)")
        }
        try expect(m, decl.inSignature, "\(iface).\(member)")
        let out = try await handler(call)
        let outSignature = DBusValue.signature(of: out)
        guard outSignature == decl.outSignature else {
            // A handler bug: never send the caller something the table does not promise.
            logger.error("D-Bus handler returned the wrong signature", metadata: [
                "dbus.member": "\(iface).\(member)", "expected": "\(decl.outSignature)", "actual": "\(outSignature)"])
            throw DBusNamedError(name: fallbackErrorName, message: "internal error in \(iface).\(member)")
        }
        return out
    }

    private func expect(_ m: BusMessage, _ signature: String, _ what: String? = nil) throws {
        guard m.signature == signature else {
            let name = what ?? "\(m.interface ?? "").\(m.member ?? "")"
            throw DBusNamedError.invalidArgs("\(name) takes arguments of signature '\(signature)', got '\(m.signature)'")
        }
    }

    private func properties(_ call: DBusMethodCall, _ impls: [DBusInterfaceImplementation]) async throws -> [DBusValue] {
        let m = call.message
        func find(_ name: String) throws -> DBusInterfaceImplementation {
            guard let i = impls.first(where: { $0.declaration.name == name }) else {
                throw DBusNamedError.unknownInterface("no interface \(name) at \(call.path)")
            }
            return i
        }
        func property(_ impl: DBusInterfaceImplementation, _ name: String) throws -> DBusPropertyDecl {
            guard let p = impl.declaration.property(name) else {
                throw DBusNamedError.unknownProperty("no property \(name) in \(impl.declaration.name)")
            }
            return p
        }
        /// The values of `props` from one snapshot, each checked against its declared type.
        func read(_ impl: DBusInterfaceImplementation, _ props: [DBusPropertyDecl]) async throws -> [String: DBusValue] {
            for p in props where !impl.readable.contains(p.name) {
                throw DBusNamedError.invalidArgs("property \(p.name) is write-only")
            }
            let values = try await impl.read(props.map(\.name))
            for p in props {
                guard let v = values[p.name], v.type.signature == p.signature else {
                    logger.error("D-Bus property getter returned the wrong type", metadata: [
                        "dbus.property": "\(impl.declaration.name).\(p.name)", "expected": "\(p.signature)",
                        "actual": "\(values[p.name]?.type.signature ?? "nothing")"])
                    throw DBusNamedError(name: fallbackErrorName, message: "internal error reading \(p.name)")
                }
            }
            return values
        }
        // The signature is checked first, so these arguments exist with these types.
        func string(_ i: Int) -> String { m.body[i].stringValue ?? "" }
        switch m.member {
        case "Get":
            try expect(m, "ss")
            let impl = try find(string(0))
            let p = try property(impl, string(1))
            return [.variant(try await read(impl, [p])[p.name]!)]
        case "GetAll":
            try expect(m, "s")
            let impl = try find(string(0))
            return [.vardict(try await read(impl, impl.declaration.properties.filter(\.access.isReadable)))]
        case "Set":
            try expect(m, "ssv")
            let impl = try find(string(0))
            let p = try property(impl, string(1))
            guard p.access.isWritable, let set = impl.setters[p.name] else {
                throw DBusNamedError.propertyReadOnly("property \(p.name) of \(impl.declaration.name) is read-only")
            }
            guard let value = m.body[2].variantValue, value.type.signature == p.signature else {
                let actual = m.body[2].variantValue?.type.signature ?? m.body[2].type.signature
                throw DBusNamedError.invalidArgs("property \(p.name) has type '\(p.signature)', got '\(actual)'")
            }
            try await set(value, call)
            try await emitPropertiesChanged(path: call.path, interface: impl.declaration.name, [p.name])
            return []
        default:
            throw DBusNamedError.unknownMethod("no method \(m.member ?? "") in org.freedesktop.DBus.Properties")
        }
    }
}
