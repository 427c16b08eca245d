// LE Controller commands (Core spec Vol 4 Part E, 7.8).

/// HCI_LE_Set_Event_Mask (Vol 4 Part E, 7.8.1). LE_Event_Mask (8 octets); returns Status.
public struct HCILESetEventMask: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0001)
    public var mask: LEEventMask
    public init(mask: LEEventMask) { self.mask = mask }
    public func encodeParameters() -> [UInt8] { var w = ByteWriter(); w.u64(mask.rawValue); return w.bytes }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        mask = LEEventMask(rawValue: try r.u64("LE_Event_Mask"))
    }
}

/// HCI_LE_Read_Local_Supported_Features (Vol 4 Part E, 7.8.3; "Page 0" since Core 6.0).
/// Returns Status and LE_Features (8 octets, Vol 6 Part B, 4.6).
public struct HCILEReadLocalSupportedFeatures: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0003)
    public typealias ReturnParameters = LEFeatures
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> LEFeatures {
        var r = try returnReader(afterStatus)
        return LEFeatures(rawValue: try r.u64("LE_Features"))
    }
    public static func encodeReturnParameters(_ v: LEFeatures) -> [UInt8] { var w = ByteWriter(); w.u64(v.rawValue); return w.bytes }
}

/// HCI_LE_Set_Random_Address (Vol 4 Part E, 7.8.4). Random_Address (6 octets); returns
/// Status. Controllers answer Command Disallowed while advertising or scanning is enabled.
public struct HCILESetRandomAddress: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0005)
    public var address: BDAddress
    public init(address: BDAddress) { self.address = address }
    public func encodeParameters() -> [UInt8] { address.littleEndianBytes }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        address = try r.address("Random_Address")
    }
}

/// HCI_LE_Set_Advertising_Parameters (Vol 4 Part E, 7.8.5). 15 octets: interval min/max
/// (0.625 ms units), Advertising_Type, Own_Address_Type, Peer_Address_Type, Peer_Address,
/// Advertising_Channel_Map, Advertising_Filter_Policy; returns Status.
public struct HCILESetAdvertisingParameters: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0006)
    public var intervalMin: AdvertisingInterval
    public var intervalMax: AdvertisingInterval
    public var type: LegacyAdvertisingType
    public var ownAddressType: OwnAddressType
    public var peerAddressType: UInt8
    public var peerAddress: BDAddress
    public var channelMap: AdvertisingChannelMap
    public var filterPolicy: UInt8

    public init(intervalMin: AdvertisingInterval, intervalMax: AdvertisingInterval, type: LegacyAdvertisingType,
                ownAddressType: OwnAddressType, peerAddressType: UInt8 = 0, peerAddress: BDAddress = .zero,
                channelMap: AdvertisingChannelMap = .all, filterPolicy: UInt8 = 0) throws {
        guard intervalMin <= intervalMax else {
            throw HCIParameterError(what: "advertising interval", expected: "min <= max", actual: "\(intervalMin) > \(intervalMax)")
        }
        guard !channelMap.isEmpty, channelMap.rawValue & ~0x07 == 0 else {
            throw HCIParameterError(what: "advertising channel map", expected: "non-empty subset of 0x07", actual: "0x\(hex2(channelMap.rawValue))")
        }
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.type = type
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(capacity: 15)
        w.u16(intervalMin.units); w.u16(intervalMax.units); w.u8(type.rawValue)
        w.u8(ownAddressType.rawValue); w.u8(peerAddressType); w.address(peerAddress)
        w.u8(channelMap.rawValue); w.u8(filterPolicy)
        return w.bytes
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        let minimum = try AdvertisingInterval(units: try r.u16("Advertising_Interval_Min"))
        let maximum = try AdvertisingInterval(units: try r.u16("Advertising_Interval_Max"))
        let rawType = try r.u8("Advertising_Type")
        guard let type = LegacyAdvertisingType(rawValue: rawType) else {
            throw HCIDecodingError.invalidValue(what: "\(Self.name).Advertising_Type", expected: "0x00...0x04", actual: "0x\(hex2(rawType))")
        }
        let own = try OwnAddressType.decode(try r.u8("Own_Address_Type"), "\(Self.name).Own_Address_Type")
        let peerType = try r.u8("Peer_Address_Type")
        let peer = try r.address("Peer_Address")
        let map = AdvertisingChannelMap(rawValue: try r.u8("Advertising_Channel_Map"))
        let policy = try r.u8("Advertising_Filter_Policy")
        try self.init(intervalMin: minimum, intervalMax: maximum, type: type, ownAddressType: own,
                      peerAddressType: peerType, peerAddress: peer, channelMap: map, filterPolicy: policy)
    }
}

/// HCI_LE_Read_Advertising_Physical_Channel_Tx_Power (Vol 4 Part E, 7.8.6). Returns Status
/// and TX_Power_Level in dBm (signed, -127...+20).
public struct HCILEReadAdvertisingPhysicalChannelTxPower: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0007)
    public struct ReturnParameters: Equatable, Sendable {
        public var txPowerDBm: Int8
        public init(txPowerDBm: Int8) { self.txPowerDBm = txPowerDBm }
    }
    public init() {}
    public func encodeParameters() -> [UInt8] { [] }
    public init(parameters: ArraySlice<UInt8>) throws { try Self.checkParameters(parameters) }
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> ReturnParameters {
        var r = try returnReader(afterStatus)
        return ReturnParameters(txPowerDBm: try r.i8("TX_Power_Level"))
    }
    public static func encodeReturnParameters(_ v: ReturnParameters) -> [UInt8] { [UInt8(bitPattern: v.txPowerDBm)] }
}

