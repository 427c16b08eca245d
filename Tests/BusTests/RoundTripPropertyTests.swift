import DBusCore
import Foundation
import GaendClient
import Testing

/// SplitMix64: a seeded generator so a failing case can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum RandomValues {
    static let basics: [DBusType] = [.byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double,
                                     .string, .objectPath, .signature]

    static func type(depth: Int, _ rng: inout SplitMix64) -> DBusType {
        let pick = Int.random(in: 0..<(depth > 3 ? 1 : 6), using: &rng)
        switch pick {
        case 1: return .array(type(depth: depth + 1, &rng))
        case 2: return .dict(key: basics.randomElement(using: &rng)!, value: type(depth: depth + 1, &rng))
        case 3: return .structure((0..<Int.random(in: 1...3, using: &rng)).map { _ in type(depth: depth + 1, &rng) })
        case 4: return .variant
        default: return basics.randomElement(using: &rng)!
        }
    }

    static func string(_ rng: inout SplitMix64) -> String {
        let scalars = (0..<Int.random(in: 0...12, using: &rng)).compactMap { _ -> Unicode.Scalar? in
            Unicode.Scalar(UInt32.random(in: 1...0x1_0FFF, using: &rng))  // nil for surrogates
        }
        return String(String.UnicodeScalarView(scalars))
    }

    static func value(_ t: DBusType, depth: Int, _ rng: inout SplitMix64) -> DBusValue {
        switch t {
        case .byte: return .byte(.random(in: .min ... .max, using: &rng))
        case .boolean: return .boolean(.random(using: &rng))
        case .int16: return .int16(.random(in: .min ... .max, using: &rng))
        case .uint16: return .uint16(.random(in: .min ... .max, using: &rng))
        case .int32: return .int32(.random(in: .min ... .max, using: &rng))
        case .uint32: return .uint32(.random(in: .min ... .max, using: &rng))
        case .int64: return .int64(.random(in: .min ... .max, using: &rng))
        case .uint64: return .uint64(.random(in: .min ... .max, using: &rng))
        case .double: return .double(Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF))  // finite, not NaN
        case .string: return .string(string(&rng))
        case .objectPath:
            return .objectPath(["/", "/org", "/org/gaend", "/a_1/b2/C"].randomElement(using: &rng)!)
        case .signature: return .signature(["", "s", "a{sv}", "(ii)ay"].randomElement(using: &rng)!)
        case .unixFD: return .int32(0)  // not generated
        case .array(.byte):
            return .bytes(Data((0..<Int.random(in: 0...20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case .array(let e):
            return .array(e, (0..<Int.random(in: 0...3, using: &rng)).map { _ in value(e, depth: depth + 1, &rng) })
        case .dict(let k, let v):
            var seen = Set<DBusValue>()
            var entries: [DBusDictEntry] = []
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                let key = value(k, depth: depth + 1, &rng)
                if seen.insert(key).inserted { entries.append(DBusDictEntry(key: key, value: value(v, depth: depth + 1, &rng))) }
            }
            return .dict(key: k, value: v, entries)
        case .structure(let fields): return .structure(fields.map { value($0, depth: depth + 1, &rng) })
        case .variant:
            let inner = type(depth: depth + 1, &rng)
            return .variant(value(inner, depth: depth + 1, &rng))
        }
    }
}

@Suite("Marshalling round trips of random values")
struct RoundTripPropertyTests {
    @Test("300 random values of random types come back equal through a real bus")
    func randomEcho() async throws {
        var rng = SplitMix64(state: 0x6A65_6E64)
        try await withTestService { _, _, client in
            for i in 0..<300 {
                let t = RandomValues.type(depth: 0, &rng)
                let v = RandomValues.value(t, depth: 0, &rng)
                let out = try await client.test("Echo", [.variant(v)])
                #expect(out == [.variant(v)], "case \(i): \(t.signature)")
            }
        }
    }

    @Test("a byte array over the limit is rejected; one under it passes")
    func bigByteArray() async throws {
        try await withTestService(limits: DBusLimits(maxByteArrayBytes: 1 << 20)) { _, _, client in
            let under = DBusValue.bytes(Data(repeating: 7, count: 1 << 20))
            let echoed = try await client.test("Echo", [.variant(under)])
            #expect(echoed == [.variant(under)])
            let e = await namedError { _ = try await client.test("Echo", [.variant(.bytes(Data(count: (1 << 20) + 1)))]) }
            #expect(e?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(e?.message.contains("length of a byte array") == true)
        }
    }
}

@Suite("Messages to and from wire bytes")
struct WireBytesTests {
    @Test("500 random bodies survive marshal and demarshal, headers included")
    func randomMarshal() throws {
        var rng = SplitMix64(state: 0x4741_454E)
        for i in 0..<500 {
            let body = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                RandomValues.value(RandomValues.type(depth: 0, &rng), depth: 0, &rng)
            }
            var m = BusMessage.signal(path: "/org/gaend", interface: "org.gaend.Test1", member: "Ping", body: body)
            m.serial = UInt32(i + 1)
            let back = try BusMessage(marshalled: try m.marshalled())
            #expect(back.body == body, "case \(i): \(m.signature)")
            #expect(back.path == "/org/gaend" && back.interface == "org.gaend.Test1" && back.member == "Ping")
            #expect(back.kind == .signal && back.serial == UInt32(i + 1))
        }
    }

    @Test("bytes that are no message, and limits, give specific errors")
    func badBytes() throws {
        #expect(throws: DBusBindingError.self) { try BusMessage(marshalled: Data("not a message".utf8)) }
        #expect(throws: DBusBindingError.self) { try BusMessage(marshalled: Data()) }
        var m = BusMessage.signal(path: "/a", interface: "a.b", member: "C",
                                  body: [.array(.int32, (0..<100).map { .int32($0) })])
        m.serial = 1
        #expect(throws: DBusDecodeError.limitExceeded(what: "number of array elements", limit: 10, actual: 100)) {
            try BusMessage(marshalled: try m.marshalled(), limits: DBusLimits(maxArrayElements: 10))
        }
    }
}

extension WireBytesTests {
    @Test("a descriptor the message does not carry is an error, not a dead value (fuzzer finding)")
    func missingFD() throws {
        let crash = repoRoot.appendingPathComponent("tools/fuzz/corpus/FuzzDBusMessage/variant-with-fd")
        #expect(throws: DBusDecodeError.missingUnixFD) { try BusMessage(marshalled: try Data(contentsOf: crash)) }
    }
}
