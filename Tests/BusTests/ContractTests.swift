import BLEDaemon
import DBusCore
import Foundation
import GaenClient
import Testing

/// The gaend API contract: dbus/*.xml and docs/dbus.md must say what the tables declare.
/// Regenerate the XML after changing a table: `GAEND_UPDATE_DBUS_XML=1 swift test --filter ContractTests`.
@Suite("gaend D-Bus contract: tables, XML files, docs")
struct ContractTests {
    @Test("the tables are valid", arguments: GaendInterfaces.all)
    func valid(table: DBusInterfaceDecl) throws {
        try table.validate()
        for m in table.methods {
            for e in m.errors where e.hasPrefix(GaendBus.errorPrefix) {
                #expect(table.errors.contains { $0.name == e }, "\(m.name) names undeclared error \(e)")
            }
        }
    }

    @Test("dbus/<interface>.xml is the introspection of its table", arguments: GaendInterfaces.all)
    func xmlFile(table: DBusInterfaceDecl) throws {
        let url = repoRoot.appendingPathComponent("dbus/\(table.name).xml")
        let generated = DBusIntrospection.xml(interfaces: [table])
        if ProcessInfo.processInfo.environment["GAEND_UPDATE_DBUS_XML"] == "1" {
            try generated.write(to: url, atomically: true, encoding: .utf8)
        }
        let file = try String(contentsOf: url, encoding: .utf8)
        #expect(file == generated, "dbus/\(table.name).xml differs from the table; regenerate it")
    }

    static func methodDoc(_ m: DBusMethodDecl) -> String {
        let ins = m.inArgs.map { "\($0.signature) \($0.name)" }.joined(separator: ", ")
        let outs = m.outArgs.map { "\($0.signature) \($0.name)" }.joined(separator: ", ")
        return "`\(m.name)(\(ins))" + (outs.isEmpty ? "" : " → (\(outs))") + "`"
    }

    static func signalDoc(_ s: DBusSignalDecl) -> String {
        "`\(s.name)(" + s.args.map { "\($0.signature) \($0.name)" }.joined(separator: ", ") + ")`"
    }

