import BLEDaemon
import DBusCore
import Foundation
import Synchronization
import GaendClient
import Testing

/// A private bus with the test object exported, and a client connected to it.
func withTestService(limits: DBusLimits = .default,
                     _ body: (PrivateBus, TestService, BusClient) async throws -> Void) async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let service = try await TestService(address: bus.address, limits: limits)
    defer { service.close() }
    let client = try BusClient(bus: .address(bus.address), timeout: .seconds(10))
    defer { client.close() }
    try await body(bus, service, client)
}

extension BusClient {
    func test(_ method: String, _ args: [DBusValue] = [], timeout: Duration? = nil) async throws -> [DBusValue] {
        try await call(TestAPI.busName, TestAPI.path, TestAPI.interface, method, args, timeout: timeout)
    }
}

/// Runs `body` and returns the named D-Bus error it threw.
func namedError(_ body: () async throws -> Void) async -> DBusNamedError? {
    do {
        try await body()
        return nil
    } catch let e as DBusNamedError {
        return e
    } catch {
        return DBusNamedError(name: "not a named error", message: "\(error)")
    }
}

@Suite("D-Bus service and client over a private dbus-daemon", .serialized)
struct ServiceTests {
    @Test("method calls carry every value type both ways")
    func echo() async throws {
        try await withTestService { _, _, client in
            let values: [DBusValue] = [
                .byte(255), .boolean(true), .int16(-32768), .uint16(65535), .int32(Int32.min),
                .uint32(UInt32.max), .int64(Int64.min), .uint64(UInt64.max), .double(-1.5e300),
                .string("grüße ✓"), .string(""), .objectPath("/org/gaend/x_1"), .signature("a{sv}(ii)"),
                .bytes(Data([0, 1, 2, 0xFF])), .bytes(Data()),
                .array(.string, [.string("a"), .string("b")]), .array(.int32, []),
                .vardict(["rssi": .int16(-70), "rpi": .bytes(Data(repeating: 7, count: 16))]),
                .dict(key: .int32, value: .structure([.double, .double, .double]),
                      [DBusDictEntry(key: .int32(1), value: .structure([.double(1), .double(2), .double(3)]))]),
                .structure([.int64(1_600_000_000_000), .int32(1), .array(.structure([.int32, .int32, .int32]),
                    [.structure([.int32(50), .int32(45), .int32(300)])])]),
                .variant(.variant(.string("nested"))),
            ]
            for v in values {
                let out = try await client.test("Echo", [.variant(v)])
                #expect(out == [.variant(v)], "echo of \(v.type.signature)")
            }
            #expect(try await client.test("Add", [.int32(2), .int32(40)]) == [.int32(42)])
        }
    }

