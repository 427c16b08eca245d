import Testing
import HCITestSupport
@testable import HCIProtocol

/// Captured command packets (btmon style: indicator, opcode LE, length, parameters) and their
/// Command Complete answers, each decoded, re-encoded and compared byte for byte.
@Suite("HCI commands")
struct CommandTests {
    func roundTrip<C: HCICommand>(_ command: C, _ capture: String) throws {
        #expect(command.packet == packet(capture), "\(C.name) encodes to the capture")
        #expect(try C.decode(packet(capture)) == command, "\(C.name) decodes from the capture")
    }

    func roundTripReturn<C: HCICommand>(_ type: C.Type, _ value: C.ReturnParameters, _ capture: String) throws {
        #expect(try complete(type, capture) == value)
        let event = HCIEvent.commandComplete(HCICommandCompleteEvent(type, returning: value))
        #expect(event.packet == packet(capture), "\(C.name) Command Complete encodes to the capture")
    }

    @Test func reset() throws {
        try roundTrip(HCIReset(), "01 03 0c 00")
        try roundTripReturn(HCIReset.self, HCINoReturnParameters(), "04 0e 04 01 03 0c 00")
        #expect(HCIReset.opcode.ogf == 0x03 && HCIReset.opcode.ocf == 0x0003)
        #expect(HCIReset.opcode.rawValue == 0x0c03)
    }

    @Test func setEventMask() throws {
        let mask: HCIEventMask = [.disconnectionComplete, .hardwareError, .dataBufferOverflow, .leMeta]
        try roundTrip(HCISetEventMask(mask: mask), "01 01 0c 08 10 80 00 02 00 00 00 20")
        try roundTripReturn(HCISetEventMask.self, HCINoReturnParameters(), "04 0e 04 01 01 0c 00")
    }

    @Test func readLocalVersionInformation() throws {
        try roundTrip(HCIReadLocalVersionInformation(), "01 01 10 00")
        let v = HCIReadLocalVersionInformation.ReturnParameters(hciVersion: 0x0c, hciSubversion: 0x1234, lmpVersion: 0x0c, companyIdentifier: 0x000f, lmpSubversion: 0x5678)
        try roundTripReturn(HCIReadLocalVersionInformation.self, v, "04 0e 0c 01 01 10 00 0c 34 12 0c 0f 00 78 56")
        #expect(CoreVersion.name(v.hciVersion) == "5.3")
        #expect(CompanyIdentifier.name(v.companyIdentifier) == "Broadcom Corporation")
    }

    @Test("company identifiers: the SIG's whole list (controller makers and the newest), 0xFFFF, unknown")
    func companyIdentifiers() {
        #expect(CompanyIdentifier.names.count > 3300)
        #expect(CompanyIdentifier.name(0x0002) == "Intel Corp.")
        #expect(CompanyIdentifier.name(0x005D) == "Realtek Semiconductor Corporation")
        #expect(CompanyIdentifier.name(0x0131) == "Cypress Semiconductor")
        #expect(CompanyIdentifier.name(0x0059) == "Nordic Semiconductor ASA")
        #expect(CompanyIdentifier.name(0x0CFE) != "unknown")
        #expect(CompanyIdentifier.name(0xFFFF) == "Not assigned (testing/virtual)")
        #expect(CompanyIdentifier.name(0xFFFE) == "unknown")
    }

    @Test func readLocalSupportedCommands() throws {
        try roundTrip(HCIReadLocalSupportedCommands(), "01 02 10 00")
        var octets = [UInt8](repeating: 0, count: 64)
        octets[0] = 0x21; octets[36] = 0x02
        let capture = "04 0e 44 01 02 10 00 21" + String(repeating: " 00", count: 35) + " 02" + String(repeating: " 00", count: 27)
        try roundTripReturn(HCIReadLocalSupportedCommands.self, SupportedCommands(octets: octets), capture)
        let decoded = try complete(HCIReadLocalSupportedCommands.self, capture)
        #expect(decoded.count == 3)
        #expect(decoded.leExtendedAdvertising)
        #expect(decoded.contains(octet: 0, bit: 5))
        #expect(!decoded.contains(octet: 0, bit: 1))
        #expect(!decoded.contains(octet: 99, bit: 0))
    }

    @Test func readLocalSupportedFeatures() throws {
        try roundTrip(HCIReadLocalSupportedFeatures(), "01 03 10 00")
        let capture = "04 0e 0c 01 03 10 00 00 00 00 00 60 00 00 00"
        let f = try complete(HCIReadLocalSupportedFeatures.self, capture)
        #expect(f.contains(.leSupportedController) && f.contains(.brEdrNotSupported))
        try roundTripReturn(HCIReadLocalSupportedFeatures.self, f, capture)
    }

    @Test func readBDAddr() throws {
        try roundTrip(HCIReadBDAddr(), "01 09 10 00")
        let capture = "04 0e 0a 01 09 10 00 66 55 44 33 22 11"
        #expect(try complete(HCIReadBDAddr.self, capture).description == "11:22:33:44:55:66")
        try roundTripReturn(HCIReadBDAddr.self, try BDAddress(string: "11:22:33:44:55:66"), capture)
    }