    @Test("docs/dbus.md documents every member with its signature, access, errors and revision",
          arguments: GaendInterfaces.all)
    func docs(table: DBusInterfaceDecl) throws {
        let lines = try String(contentsOf: repoRoot.appendingPathComponent("docs/dbus.md"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        func row(_ head: String, since: Int) -> String? {
            lines.first { $0.hasPrefix("| " + head) && $0.hasSuffix("| \(since) |") }
        }
        for m in table.methods {
            let r = row(Self.methodDoc(m), since: m.since)
            #expect(r != nil, "no row '| \(Self.methodDoc(m)) ... | \(m.since) |' in docs/dbus.md")
            for e in m.errors {
                let short = e.split(separator: ".").last.map(String.init) ?? e
                #expect(r?.contains(short) == true, "row of \(m.name) does not name \(short)")
            }
        }
        for p in table.properties {
            let head = "`\(p.name)` | `\(p.signature)` | \(p.access.rawValue) |"
            #expect(row(head, since: p.since) != nil, "no row '| \(head) ... | \(p.since) |' in docs/dbus.md")
        }
        for s in table.signals {
            #expect(row(Self.signalDoc(s), since: s.since) != nil, "no row for signal \(Self.signalDoc(s))")
        }
        for e in table.errors {
            #expect(lines.contains { $0.hasPrefix("| `\(e.name)` |") }, "error \(e.name) not documented")
        }
    }
}

/// Stub handlers for a table, so the policy test can export the real interfaces before the
/// node implements them: every method fails with org.gaend.Error.Failed, properties read as
/// zero values.
func stubImplementation(_ table: DBusInterfaceDecl) throws -> DBusInterfaceImplementation {
    func zero(_ t: DBusType) -> DBusValue {
        switch t {
        case .byte: .byte(0)
        case .boolean: .boolean(false)
        case .int16: .int16(0)
        case .uint16: .uint16(0)
        case .int32: .int32(0)
        case .uint32: .uint32(0)
        case .int64: .int64(0)
        case .uint64: .uint64(0)
        case .double: .double(0)
        case .string: .string("")
        case .objectPath: .objectPath("/")
        case .signature: .signature("")
        case .unixFD: .int32(-1)
        case .array(let e): e == .byte ? .bytes(Data()) : .array(e, [])
        case .dict(let k, let v): .dict(key: k, value: v, [])
        case .structure(let f): .structure(f.map(zero))
        case .variant: .variant(.string(""))
        }
    }
    var methods: [String: DBusMethodHandler] = [:]
    for m in table.methods {
        methods[m.name] = { _ in throw DBusNamedError(name: GaendInterfaces.ErrorName.failed, message: "stub") }
    }
    var getters: [String: DBusPropertyGetter] = [:]
    for p in table.properties {
        let v = zero(try DBusType.parseSingle(p.signature))
        getters[p.name] = { v }
    }
    return try DBusInterfaceImplementation(table, methods: methods, getters: getters)
}

@Suite("D-Bus policy file dbus/org.gaend.conf on a system-like bus", .serialized)
struct PolicyTests {
    func policyBus() throws -> PrivateBus {
        let conf = repoRoot.appendingPathComponent("dbus/org.gaend.conf").path
        // The test's service runs as root, so root is allowed to own the name here as well.
        return try PrivateBus(policy: PrivateBus.systemLikePolicy(extra: """
              <include>\(conf)</include>
              <policy user="root"><allow own="org.gaend"/></policy>
            """))
    }

    func dbusSend(_ bus: PrivateBus, _ args: [String], asNobody: Bool) async throws -> ToolResult {
        try await runTool(["/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--reply-timeout=5000",
                           "--dest=\(GaendBus.busName)", GaendBus.objectPath] + args, asNobody: asNobody)
    }

    @Test("root may call both interfaces; another uid is denied by the policy",
          .enabled(if: getuid() == 0, "needs root to run a client as nobody"))
    func rootAllowedNobodyDenied() async throws {
        let bus = try policyBus()
        defer { bus.stop() }
        let connection = try BusConnection.connect(.address(bus.address))
        defer { connection.close() }
        let service = BusService(connection: connection)
        try service.export(path: GaendBus.objectPath, GaendInterfaces.all.map(stubImplementation))
        let task = Task { await service.run() }
        defer { task.cancel() }
        try await connection.requestName(GaendBus.busName)

        let getEnabled = ["org.freedesktop.DBus.Properties.Get",
                          "string:\(GaendBus.exposureNotificationInterface)", "string:Enabled"]
        let root = try await dbusSend(bus, getEnabled, asNobody: false)
        #expect(root.status == 0, "\(root.stderr)")
        #expect(root.stdout.contains("boolean false"))
        // Allowed through the policy, answered by the daemon (the stub's named error).
        let rootStart = try await dbusSend(bus, ["\(GaendBus.exposureNotificationInterface).Start"], asNobody: false)
        #expect(rootStart.stderr.contains("org.gaend.Error.Failed"), "\(rootStart.stderr)")

        for call in [getEnabled, ["\(GaendBus.exposureNotificationInterface).Start"],
                     ["\(GaendBus.researchInterface).GetMarkers", "int64:0", "int64:1"]] {
            let nobody = try await dbusSend(bus, call, asNobody: true)
            #expect(nobody.status != 0)
            #expect(nobody.stderr.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(call[0]): \(nobody.stderr)")
        }
    }

    @Test("a connection the policy does not allow to own a name gets nameNotPermitted")
    func ownershipDenied() async throws {
        let bus = try policyBus()
        defer { bus.stop() }
        let connection = try BusConnection.connect(.address(bus.address))
        defer { connection.close() }
        await #expect(throws: DBusBindingError.self) { try await connection.requestName("org.gaend.Other") }
        do {
            try await connection.requestName("org.gaend.Other")
        } catch let e as DBusBindingError {
            guard case .nameNotPermitted(let name, _) = e else {
                Issue.record("expected nameNotPermitted, got \(e)")
                return
            }
            #expect(name == "org.gaend.Other")
        }
    }
}
