import DBusCore
import Foundation
import Testing

@Suite("D-Bus types and addresses")
struct ValueTests {
    @Test("signatures parse into types and print back", arguments: [
        "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "h", "v",
        "ay", "as", "a{sv}", "a{ia{sv}}", "(ii)", "a(xiiia(iii))", "a(u(ddd)a{i(ddd)})", "aah", "((((y))))",
    ])
    func roundTrip(signature: String) throws {
        let t = try DBusType.parseSingle(signature)
        #expect(t.signature == signature)
    }

    @Test("a multi-type signature parses into its types")
    func sequence() throws {
        let types = try DBusType.parse("ssa{sv}h")
        #expect(types == [.string, .string, .dict(key: .string, value: .variant), .unixFD])
        #expect(try DBusType.parse("") == [])
    }

    @Test("invalid signatures are rejected with the reason")
    func invalid() {
        #expect(throws: DBusSignatureError.dictKeyNotBasic(signature: "a{vs}", key: "v")) { try DBusType.parse("a{vs}") }
        #expect(throws: DBusSignatureError.emptyStruct(signature: "()")) { try DBusType.parse("()") }
        #expect(throws: DBusSignatureError.truncated(signature: "(ii")) { try DBusType.parse("(ii") }
        #expect(throws: DBusSignatureError.truncated(signature: "a")) { try DBusType.parse("a") }
        #expect(throws: DBusSignatureError.unexpectedCharacter(signature: "z", offset: 0, expected: "a type code")) {
            try DBusType.parse("z")
        }
        #expect(throws: DBusSignatureError.nestedTooDeeply(signature: String(repeating: "a", count: 33) + "y")) {
            try DBusType.parse(String(repeating: "a", count: 33) + "y")
        }
        #expect(throws: DBusSignatureError.notSingleType(signature: "ii", count: 2)) { try DBusType.parseSingle("ii") }
        #expect(throws: DBusSignatureError.self) { try DBusType.parse(String(repeating: "i", count: 256)) }
    }

    @Test("values report their types; empty containers keep their element types")
    func valueTypes() {
        #expect(DBusValue.array(.string, []).type.signature == "as")
        #expect(DBusValue.bytes(Data([1, 2])).type.signature == "ay")
        #expect(DBusValue.vardict(["a": .int32(1)]).type.signature == "a{sv}")
        #expect(DBusValue.structure([.int64(1), .array(.structure([.int32, .int32]), [])]).type.signature == "(xa(ii))")
        #expect(DBusValue.signature(of: [.string("x"), .unixFD(DBusUnixFD(owning: -1))]) == "sh")
        #expect(DBusValue.vardict(["k": .boolean(true)]).vardictValue == ["k": .boolean(true)])
    }

    @Test("bus arguments: system, session, or a D-Bus address")
    func busAddress() throws {
        #expect(try BusAddress(parsing: "system") == .system)
        #expect(try BusAddress(parsing: "session") == .session)
        #expect(try BusAddress(parsing: "unix:path=/run/dbus/system_bus_socket") == .address("unix:path=/run/dbus/system_bus_socket"))
        #expect(try BusAddress(parsing: "tcp:host=localhost,port=1234") == .address("tcp:host=localhost,port=1234"))
        #expect(throws: DBusBindingError.invalidBusAddress("nonsense")) { try BusAddress(parsing: "nonsense") }
        #expect(throws: DBusBindingError.invalidBusAddress("")) { try BusAddress(parsing: "") }
    }

    @Test("a file descriptor is owned once: take hands it over, close releases it")
    func unixFDOwnership() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[1]) }
        let fd = try DBusUnixFD(duplicating: fds[0])
        close(fds[0])
        let raw = try #require(fd.descriptor)
        #expect(fcntl(raw, F_GETFD) >= 0)
        #expect(fd.take() == raw)
        #expect(fd.take() == nil)
        #expect(fd.descriptor == nil)
        close(raw)
        #expect(throws: DBusUnixFDError.self) { try DBusUnixFD(duplicating: -1) }
    }
}
