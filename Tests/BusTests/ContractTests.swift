import BLEDaemon
import DBusCore
import GaendAPI
import Foundation
import GaendClient
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
        // The test's service runs as root, so root is allowed to own the names here as well.
        return try PrivateBus(policy: PrivateBus.systemLikePolicy(extra: """
              <include>\(conf)</include>
              <policy user="root"><allow own="org.gaend"/><allow own="org.gaend.hci1"/></policy>
            """))
    }

    /// The repository's policy with gaend's accounts mapped onto accounts every Debian system
    /// has (user gaend -> daemon (uid 1), group gaend -> users (100), gaend-research -> staff
    /// (50)): gaend's own accounts exist only where it is installed.
    static let daemonUID = 1, enGroup = 100, researchGroup = 50

    func mappedPolicyBus() throws -> PrivateBus {
        let file = try String(contentsOf: repoRoot.appendingPathComponent("dbus/org.gaend.conf"), encoding: .utf8)
        guard let open = file.range(of: "<busconfig>"), let close = file.range(of: "</busconfig>") else {
            throw TestFailure("dbus/org.gaend.conf has no <busconfig> element")
        }
        var rules = String(file[open.upperBound..<close.lowerBound])
        for (from, to) in [(#"user="gaend""#, #"user="daemon""#), (#"group="gaend-research""#, #"group="staff""#),
                           (#"group="gaend""#, #"group="users""#)] {
            guard rules.contains(from) else { throw TestFailure("dbus/org.gaend.conf has no \(from)") }
            rules = rules.replacingOccurrences(of: from, with: to)
        }
        return try PrivateBus(policy: PrivateBus.systemLikePolicy(extra: rules + """
              <policy user="root"><allow own="org.gaend"/><allow own="org.gaend.hci1"/></policy>
            """))
    }

    /// Runs `command` as `uid` with exactly `groups` (primary group nogroup).
    func runAs(_ uid: Int, groups: [Int], _ command: [String]) async throws -> ToolResult {
        let g = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return try await runTool(["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=65534", g, "--"] + command)
    }

    @Test("org.gaend and every org.gaend.* name: owned only by the daemon's user, called by the groups per interface, denied to others; signals likewise",
          .enabled(if: getuid() == 0 && haveTool("gdbus") && haveTool("timeout"), "needs root (clients run as other uids) and gdbus"))
    func instanceNamesFollowTheSameRules() async throws {
        let bus = try mappedPolicyBus()
        defer { bus.stop() }
        let send = ["/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--reply-timeout=5000"]

        // Ownership: the daemon's user owns any name below org.gaend, not a look-alike; others none.
        func requestName(_ uid: Int, _ name: String) async throws -> ToolResult {
            try await runAs(uid, groups: [], send + ["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                     "org.freedesktop.DBus.RequestName", "string:\(name)", "uint32:4"])
        }
        for name in ["org.gaend.hci7", "org.gaend.a.b"] {
            let owner = try await requestName(Self.daemonUID, name)
            #expect(owner.status == 0 && owner.stdout.contains("uint32 1"), "\(name): \(owner.stderr)")
            let other = try await requestName(65534, name)
            #expect(other.status != 0 && other.stderr.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(name): \(other.stderr)")
        }
        let lookalike = try await requestName(Self.daemonUID, "org.gaendx")
        #expect(lookalike.status != 0 && lookalike.stderr.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(lookalike.stderr)")

        // Two services, one per name, as two gaend instances.
        var services: [(BusConnection, BusService, Task<Void, Never>)] = []
        defer { for (c, _, t) in services { c.close(); t.cancel() } }
        for name in [GaendBus.busName, "org.gaend.hci1"] {
            let connection = try BusConnection.connect(.address(bus.address))
            let service = BusService(connection: connection)
            try service.export(path: GaendBus.objectPath, GaendInterfaces.all.map(stubImplementation))
            services.append((connection, service, Task { await service.run() }))
            try await connection.requestName(name)
        }

        let en = GaendBus.exposureNotificationInterface, research = GaendBus.researchInterface
        let getEnabled = ["org.freedesktop.DBus.Properties.Get", "string:\(en)", "string:Enabled"]
        let start = ["\(en).Start"], markers = ["\(research).GetMarkers", "int64:0", "int64:1"]
        let reached = "org.gaend.Error.Failed", denied = "org.freedesktop.DBus.Error.AccessDenied"
        // (uid, groups, call, expected: nil = a normal reply, else the error name in stderr)
        let cases: [(Int, [Int], [String], String?)] = [
            (0, [], getEnabled, nil), (0, [], start, reached), (0, [], markers, reached),
            (65534, [Self.enGroup], getEnabled, nil), (65534, [Self.enGroup], start, reached), (65534, [Self.enGroup], markers, denied),
            (65534, [Self.researchGroup], getEnabled, nil), (65534, [Self.researchGroup], markers, reached),
            (65534, [Self.researchGroup], start, denied),
            (65534, [], getEnabled, denied), (65534, [], start, denied), (65534, [], markers, denied),
        ]
        for dest in [GaendBus.busName, "org.gaend.hci1"] {
            for (uid, groups, call, expected) in cases {
                let r = try await runAs(uid, groups: groups, send + ["--dest=\(dest)", GaendBus.objectPath] + call)
                let what = "\(dest) \(call[0]) as uid \(uid) groups \(groups)"
                if let expected {
                    #expect(r.status != 0 && r.stderr.contains(expected), "\(what): \(r.stderr)")
                } else {
                    #expect(r.status == 0 && r.stdout.contains("boolean false"), "\(what): \(r.stderr)")
                }
            }
        }

        // Signals of the second instance: each group gets its interface's, others none.
        let emitter = services[1].1
        try await signalsReachTheGroups(bus: bus, emitter: emitter)
    }

    func signalsReachTheGroups(bus: PrivateBus, emitter: BusService) async throws {
        let en = GaendBus.exposureNotificationInterface, research = GaendBus.researchInterface
        let emitting = Task {
            while !Task.isCancelled {
                try? await emitter.emit(path: GaendBus.objectPath, interface: en, signal: "ExposureStateUpdated",
                                        GaendExposureStateUpdate(token: "t", matchedKeys: 0, windows: 0, error: "").args)
                try? await emitter.emit(path: GaendBus.objectPath, interface: research, signal: "ScanFinished",
                                        GaendScanFinished(start: 1, end: 2, sightings: []).args)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { emitting.cancel() }
        func monitor(_ uid: Int, _ groups: [Int]) async throws -> String {
            // SIGKILL: a child of the test runner may inherit a mask that keeps SIGTERM pending.
            let r = try await runAs(uid, groups: groups, ["/usr/bin/timeout", "--signal=KILL", "3", "/usr/bin/gdbus", "monitor",
                                                          "--address", bus.address, "--dest", "org.gaend.hci1"])
            #expect(r.stdout.contains("org.gaend.hci1"), "gdbus monitor as \(uid) \(groups) did not start: \(r.stderr)")
            return r.stdout
        }
        async let rootSaw = monitor(0, [])
        async let enSaw = monitor(65534, [Self.enGroup])
        async let researchSaw = monitor(65534, [Self.researchGroup])
        async let otherSaw = monitor(65534, [])
        let (r, e, s, o) = try await (rootSaw, enSaw, researchSaw, otherSaw)
        #expect(r.contains("ExposureStateUpdated") && r.contains("ScanFinished"), "\(r)")
        #expect(e.contains("ExposureStateUpdated") && !e.contains("ScanFinished"), "\(e)")
        #expect(s.contains("ScanFinished") && !s.contains("ExposureStateUpdated"), "\(s)")
        #expect(!o.contains("ExposureStateUpdated") && !o.contains("ScanFinished"), "\(o)")
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