    @Test func leSetEventMask() throws {
        try roundTrip(HCILESetEventMask(mask: [.advertisingReport, .extendedAdvertisingReport]), "01 01 20 08 02 10 00 00 00 00 00 00")
        try roundTripReturn(HCILESetEventMask.self, HCINoReturnParameters(), "04 0e 04 01 01 20 00")
    }

    @Test func leReadLocalSupportedFeatures() throws {
        try roundTrip(HCILEReadLocalSupportedFeatures(), "01 03 20 00")
        let capture = "04 0e 0c 01 03 20 00 ff 1f 00 00 00 00 00 00"
        let f = try complete(HCILEReadLocalSupportedFeatures.self, capture)
        #expect(f.contains(.extendedAdvertising))
        #expect(f.names.first == "LE Encryption")
        #expect(f.names.count == 13)
        #expect(f.names.last == "LE Extended Advertising")
        #expect(LEFeatures(rawValue: 1 << 63).names == ["bit 63"])
        try roundTripReturn(HCILEReadLocalSupportedFeatures.self, f, capture)
    }

    @Test func leSetRandomAddress() throws {
        try roundTrip(HCILESetRandomAddress(address: try BDAddress(string: "1F:22:33:44:55:66")), "01 05 20 06 66 55 44 33 22 1f")
        try roundTripReturn(HCILESetRandomAddress.self, HCINoReturnParameters(), "04 0e 04 01 05 20 00")
    }

