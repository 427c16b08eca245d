import Testing
import HCITestSupport
@testable import HCIProtocol

@Suite("HCI events")
struct EventTests {
    func roundTrip(_ capture: String) throws -> HCIEvent {
        let event = try HCIEvent(packet: packet(capture))
        #expect(event.packet == packet(capture), "re-encodes to the capture")
        return event
    }

    @Test func commandComplete() throws {
        let e = try roundTrip("04 0e 04 01 03 0c 00")
        #expect(e == .commandComplete(.init(numHCICommandPackets: 1, opcode: HCIReset.opcode, returnParameters: [0])))
        guard case let .commandComplete(cc) = e else { return }
        #expect(try cc.status() == .success)
        // NOP completion: credits only, no return parameters, so no status.
        guard case let .commandComplete(nop) = try roundTrip("04 0e 03 05 00 00") else { Issue.record("not CC"); return }
        #expect(nop.opcode == .none && nop.numHCICommandPackets == 5)
        #expect(throws: HCIDecodingError.self) { try nop.status() }
    }

    @Test func commandStatus() throws {
        let e = try roundTrip("04 0f 04 0c 01 0c 20")
        #expect(e == .commandStatus(.init(status: .commandDisallowed, numHCICommandPackets: 1, opcode: HCILESetScanEnable.opcode)))
    }

    @Test func hardwareError() throws {
        #expect(try roundTrip("04 10 01 2a") == .hardwareError(.init(hardwareCode: 0x2a)))
    }

