import Foundation
@testable import HCIHost
import NodeTestSupport
import PlatformSupport
import HCIProtocol
import Testing

@Suite("HCI captures (btsnoop) and transport error hints")
struct CaptureTests {
    func temporaryPath(_ name: String) -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent(name).path
    }

    func be32(_ b: [UInt8], _ at: Int) -> UInt32 { b[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    func be64(_ b: [UInt8], _ at: Int) -> UInt64 { b[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }

    /// Parses a btsnoop file into (flags, packet bytes, unix microseconds) records.
    func records(_ path: String) throws -> [(flags: UInt32, bytes: [UInt8], drops: UInt32, micros: Int64)] {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(b.prefix(8)) == Array("btsnoop\0".utf8))
        #expect(be32(b, 8) == 1, "version 1")
        #expect(be32(b, 12) == 1002, "datalink H4")
        var out: [(UInt32, [UInt8], UInt32, Int64)] = []
        var i = 16
        while i < b.count {
            let orig = Int(be32(b, i)), incl = Int(be32(b, i + 4))
            #expect(orig == incl)
            let micros = Int64(bitPattern: be64(b, i + 16)) - 0x00DC_DDB3_0F2F_8000
            out.append((be32(b, i + 8), Array(b[(i + 24)..<(i + 24 + incl)]), be32(b, i + 12), micros))
            i += 24 + incl
        }
        #expect(i == b.count, "no trailing bytes")
        return out
    }

    @Test func writesBothDirectionsAsBTSnoopH4() throws {
        let path = temporaryPath("c.btsnoop")
        let w = try BTSnoopWriter(settings: CaptureSettings(path: path))
        let when = Date(timeIntervalSince1970: 1_700_000_000.25)
        w.record(HCIReset().packet, .sent, at: when)
        w.record(H4Packet(type: .event, payload: [0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00]), .received, at: when)
        w.record(H4Packet(type: .acl, payload: [0x01, 0x00, 0x01, 0x00, 0xAA]), .received, at: when)
        w.close()
        let r = try records(path)
        #expect(r.count == 3)
        #expect(r[0].flags == 2 && r[0].bytes == [0x01, 0x03, 0x0c, 0x00], "command: sent, command/event bit")
        #expect(r[1].flags == 3 && r[1].bytes.first == 0x04, "event: received, command/event bit")
        #expect(r[2].flags == 1 && r[2].bytes.first == 0x02, "ACL: received, data")
        #expect(r.allSatisfy { $0.micros == 1_700_000_000_250_000 })
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "captures hold addresses: private to the writer")
    }

    @Test func rotatesAtTheSizeLimitKeepingWholeFiles() throws {
        let path = temporaryPath("r.btsnoop")
        let w = try BTSnoopWriter(settings: CaptureSettings(path: path, maxBytes: 1000, keep: 2))
        let packet = H4Packet(type: .event, payload: [0x3e, 0x40] + [UInt8](repeating: 7, count: 64))
        for _ in 0..<100 { w.record(packet, .received) }
        w.close()
        let parts = [path, path + ".1", path + ".2"]
        var total = 0
        for p in parts {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: p)[.size] as? Int)
            #expect(size <= 1000, "\(p) is \(size) bytes")
            total += try records(p).count
        }
        #expect(!FileManager.default.fileExists(atPath: path + ".3"), "only `keep` old parts")
        #expect(total > 20 && total < 100, "older parts beyond keep were dropped")
        #expect(w.error == nil)
    }

    @Test func badCapturePathFailsAtStart() {
        #expect(throws: SystemCallError.self) { try BTSnoopWriter(settings: CaptureSettings(path: "/nonexistent/dir/c.btsnoop")) }
    }

    @Test func rfkillAndCapabilityErrorsCarryTheirHint() {
        let rf = HCITransportError.classify(SystemCallError(function: "bind(hci0, HCI_CHANNEL_USER)", errno: 132), address: "hci0")
        #expect(rf == .rfkillBlocked(address: "hci0", call: "bind(hci0, HCI_CHANNEL_USER)"))
        #expect(rf.description.contains("rfkill unblock bluetooth"))
        let perm = HCITransportError.classify(SystemCallError(function: "ioctl(HCIDEVDOWN hci0)", errno: EPERM), address: "hci0")
        #expect(perm.description.contains("CAP_NET_ADMIN"))
        let tty = HCITransportError.classify(SystemCallError(function: "open(/dev/ttyAMA0)", errno: EACCES), address: "serial:/dev/ttyAMA0")
        #expect(!tty.description.contains("CAP_NET_ADMIN") && tty.description.contains("dialout"))
    }
}
