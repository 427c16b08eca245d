import BLEDaemon
import DBusCore
import Foundation
import GaendClient

/// A test interface exercising every feature of the binding, declared as one table.
enum TestAPI {
    static let busName = "org.gaend.Test"
    static let path = "/org/gaend/Test"
    static let interface = "org.gaend.Test1"

    static let table = DBusInterfaceDecl(
        name: interface,
        revision: 2,
        methods: [
            DBusMethodDecl("Echo", in: [DBusArgument("value", "v")], out: [DBusArgument("value", "v")]),
            DBusMethodDecl("Add", in: [DBusArgument("a", "i"), DBusArgument("b", "i")], out: [DBusArgument("sum", "i")]),
            DBusMethodDecl("Fail", in: [DBusArgument("name", "s"), DBusArgument("message", "s")],
                           errors: ["org.gaend.Error.Test"]),
            DBusMethodDecl("FailPlain"),
            DBusMethodDecl("WhoAmI", out: [DBusArgument("uid", "u")]),
            DBusMethodDecl("ReadFD", in: [DBusArgument("fd", "h")], out: [DBusArgument("contents", "s")]),
            DBusMethodDecl("ReadFDs", in: [DBusArgument("fds", "ah")], out: [DBusArgument("contents", "as")]),
            DBusMethodDecl("MakePipe", in: [DBusArgument("text", "s")], out: [DBusArgument("fd", "h")], since: 2),
            DBusMethodDecl("EmitPing", in: [DBusArgument("text", "s")], since: 2),
            DBusMethodDecl("Sleep", in: [DBusArgument("ms", "u")], since: 2),
            DBusMethodDecl("Count", in: [DBusArgument("items", "as")], out: [DBusArgument("n", "u")], since: 2),
            DBusMethodDecl("BadReply", out: [DBusArgument("n", "u")], since: 2),
            DBusMethodDecl("Ignore", in: [DBusArgument("fds", "ah")], since: 2),
        ],
        properties: [
            DBusPropertyDecl("Name", "s", .readwrite),
            DBusPropertyDecl("Counter", "u", .read, emitsChanged: .invalidates),
            DBusPropertyDecl("Version", "u", .read, emitsChanged: .const),
        ],
        signals: [
            DBusSignalDecl("Ping", [DBusArgument("text", "s"), DBusArgument("count", "u")], since: 2),
        ],
        errors: [DBusErrorDecl("org.gaend.Error.Test", "A test error.")])
}

struct PlainError: Error {}

/// Mutable state of the test object, owned by an actor.
actor TestState {
    var name = "initial"
    var pings: UInt32 = 0
    func setName(_ n: String) { name = n }
    func nextPing() -> UInt32 {
        pings += 1
        return pings
    }
}

/// Reads a descriptor to its end (at most 1 MiB), taking ownership and closing it.
func readAll(_ fd: DBusUnixFD) throws -> String {
    guard let raw = fd.take() else { throw DBusNamedError.invalidArgs("descriptor already taken") }
    let handle = FileHandle(fileDescriptor: raw, closeOnDealloc: true)
    let data = try handle.read(upToCount: 1 << 20) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// A service connection exporting the test object; `close()` ends it.
final class TestService: Sendable {
    let connection: BusConnection
    let service: BusService
    let state = TestState()
    private let task: Task<Void, Never>

    init(address: String, limits: DBusLimits = .default) async throws {
        connection = try BusConnection.connect(.address(address), limits: limits)
        let service = BusService(connection: connection, fallbackErrorName: "org.gaend.Error.Failed")
        self.service = service
        let state = self.state
        let impl = try DBusInterfaceImplementation(
            TestAPI.table,
            methods: [
                "Echo": { call in [call.args[0]] },
                "Add": { call in
                    guard case .int32(let a) = call.args[0], case .int32(let b) = call.args[1] else { return [] }
                    return [.int32(a &+ b)]
                },
                "Fail": { call in
                    throw DBusNamedError(name: call.args[0].stringValue!, message: call.args[1].stringValue!)
                },
                "FailPlain": { _ in throw PlainError() },
                "WhoAmI": { call in [.uint32(try await call.callerUID())] },
                "ReadFD": { call in [.string(try readAll(call.args[0].unixFDValue!))] },
                "ReadFDs": { call in
                    [.array(.string, try call.args[0].arrayValue!.map { .string(try readAll($0.unixFDValue!)) })]
                },
                "MakePipe": { call in
                    var fds: [Int32] = [-1, -1]
                    guard pipe(&fds) == 0 else { throw DBusNamedError.failed("pipe") }
                    let w = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
                    try w.write(contentsOf: Data(call.args[0].stringValue!.utf8))
                    try w.close()
                    return [.unixFD(DBusUnixFD(owning: fds[0]))]
                },
                "EmitPing": { call in
                    let n = await state.nextPing()
                    try await service.emit(path: TestAPI.path, interface: TestAPI.interface, signal: "Ping",
                                           [call.args[0], .uint32(n)])
                    return []
                },
                "Sleep": { call in
                    guard case .uint32(let ms) = call.args[0] else { return [] }
                    try await Task.sleep(for: .milliseconds(Int(ms)))
                    return []
                },
                "Count": { call in [.uint32(UInt32(call.args[0].arrayValue!.count))] },
                "BadReply": { _ in [.string("not a u")] },
                "Ignore": { _ in [] },
            ],
            getters: [
                "Name": { .string(await state.name) },
                "Counter": { .uint32(await state.pings) },
                "Version": { .uint32(2) },
            ],
            setters: [
                "Name": { value, _ in await state.setName(value.stringValue!) },
            ])
        try service.export(path: TestAPI.path, [impl])
        task = Task { await service.run() }
        try await connection.requestName(TestAPI.busName)
    }

    func close() {
        connection.close()
        task.cancel()
    }
}