    @Test("a wrong signature gets InvalidArgs naming both signatures")
    func wrongSignature() async throws {
        try await withTestService { _, _, client in
            let e = await namedError { _ = try await client.test("Add", [.string("2"), .string("3")]) }
            #expect(e?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(e?.message.contains("'ii'") == true && e?.message.contains("'ss'") == true)
            let e2 = await namedError { _ = try await client.test("Add", [.int32(1)]) }
            #expect(e2?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        }
    }

    @Test("handler errors become named D-Bus errors; other failures the fallback name")
    func handlerErrors() async throws {
        try await withTestService { _, _, client in
            let e = await namedError {
                _ = try await client.test("Fail", [.string("org.gaend.Error.RateLimited"), .string("6 calls a day")])
            }
            #expect(e == DBusNamedError(name: "org.gaend.Error.RateLimited", message: "6 calls a day"))
            #expect(await namedError { _ = try await client.test("FailPlain") }?.name == "org.gaend.Error.Failed")
            // A handler returning what the table does not promise is an internal error, not a bad reply.
            #expect(await namedError { _ = try await client.test("BadReply") }?.name == "org.gaend.Error.Failed")
        }
    }

    @Test("unknown objects, interfaces and methods get the standard errors")
    func unknowns() async throws {
        try await withTestService { _, _, client in
            #expect(await namedError {
                _ = try await client.call(TestAPI.busName, "/nowhere", TestAPI.interface, "Add", [.int32(1), .int32(2)])
            }?.name == "org.freedesktop.DBus.Error.UnknownObject")
            #expect(await namedError {
                _ = try await client.call(TestAPI.busName, TestAPI.path, "org.gaend.Nope1", "Add")
            }?.name == "org.freedesktop.DBus.Error.UnknownInterface")
            #expect(await namedError { _ = try await client.test("Nope") }?.name == "org.freedesktop.DBus.Error.UnknownMethod")
            // Peer is answered by libdbus itself.
            _ = try await client.call(TestAPI.busName, TestAPI.path, "org.freedesktop.DBus.Peer", "Ping")
        }
    }

    @Test("properties: Get, GetAll, Set with PropertiesChanged, read-only and type checks")
    func properties() async throws {
        try await withTestService { _, _, client in
            let c = client
            #expect(try await c.getProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Name") == .string("initial"))
            let all = try await c.getAllProperties(TestAPI.busName, TestAPI.path, TestAPI.interface)
            #expect(all == ["Name": .string("initial"), "Counter": .uint32(0), "Version": .uint32(2)])

            let changes = try await c.signals(sender: TestAPI.busName, path: TestAPI.path,
                                              interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
            try await c.setProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Name", .string("node-a"))
            #expect(try await c.getProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Name") == .string("node-a"))
            var it = changes.makeAsyncIterator()
            let signal = try #require(await it.next())
            #expect(signal.body == [.string(TestAPI.interface), .vardict(["Name": .string("node-a")]), .array(.string, [])])

            #expect(await namedError {
                try await c.setProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Counter", .uint32(9))
            }?.name == "org.freedesktop.DBus.Error.PropertyReadOnly")
            #expect(await namedError {
                try await c.setProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Name", .int32(9))
            }?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await namedError {
                _ = try await c.getProperty(TestAPI.busName, TestAPI.path, TestAPI.interface, "Nope")
            }?.name == "org.freedesktop.DBus.Error.UnknownProperty")
        }
    }

    @Test("signals reach subscribers with their arguments")
    func signals() async throws {
        try await withTestService { _, _, client in
            let pings = try await client.signals(sender: TestAPI.busName, interface: TestAPI.interface, member: "Ping")
            _ = try await client.test("EmitPing", [.string("one")])
            _ = try await client.test("EmitPing", [.string("two")])
            var it = pings.makeAsyncIterator()
            let first = try #require(await it.next())
            let second = try #require(await it.next())
            #expect(first.body == [.string("one"), .uint32(1)])
            #expect(second.body == [.string("two"), .uint32(2)])
            #expect(first.path == TestAPI.path)
        }
    }

    @Test("file descriptors pass both ways and are read through")
    func fdPassing() async throws {
        try await withTestService { _, _, client in
            #expect(client.connection.canPassUnixFDs)
            func pipeWith(_ text: String) throws -> DBusUnixFD {
                var fds: [Int32] = [-1, -1]
                #expect(pipe(&fds) == 0)
                let w = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
                try w.write(contentsOf: Data(text.utf8))
                try w.close()
                return DBusUnixFD(owning: fds[0])
            }
            let fd = try pipeWith("key file bytes\n")
            #expect(try await client.test("ReadFD", [.unixFD(fd)]) == [.string("key file bytes\n")])
            // The sender keeps its own descriptor (libdbus sent a duplicate).
            #expect(fd.descriptor != nil)
            let many = try (1...3).map { try pipeWith("file \($0)") }
            #expect(try await client.test("ReadFDs", [.array(.unixFD, many.map { .unixFD($0) })])
                    == [.array(.string, [.string("file 1"), .string("file 2"), .string("file 3")])])
            let out = try await client.test("MakePipe", [.string("from the service")])
            let received = try #require(out.first?.unixFDValue)
            #expect(try readAll(received) == "from the service")
        }
    }

    @Test("received descriptors a handler does not take are closed, also when a message is rejected")
    func fdsClosed() async throws {
        try await withTestService(limits: DBusLimits(maxUnixFDs: 4)) { _, _, client in
            /// Sends the write ends of `count` pipes, closes ours, and reports whether every read
            /// end sees EOF, i.e. no copy of a write end stayed open in the service.
            func allClosed(count: Int) async throws -> (DBusNamedError?, Bool) {
                var readEnds: [Int32] = []
                var writeEnds: [DBusValue] = []
                for _ in 0..<count {
                    var fds: [Int32] = [-1, -1]
                    #expect(pipe(&fds) == 0)
                    readEnds.append(fds[0])
                    writeEnds.append(.unixFD(DBusUnixFD(owning: fds[1])))
                }
                defer { readEnds.forEach { close($0) } }
                let error = await namedError { _ = try await client.test("Ignore", [.array(.unixFD, writeEnds)]) }
                for case .unixFD(let fd) in writeEnds { fd.close() }
                var eof = true
                for r in readEnds {
                    var p = pollfd(fd: r, events: Int16(POLLIN), revents: 0)
                    var byte: UInt8 = 0
                    eof = eof && poll(&p, 1, 2000) == 1 && read(r, &byte, 1) == 0
                }
                return (error, eof)
            }
            let (ok, closed) = try await allClosed(count: 3)
            #expect(ok == nil)
            #expect(closed)
            // Over the service's DBusLimits.maxUnixFDs (4 here): rejected whole, all closed.
            let (rejected, closedToo) = try await allClosed(count: 6)
            #expect(rejected?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(rejected?.message.contains("file descriptors") == true)
            #expect(closedToo)
            // A sender never puts more descriptors in a message than its limits allow.
            let many = try (0..<17).map { _ in DBusValue.unixFD(try DBusUnixFD(duplicating: 0)) }
            await #expect(throws: DBusBindingError.invalidValue("17 file descriptors in one message, at most 16")) {
                _ = try await client.test("Ignore", [.array(.unixFD, many)])
            }
        }
    }

    @Test("hostile messages beyond the limits are rejected and the service keeps serving")
    func hostileMessages() async throws {
        try await withTestService { _, _, client in
            var deep = DBusValue.string("core")
            for _ in 0..<24 { deep = .variant(deep) }
            let e1 = await namedError { _ = try await client.test("Echo", [deep]) }
            #expect(e1?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(e1?.message.contains("nesting depth") == true)

            let many = DBusValue.array(.string, Array(repeating: .string("x"), count: 70_000))
            let e2 = await namedError { _ = try await client.test("Count", [many]) }
            #expect(e2?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(e2?.message.contains("array elements") == true)

            let huge = DBusValue.string(String(repeating: "a", count: 2 << 20))
            let e3 = await namedError { _ = try await client.test("Echo", [.variant(huge)]) }
            #expect(e3?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(e3?.message.contains("length of a string") == true)

            // Within the limits the same shapes pass.
            let counted = try await client.test("Count", [.array(.string, Array(repeating: .string("x"), count: 1000))])
            #expect(counted == [.uint32(1000)])
            let sum = try await client.test("Add", [.int32(1), .int32(1)])
            #expect(sum == [.int32(2)])
        }
    }

    @Test("invalid values are refused locally, before libdbus sees them")
    func localValidation() async throws {
        try await withTestService { _, _, client in
            await #expect(throws: DBusBindingError.invalidName(kind: "object path", value: "not/a/path")) {
                _ = try await client.test("Echo", [.variant(.objectPath("not/a/path"))])
            }
            await #expect(throws: DBusBindingError.invalidValue("string contains a NUL character")) {
                _ = try await client.test("Echo", [.variant(.string("a\u{0}b"))])
            }
            await #expect(throws: DBusBindingError.signatureMismatch(expected: "s", actual: "i")) {
                _ = try await client.test("Echo", [.variant(.array(.string, [.int32(1)]))])
            }
            await #expect(throws: DBusBindingError.invalidName(kind: "member name", value: "no-dash")) {
                _ = try await client.test("no-dash")
            }
        }
    }

    @Test("a call without a reply in time fails with NoReply; cancelled or closed, at once")
    func timeouts() async throws {
        try await withTestService { bus, _, client in
            let start = ContinuousClock.now
            let e = await namedError { _ = try await client.test("Sleep", [.uint32(3000)], timeout: .milliseconds(300)) }
            #expect(e?.name == "org.freedesktop.DBus.Error.NoReply")
            #expect(ContinuousClock.now - start < .seconds(2))
            // Cancelling the calling task ends the call at once, long before its timeout.
            let slow = Task { try await client.test("Sleep", [.uint32(5000)], timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(100))
            let cancelledAt = ContinuousClock.now
            slow.cancel()
            await #expect(throws: CancellationError.self) { _ = try await slow.value }
            #expect(ContinuousClock.now - cancelledAt < .seconds(2))
            let other = try BusClient(bus: .address(bus.address))
            other.close()
            try await Task.sleep(for: .milliseconds(50))
            await #expect(throws: DBusBindingError.closed) { _ = try await other.test("Add", [.int32(1), .int32(1)]) }
        }
    }

    @Test("Get, GetAll and one PropertiesChanged each read one snapshot of the state, however many properties")
    func oneSnapshotPerMessage() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let connection = try BusConnection.connect(.address(bus.address))
        defer { connection.close() }
        let service = BusService(connection: connection)
        let snapshots = Counter()
        let decl = DBusInterfaceDecl(name: "org.gaend.Snap1", properties: [
            DBusPropertyDecl("A", "i", .read), DBusPropertyDecl("B", "i", .read), DBusPropertyDecl("C", "s", .read),
        ])
        let impl = try DBusInterfaceImplementation(decl, snapshot: { snapshots.next() }, properties: [
            "A": { n in .int32(Int32(n)) }, "B": { n in .int32(Int32(n * 10)) }, "C": { n in .string("\(n)") },
        ])
        try service.export(path: "/snap", [impl])
        let task = Task { await service.run() }
        defer { task.cancel() }
        let client = try BusClient(bus: .address(bus.address))
        defer { client.close() }
        let all = try await client.getAllProperties(connection.uniqueName, "/snap", "org.gaend.Snap1")
        // One snapshot (the first): every value comes from it.
        #expect(all == ["A": .int32(1), "B": .int32(10), "C": .string("1")])
        #expect(snapshots.value == 1)
        #expect(try await client.getProperty(connection.uniqueName, "/snap", "org.gaend.Snap1", "B") == .int32(20))
        #expect(snapshots.value == 2)
        try await service.emitPropertiesChanged(path: "/snap", interface: "org.gaend.Snap1", ["A", "B", "C"])
        #expect(snapshots.value == 3)
    }

    @Test("a full call queue answers LimitsExceeded instead of growing")
    func backpressure() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let connection = try BusConnection.connect(.address(bus.address))
        defer { connection.close() }
        let service = BusService(connection: connection, maxQueuedCalls: 1, maxConcurrentCalls: 1)
        let sleep = try DBusInterfaceImplementation(
            DBusInterfaceDecl(name: "org.gaend.Slow1", methods: [DBusMethodDecl("Sleep")]),
            methods: ["Sleep": { _ in
                try await Task.sleep(for: .milliseconds(400))
                return []
            }])
        try service.export(path: "/slow", [sleep])
        let task = Task { await service.run() }
        defer { task.cancel() }
        let client = try BusClient(bus: .address(bus.address))
        defer { client.close() }
        let results = await withTaskGroup(of: String.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    let e = await namedError { _ = try await client.call(connection.uniqueName, "/slow", "org.gaend.Slow1", "Sleep") }
                    return e?.name ?? "ok"
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(results.contains("ok"))
        #expect(results.contains("org.freedesktop.DBus.Error.LimitsExceeded"))
        #expect(Set(results).isSubset(of: ["ok", "org.freedesktop.DBus.Error.LimitsExceeded"]))
    }

    @Test("an idle connection's loop thread sleeps: no periodic wake-ups")
    func idleLoop() async throws {
        try await withTestService { _, service, client in
            _ = try await client.test("Add", [.int32(1), .int32(1)])
            // This test's two loop threads only: other suites' connections share the name
            // "gaend.dbus" and may be busy meanwhile.
            let threads = [await service.connection.loopThreadID(), await client.connection.loopThreadID()].compactMap { $0 }
            #expect(threads.count == 2, "both loops run")
            /// Context switches of those threads: each poll wake-up is one.
            func switches() throws -> Int {
                var total = 0
                for tid in threads {
                    let status = try String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)
                    for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                        total += Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
                    }
                }
                return total
            }
            // The quietest of up to five seconds: a loaded machine can stretch the first call's
            // last replies into the first second. A loop that polls wakes in every second, so it
            // still fails.
            var quietest = Int.max
            for _ in 0..<5 where quietest > 2 {
                let before = try switches()
                try await Task.sleep(for: .seconds(1))
                quietest = min(quietest, try switches() - before)
            }
            #expect(quietest <= 2, "loop threads woke \(quietest) times in the quietest of five idle seconds")
        }
    }

    @Test("the caller's uid is available for authorization")
    func callerUID() async throws {
        try await withTestService { _, _, client in
            let uid = try await client.test("WhoAmI")
            #expect(uid == [.uint32(getuid())])
        }
    }

    @Test("a taken name is a clear error")
    func nameTaken() async throws {
        try await withTestService { bus, _, _ in
            let second = try BusConnection.connect(.address(bus.address))
            defer { second.close() }
            await #expect(throws: DBusBindingError.nameTaken(TestAPI.busName)) {
                try await second.requestName(TestAPI.busName)
            }
        }
    }

    @Test("connecting to a bus that is not there is a clear error")
    func noBus() async throws {
        #expect(throws: DBusBindingError.self) {
            _ = try BusConnection.connect(.address("unix:path=/nonexistent/gaend-test-bus"))
        }
    }

    @Test("introspection is generated from the table, with child nodes for parents")
    func introspection() async throws {
        try await withTestService { _, _, client in
            let xml = try await client.introspect(TestAPI.busName, TestAPI.path)
            #expect(xml == DBusIntrospection.xml(interfaces: DBusIntrospection.standardInterfaces + [TestAPI.table]))
            let root = try await client.introspect(TestAPI.busName, "/")
            #expect(root.contains("<node name=\"org\"/>"))
            let parent = try await client.introspect(TestAPI.busName, "/org/gaend")
            #expect(parent.contains("<node name=\"Test\"/>"))
            #expect(!parent.contains(TestAPI.interface))
        }
    }

    @Test("an implementation must bind exactly the declared members")
    func tableBinding() throws {
        #expect(throws: DBusTableError.unboundMethod(interface: TestAPI.interface, method: "Echo")) {
            _ = try DBusInterfaceImplementation(TestAPI.table)
        }
        let decl = DBusInterfaceDecl(name: "org.gaend.T1", methods: [DBusMethodDecl("A")])
        #expect(throws: DBusTableError.unknownMember(interface: "org.gaend.T1", member: "B")) {
            _ = try DBusInterfaceImplementation(decl, methods: ["A": { _ in [] }, "B": { _ in [] }])
        }
        let bad = DBusInterfaceDecl(name: "org.gaend.T1", methods: [DBusMethodDecl("A", in: [DBusArgument("x", "a{vs}")])])
        #expect(throws: DBusTableError.self) { try bad.validate() }
        let future = DBusInterfaceDecl(name: "org.gaend.T1", revision: 1, methods: [DBusMethodDecl("A", since: 2)])
        #expect(throws: DBusTableError.self) { try future.validate() }
    }
}

/// A thread-safe counter for handlers.
final class Counter: Sendable {
    private let n = Mutex(0)
    /// Increments and returns the new value.
    func next() -> Int { n.withLock { $0 += 1; return $0 } }
    var value: Int { n.withLock { $0 } }
}