    @Test func leSetAdvertisingParameters() throws {
        // GAEN: 200-270 ms, ADV_NONCONN_IND, own address random, all channels.
        let c = try HCILESetAdvertisingParameters(
            intervalMin: try AdvertisingInterval(milliseconds: 200), intervalMax: try AdvertisingInterval(milliseconds: 270),
            type: .advNonconnInd, ownAddressType: .random)
        try roundTrip(c, "01 06 20 0f 40 01 b0 01 03 01 00 00 00 00 00 00 00 07 00")
        try roundTripReturn(HCILESetAdvertisingParameters.self, HCINoReturnParameters(), "04 0e 04 01 06 20 00")
        // Bad field values are specific errors.
        #expect(throws: HCIDecodingError.invalidValue(what: "LE Set Advertising Parameters.Advertising_Type", expected: "0x00...0x04", actual: "0x05")) {
            try HCILESetAdvertisingParameters.decode(packet("01 06 20 0f 40 01 b0 01 05 01 00 00 00 00 00 00 00 07 00"))
        }
        #expect(throws: HCIParameterError.self) {
            try HCILESetAdvertisingParameters.decode(packet("01 06 20 0f 40 01 b0 01 03 01 00 00 00 00 00 00 00 00 00"))
        }
        #expect(throws: HCIParameterError.self) {
            try HCILESetAdvertisingParameters(intervalMin: try AdvertisingInterval(units: 0x100), intervalMax: try AdvertisingInterval(units: 0x80), type: .advInd, ownAddressType: .public)
        }
    }

    @Test func leReadAdvertisingPhysicalChannelTxPower() throws {
        try roundTrip(HCILEReadAdvertisingPhysicalChannelTxPower(), "01 07 20 00")
        try roundTripReturn(HCILEReadAdvertisingPhysicalChannelTxPower.self, .init(txPowerDBm: -10), "04 0e 05 01 07 20 00 f6")
    }

    @Test func leSetAdvertisingData() throws {
        let payload = h("02 01 1a 03 03 6f fd 17 16 6f fd") + Array(0..<20)
        let capture = "01 08 20 20 1f 02 01 1a 03 03 6f fd 17 16 6f fd 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13"
        try roundTrip(try HCILESetAdvertisingData(data: payload), capture)
        // Shorter data is padded to 31 octets on the wire.
        try roundTrip(try HCILESetAdvertisingData(data: h("02 01 06")), "01 08 20 20 03 02 01 06" + String(repeating: " 00", count: 28))
        #expect(throws: HCIParameterError.self) { try HCILESetAdvertisingData(data: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: HCIDecodingError.invalidValue(what: "LE Set Advertising Data.Advertising_Data_Length", expected: "0...31", actual: "32")) {
            try HCILESetAdvertisingData.decode(packet("01 08 20 20 20" + String(repeating: " 00", count: 31)))
        }
    }

    @Test func leSetAdvertisingEnable() throws {
        try roundTrip(HCILESetAdvertisingEnable(enabled: true), "01 0a 20 01 01")
        try roundTrip(HCILESetAdvertisingEnable(enabled: false), "01 0a 20 01 00")
        #expect(throws: HCIDecodingError.self) { try HCILESetAdvertisingEnable.decode(packet("01 0a 20 01 02")) }
    }

    @Test func leSetScanParameters() throws {
        // Passive, window = interval = 60 ms.
        let t = try ScanTiming(milliseconds: 60)
        try roundTrip(try HCILESetScanParameters(type: .passive, interval: t, window: t, ownAddressType: .random), "01 0b 20 07 00 60 00 60 00 01 00")
        try roundTripReturn(HCILESetScanParameters.self, HCINoReturnParameters(), "04 0e 04 01 0b 20 00")
        #expect(throws: HCIParameterError.self) {
            try HCILESetScanParameters(type: .passive, interval: try ScanTiming(units: 0x10), window: try ScanTiming(units: 0x20), ownAddressType: .public)
        }
    }

    @Test func leSetScanEnable() throws {
        try roundTrip(HCILESetScanEnable(enabled: true, filterDuplicates: false), "01 0c 20 02 01 00")
        try roundTripReturn(HCILESetScanEnable.self, HCINoReturnParameters(), "04 0e 04 01 0c 20 00")
    }

    @Test func everyTableEntryHasItsCommandType() {
        let types: [any HCICommand.Type] = [
            HCIReset.self, HCISetEventMask.self, HCIReadLocalVersionInformation.self, HCIReadLocalSupportedCommands.self,
            HCIReadLocalSupportedFeatures.self, HCIReadBDAddr.self, HCILESetEventMask.self, HCILEReadLocalSupportedFeatures.self,
            HCILESetRandomAddress.self, HCILESetAdvertisingParameters.self, HCILEReadAdvertisingPhysicalChannelTxPower.self,
            HCILESetAdvertisingData.self, HCILESetAdvertisingEnable.self, HCILESetScanParameters.self, HCILESetScanEnable.self,
        ]
        #expect(Set(types.map { $0.opcode }) == Set(HCIMessageTable.commands.map(\.opcode)))
    }

    @Test func lengthIsCheckedBeforeDecoding() throws {
        #expect(throws: HCIDecodingError.lengthMismatch(what: "LE Set Scan Enable parameters", expected: 2, actual: 1)) {
            try HCILESetScanEnable.decode(packet("01 0c 20 01 01"))
        }
        #expect(throws: HCIDecodingError.lengthMismatch(what: "HCI command LE Set Scan Enable parameters", expected: 2, actual: 1)) {
            try HCILESetScanEnable.decode(packet("01 0c 20 02 01"))
        }
        #expect(throws: HCIDecodingError.lengthMismatch(what: "Read BD_ADDR return parameters", expected: 7, actual: 4)) {
            try complete(HCIReadBDAddr.self, "04 0e 07 01 09 10 00 66 55 44")
        }
        #expect(throws: HCIDecodingError.self) { try HCIReset.decode(packet("01 01 0c 00")) }
    }

    @Test func unitsAreRangeChecked() throws {
        #expect(try AdvertisingInterval(milliseconds: 20).units == 0x20)
        #expect(try AdvertisingInterval(milliseconds: 10240).units == 0x4000)
        #expect(throws: HCIParameterError.self) { try AdvertisingInterval(milliseconds: 19) }
        #expect(throws: HCIParameterError.self) { try AdvertisingInterval(units: 0x4001) }
        #expect(throws: HCIParameterError.self) { try AdvertisingInterval(milliseconds: .nan) }
        #expect(try ScanTiming(milliseconds: 2.5).units == 4)
        #expect(throws: HCIParameterError.self) { try ScanTiming(units: 3) }
        #expect(try AdvertisingInterval(units: 432).milliseconds == 270)
    }

    @Test func statusCodesAreNamed() {
        #expect(HCIStatusCode(rawValue: 0x0C) == .commandDisallowed)
        #expect(HCIStatusCode(rawValue: 0x01) == .unknownCommand)
        #expect(HCIStatusCode.commandDisallowed.description == "Command Disallowed (0x0c)")
        #expect(HCIStatusCode(rawValue: 0x7F) == .other(0x7F))
        #expect(HCIStatusCode(rawValue: 0x7F).rawValue == 0x7F)
        for raw in UInt8(0)...0xFF { #expect(HCIStatusCode(rawValue: raw).rawValue == raw) }
    }

    @Test func addresses() throws {
        let a = try BDAddress(string: "3F:FF:FF:FF:FF:FF")
        #expect(!a.isNonResolvablePrivate, "all-ones random part")
        #expect(!BDAddress.zero.isNonResolvablePrivate)
        #expect(try BDAddress(string: "1F:22:33:44:55:66").isNonResolvablePrivate)
        #expect(!(try BDAddress(string: "5F:22:33:44:55:66").isNonResolvablePrivate), "resolvable prefix 01")
        let made = try BDAddress.nonResolvablePrivate(randomBytes: [1, 2, 3, 4, 5, 0xFF])
        #expect(made.description == "3F:05:04:03:02:01")
        #expect(made.isNonResolvablePrivate)
        #expect(throws: HCIParameterError.self) { try BDAddress.nonResolvablePrivate(randomBytes: [0, 0, 0, 0, 0, 0xC0]) }
        #expect(throws: HCIParameterError.self) { try BDAddress(string: "11:22:33") }
        #expect(throws: HCIParameterError.self) { try BDAddress(string: "11:22:33:44:55:GG") }
    }
}
