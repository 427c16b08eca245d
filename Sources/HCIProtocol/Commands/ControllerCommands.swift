// Controller & Baseband and Informational commands (Core spec Vol 4 Part E, 7.3 and 7.4).

/// HCI_Reset (Vol 4 Part E, 7.3.2). No parameters; returns Status.
public struct HCIReset: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.controllerAndBaseband, ocf: 0x0003)
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
}

/// HCI_Set_Event_Mask (Vol 4 Part E, 7.3.1). Event_Mask (8 octets); returns Status.
public struct HCISetEventMask: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.controllerAndBaseband, ocf: 0x0001)
    public var mask: HCIEventMask
    public init(mask: HCIEventMask) { self.mask = mask }
    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(); w.u64(mask.rawValue); return w.bytes
    }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        mask = HCIEventMask(rawValue: try r.u64("Event_Mask"))
    }
}

/// HCI_Read_Local_Version_Information (Vol 4 Part E, 7.4.1). Returns Status, HCI_Version,
/// HCI_Subversion (formerly HCI_Revision), LMP_Version, Company_Identifier, LMP_Subversion.
public struct HCIReadLocalVersionInformation: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.informational, ocf: 0x0001)

    public struct ReturnParameters: Equatable, Sendable {
        public var hciVersion: UInt8
        public var hciSubversion: UInt16
        public var lmpVersion: UInt8
        public var companyIdentifier: UInt16
        public var lmpSubversion: UInt16
        public init(hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8, companyIdentifier: UInt16, lmpSubversion: UInt16) {
            self.hciVersion = hciVersion
            self.hciSubversion = hciSubversion
            self.lmpVersion = lmpVersion
            self.companyIdentifier = companyIdentifier
            self.lmpSubversion = lmpSubversion
        }
    }

    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }

    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> ReturnParameters {
        var r = try returnReader(afterStatus)
        return ReturnParameters(
            hciVersion: try r.u8("HCI_Version"), hciSubversion: try r.u16("HCI_Subversion"),
            lmpVersion: try r.u8("LMP_Version"), companyIdentifier: try r.u16("Company_Identifier"),
            lmpSubversion: try r.u16("LMP_Subversion"))
    }

    public static func encodeReturnParameters(_ v: ReturnParameters) -> [UInt8] {
        var w = ByteWriter()
        w.u8(v.hciVersion); w.u16(v.hciSubversion); w.u8(v.lmpVersion)
        w.u16(v.companyIdentifier); w.u16(v.lmpSubversion)
        return w.bytes
    }
}

/// HCI_Read_Local_Supported_Commands (Vol 4 Part E, 7.4.2). Returns Status and the
/// 64-octet Supported_Commands table (6.27).
public struct HCIReadLocalSupportedCommands: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.informational, ocf: 0x0002)
    public typealias ReturnParameters = SupportedCommands
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> SupportedCommands {
        try checkReturn(afterStatus)
        return SupportedCommands(octets: Array(afterStatus))
    }
    public static func encodeReturnParameters(_ v: SupportedCommands) -> [UInt8] { v.octets }
}

/// HCI_Read_Local_Supported_Features (Vol 4 Part E, 7.4.3). Returns Status and LMP_Features
/// (8 octets, Vol 2 Part C, 3.3).
public struct HCIReadLocalSupportedFeatures: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.informational, ocf: 0x0003)
    public typealias ReturnParameters = LMPFeatures
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> LMPFeatures {
        var r = try returnReader(afterStatus)
        return LMPFeatures(rawValue: try r.u64("LMP_Features"))
    }
    public static func encodeReturnParameters(_ v: LMPFeatures) -> [UInt8] {
        var w = ByteWriter(); w.u64(v.rawValue); return w.bytes
    }
}

/// HCI_Read_BD_ADDR (Vol 4 Part E, 7.4.6). Returns Status and BD_ADDR (the public address;
/// all zero on a controller without one).
public struct HCIReadBDAddr: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.informational, ocf: 0x0009)
    public typealias ReturnParameters = BDAddress
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> BDAddress {
        var r = try returnReader(afterStatus)
        return try r.address("BD_ADDR")
    }
    public static func encodeReturnParameters(_ v: BDAddress) -> [UInt8] { v.littleEndianBytes }
}