    @Test func disconnectionComplete() throws {
        #expect(try roundTrip("04 05 04 00 40 00 13") == .disconnectionComplete(.init(status: .success, connectionHandle: 0x40, reason: .remoteUserTerminatedConnection)))
        #expect(throws: HCIDecodingError.invalidValue(what: "Disconnection Complete.Connection_Handle", expected: "0x0000...0x0EFF", actual: "0x0f00")) {
            try HCIEvent(packet: packet("04 05 04 00 00 0f 13"))
        }
    }

    @Test func legacyAdvertisingReportWithTwoReports() throws {
        let e = try roundTrip("04 3e 1c 02 02  03 01 11 22 33 44 55 66 03 02 01 06 c4  00 00 aa bb cc dd ee ff 03 03 03 03 b0")
        guard case let .leMeta(.advertisingReport(r)) = e else { Issue.record("not an advertising report: \(e)"); return }
        #expect(r.reports.count == 2)
        #expect(r.reports[0] == .init(eventType: .advNonconnInd, addressType: .random, address: try BDAddress(string: "66:55:44:33:22:11"), data: h("02 01 06"), rssi: -60))
        #expect(r.reports[1].eventType == .advInd && r.reports[1].addressType == .public && r.reports[1].rssi == -80)
        let normalised = LEAdvertisingReport.reports(in: .advertisingReport(r))
        #expect(normalised.map(\.kind) == [.advNonconnInd, .advInd])
        #expect(normalised[0].rssi == -60 && normalised[0].txPower == nil)
    }

    @Test func gaenBeaconReport() throws {
        // 31-byte GAEN payload: flags, 0xFD6F UUID list, service data with RPI (00..0f) and AEM.
        let payload = "02 01 1a 03 03 6f fd 17 16 6f fd 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 01 02 03 04"
        let e = try roundTrip("04 3e 2b 02 01 03 01 16 55 44 33 22 11 1f " + payload + " 7f")
        guard case let .leMeta(meta) = e else { Issue.record("not LE meta"); return }
        let r = LEAdvertisingReport.reports(in: meta)
        #expect(r.count == 1)
        #expect(r[0].data == h(payload))
        #expect(r[0].rssi == nil, "127 means not available")
        #expect(r[0].address.isNonResolvablePrivate)
    }

    @Test func extendedAdvertisingReport() throws {
        let e = try roundTrip("04 3e 1d 0d 01  10 00 01 11 22 33 44 55 66 01 00 ff 7f c8 00 00 00 00 00 00 00 00 00 03 02 01 06")
        guard case let .leMeta(.extendedAdvertisingReport(x)) = e else { Issue.record("not extended: \(e)"); return }
        #expect(x.reports.count == 1)
        #expect(x.reports[0].eventType == [.legacy])
        #expect(x.reports[0].rssi == -56)
        let n = LEAdvertisingReport.reports(in: .extendedAdvertisingReport(x))
        #expect(n == [LEAdvertisingReport(address: try BDAddress(string: "66:55:44:33:22:11"), addressType: .random, kind: .advNonconnInd, rssi: -56, txPower: nil, data: h("02 01 06"))])
        // Bumble reports ADV_IND as 0x13; a non-legacy PDU stays extended.
        var report = x.reports[0]
        report.eventType = ExtendedReportEventType(rawValue: 0x13)
        #expect(LEAdvertisingReport(report).kind == .advInd)
        report.eventType = ExtendedReportEventType(rawValue: 0x01)
        report.txPower = -4
        #expect(LEAdvertisingReport(report).kind == .extended(.connectable))
        #expect(LEAdvertisingReport(report).txPower == -4)
    }

    @Test func unknownEventsKeepTheirBytes() throws {
        #expect(try roundTrip("04 ff 03 01 02 03") == .unknown(code: 0xff, parameters: [1, 2, 3]))
        #expect(try roundTrip("04 3e 03 14 01 02") == .leMeta(.unknown(subevent: 0x14, parameters: [1, 2])))
    }

    @Test func truncatedAndGarbledEventsThrowSpecificErrors() {
        // Header says 4 bytes, 3 present.
        #expect(throws: HCIDecodingError.lengthMismatch(what: "HCI event Command Complete (0x0e) parameters", expected: 4, actual: 3)) {
            try HCIEvent(payload: h("0e 04 01 03 0c"))
        }
        #expect(throws: HCIDecodingError.truncated(what: "HCI event header", expected: 2, actual: 1)) { try HCIEvent(payload: [0x0e]) }
        #expect(throws: HCIDecodingError.truncated(what: "Command Complete parameters", expected: 3, actual: 2)) { try HCIEvent(payload: h("0e 02 01 03")) }
        #expect(throws: HCIDecodingError.lengthMismatch(what: "Command Status parameters", expected: 4, actual: 5)) { try HCIEvent(payload: h("0f 05 00 01 03 0c 00")) }
        #expect(throws: HCIDecodingError.lengthMismatch(what: "Hardware Error parameters", expected: 1, actual: 0)) { try HCIEvent(payload: h("10 00")) }
        #expect(throws: HCIDecodingError.truncated(what: "LE Meta parameters", expected: 1, actual: 0)) { try HCIEvent(payload: h("3e 00")) }
        // Num_Reports 0 and 26 are invalid.
        #expect(throws: HCIDecodingError.invalidValue(what: "LE Advertising Report.Num_Reports", expected: "1...25", actual: "0")) { try HCIEvent(payload: h("3e 02 02 00")) }
        // Two reports announced, one present.
        #expect(throws: HCIDecodingError.truncated(what: "LE Advertising Report.report[1]", expected: 10, actual: 0)) {
            try HCIEvent(payload: h("3e 0c 02 02 03 01 11 22 33 44 55 66 00 c4"))
        }
        // Data_Length 5 but only 2 bytes of data before RSSI.
        #expect(throws: HCIDecodingError.truncated(what: "LE Advertising Report.report[0].Data", expected: 5, actual: 3)) {
            try HCIEvent(payload: h("3e 0e 02 01 03 01 11 22 33 44 55 66 05 02 01 c4"))
        }
        // Data_Length above 31.
        #expect(throws: HCIDecodingError.invalidValue(what: "LE Advertising Report.report[0].Data_Length", expected: "0...31", actual: "32")) {
            try HCIEvent(payload: h("3e 0d 02 01 03 01 11 22 33 44 55 66 20 00 00"))
        }
        // Trailing garbage after the last report.
        #expect(throws: HCIDecodingError.lengthMismatch(what: "LE Advertising Report", expected: 11, actual: 12)) {
            try HCIEvent(payload: h("3e 0d 02 01 03 01 11 22 33 44 55 66 00 c4 99"))
        }
        #expect(throws: HCIDecodingError.truncated(what: "LE Extended Advertising Report.report[0]", expected: 24, actual: 3)) {
            try HCIEvent(payload: h("3e 05 0d 01 10 00 01"))
        }
        #expect(throws: HCIDecodingError.invalidValue(what: "LE Extended Advertising Report.Num_Reports", expected: "1...10", actual: "11")) {
            try HCIEvent(payload: h("3e 02 0d 0b"))
        }
        #expect(throws: HCIDecodingError.invalidValue(what: "HCI event packet type", expected: "event (0x04)", actual: "acl")) {
            try HCIEvent(packet: H4Packet(type: .acl, payload: [0x10, 0x01, 0x00]))
        }
    }

    @Test func everyMessageHasATableEntry() {
        for code: UInt8 in [0x05, 0x0e, 0x0f, 0x10, 0x3e] { #expect(HCIMessageTable.event(code) != nil) }
        for code: UInt8 in [0x02, 0x0d] { #expect(HCIMessageTable.leSubevent(code) != nil) }
    }

    @Test func traceLinesComeFromTheTable() {
        #expect(HCITrace.describe(packet("01 03 0c 00"), outgoing: true) == "< HCI Command: Reset (0x03|0x0003) plen 0")
        #expect(HCITrace.describe(packet("04 0e 04 01 03 0c 00"), outgoing: false)
                == "> HCI Event: Command Complete (0x0e) plen 4: Reset (0x03|0x0003) ncmd 1 status Success (0x00)")
        #expect(HCITrace.describe(packet("04 0f 04 0c 01 0c 20"), outgoing: false)
                == "> HCI Event: Command Status (0x0f) plen 4: LE Set Scan Enable (0x08|0x000c) ncmd 1 status Command Disallowed (0x0c)")
        #expect(HCITrace.describe(packet("04 10 01 2a"), outgoing: false).hasPrefix("> HCI Event: Hardware Error (0x10) plen 1"))
        #expect(HCITrace.describe(packet("04 0e 04 01 03"), outgoing: false).contains("undecodable"))
        #expect(HCITrace.describe(packet("01 ff ff 00"), outgoing: true).contains("Unknown command"))
    }
}