/// HCI_LE_Set_Advertising_Data (Vol 4 Part E, 7.8.7). Advertising_Data_Length (0...31) and
/// Advertising_Data, always sent as 31 octets (zero-padded); returns Status.
public struct HCILESetAdvertisingData: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x0008)
    public static let maximumLength = 31
    public let data: [UInt8]

    public init(data: [UInt8]) throws {
        guard data.count <= Self.maximumLength else {
            throw HCIParameterError(what: "advertising data length", expected: "0...31", actual: "\(data.count)")
        }
        self.data = data
    }

    public func encodeParameters() -> [UInt8] {
        [UInt8(data.count)] + data + [UInt8](repeating: 0, count: Self.maximumLength - data.count)
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        let length = Int(try r.u8("Advertising_Data_Length"))
        guard length <= Self.maximumLength else {
            throw HCIDecodingError.invalidValue(what: "\(Self.name).Advertising_Data_Length", expected: "0...31", actual: "\(length)")
        }
        data = try r.bytes(length, "Advertising_Data")
    }
}

/// HCI_LE_Set_Advertising_Enable (Vol 4 Part E, 7.8.9). Advertising_Enable (0/1); returns Status.
public struct HCILESetAdvertisingEnable: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x000A)
    public var enabled: Bool
    public init(enabled: Bool) { self.enabled = enabled }
    public func encodeParameters() -> [UInt8] { [enabled ? 1 : 0] }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        enabled = try decodeBool(try r.u8("Advertising_Enable"), "\(Self.name).Advertising_Enable")
    }
}

/// HCI_LE_Set_Scan_Parameters (Vol 4 Part E, 7.8.10). LE_Scan_Type, LE_Scan_Interval,
/// LE_Scan_Window (0.625 ms units, window <= interval), Own_Address_Type,
/// Scanning_Filter_Policy; returns Status.
public struct HCILESetScanParameters: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x000B)
    public var type: LEScanType
    public var interval: ScanTiming
    public var window: ScanTiming
    public var ownAddressType: OwnAddressType
    public var filterPolicy: UInt8

    public init(type: LEScanType, interval: ScanTiming, window: ScanTiming, ownAddressType: OwnAddressType, filterPolicy: UInt8 = 0) throws {
        guard window <= interval else {
            throw HCIParameterError(what: "scan window", expected: "<= scan interval \(interval)", actual: "\(window)")
        }
        self.type = type
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(capacity: 7)
        w.u8(type.rawValue); w.u16(interval.units); w.u16(window.units)
        w.u8(ownAddressType.rawValue); w.u8(filterPolicy)
        return w.bytes
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        let rawType = try r.u8("LE_Scan_Type")
        guard let type = LEScanType(rawValue: rawType) else {
            throw HCIDecodingError.invalidValue(what: "\(Self.name).LE_Scan_Type", expected: "0x00...0x01", actual: "0x\(hex2(rawType))")
        }
        let interval = try ScanTiming(units: try r.u16("LE_Scan_Interval"))
        let window = try ScanTiming(units: try r.u16("LE_Scan_Window"))
        let own = try OwnAddressType.decode(try r.u8("Own_Address_Type"), "\(Self.name).Own_Address_Type")
        try self.init(type: type, interval: interval, window: window, ownAddressType: own, filterPolicy: try r.u8("Scanning_Filter_Policy"))
    }
}

/// HCI_LE_Set_Scan_Enable (Vol 4 Part E, 7.8.11). LE_Scan_Enable and Filter_Duplicates
/// (0/1 each); returns Status. Some controllers (BCM43455) answer Command Disallowed when
/// asked to disable a scan that is already off.
public struct HCILESetScanEnable: HCICommand {
    public static let opcode = HCIOpcode(ogf: HCIOpcodeGroup.le, ocf: 0x000C)
    public var enabled: Bool
    public var filterDuplicates: Bool
    public init(enabled: Bool, filterDuplicates: Bool) {
        self.enabled = enabled
        self.filterDuplicates = filterDuplicates
    }
    public func encodeParameters() -> [UInt8] { [enabled ? 1 : 0, filterDuplicates ? 1 : 0] }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try Self.parameterReader(parameters)
        enabled = try decodeBool(try r.u8("LE_Scan_Enable"), "\(Self.name).LE_Scan_Enable")
        filterDuplicates = try decodeBool(try r.u8("Filter_Duplicates"), "\(Self.name).Filter_Duplicates")
    }
}

func decodeBool(_ v: UInt8, _ what: String) throws -> Bool {
    switch v {
    case 0: return false
    case 1: return true
    default: throw HCIDecodingError.invalidValue(what: what, expected: "0x00 or 0x01", actual: "0x\(hex2(v))")
    }
}
