import Testing
import HCITestSupport
@testable import HCIProtocol

@Suite("H4 framer")
struct FramerTests {
    // A command, an event, an ACL packet, an ISO packet and a SCO packet back to back.
    let stream = h("""
        01 03 0c 00
        04 0e 04 01 03 0c 00
        02 40 20 05 00 01 02 03 04 05
        05 01 40 03 00 aa bb cc
        03 01 00 02 11 22
        """)

    func drain(_ framer: inout H4Framer) throws -> [H4Packet] {
        var out: [H4Packet] = []
        while case let .packet(p) = try framer.next() { out.append(p) }
        return out
    }

    @Test func wholeStreamAtOnce() throws {
        var framer = H4Framer()
        framer.append(stream)
        let packets = try drain(&framer)
        #expect(packets.map(\.type) == [.command, .event, .acl, .iso, .sco])
        #expect(packets.flatMap(\.bytes) == stream)
        #expect(framer.bufferedByteCount == 0)
    }

    @Test func oneByteAtATime() throws {
        var framer = H4Framer()
        var packets: [H4Packet] = []
        for byte in stream {
            framer.append([byte])
            packets += try drain(&framer)
        }
        #expect(packets.flatMap(\.bytes) == stream)
        #expect(packets.count == 5)
    }

    @Test func needMoreDataSaysHowMuch() throws {
        var framer = H4Framer()
        #expect(try framer.next() == .needMoreData(missing: 1))
        framer.append([0x04])
        #expect(try framer.next() == .needMoreData(missing: 2))
        framer.append([0x0e, 0x04])
        #expect(try framer.next() == .needMoreData(missing: 4))
        framer.append([0x01, 0x03, 0x0c])
        #expect(try framer.next() == .needMoreData(missing: 1))
        framer.append([0x00])
        #expect(try framer.next() == .packet(packet("04 0e 04 01 03 0c 00")))
    }

    @Test func isoLengthIgnoresReservedBits() throws {
        var framer = H4Framer()
        // Length field 0xC002: top two bits reserved, so the length is 2.
        framer.append(h("05 01 00 02 c0 aa bb"))
        #expect(try framer.next() == .packet(H4Packet(type: .iso, payload: h("01 00 02 c0 aa bb"))))
    }

    @Test func badPacketTypeIsSpecificError() throws {
        var framer = H4Framer()
        framer.append(h("04 0e 04 01 03 0c 00 07 00"))
        _ = try framer.next()
        #expect(throws: HCIDecodingError.unknownPacketType(0x07)) { try framer.next() }
        framer.reset()
        #expect(try framer.next() == .needMoreData(missing: 1))
    }

    @Test func maximumEventLength() throws {
        var framer = H4Framer()
        let big = [0x04, 0xff, 0xff] + [UInt8](repeating: 0x55, count: 255)
        framer.append(big.dropLast())
        #expect(try framer.next() == .needMoreData(missing: 1))
        framer.append([0x55])
        guard case let .packet(p) = try framer.next() else { Issue.record("no packet"); return }
        #expect(p.payload.count == 257)
    }
}
