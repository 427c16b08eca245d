/// HCI_LE_Meta_Event (Vol 4 Part E, 7.7.65): Subevent_Code then the subevent's parameters.
public enum HCILEMetaEvent: Equatable, Sendable {
    public static let eventCode: UInt8 = 0x3E

    case advertisingReport(HCILEAdvertisingReportEvent)
    case extendedAdvertisingReport(HCILEExtendedAdvertisingReportEvent)
    case unknown(subevent: UInt8, parameters: [UInt8])

    public init(parameters: ArraySlice<UInt8>) throws {
        try HCIMessageTable.event(Self.eventCode)!.parameters.check(parameters.count, what: "LE Meta parameters")
        let subevent = parameters[parameters.startIndex]
        let rest = parameters.dropFirst()
        switch subevent {
        case HCILEAdvertisingReportEvent.subeventCode:
            self = .advertisingReport(try HCILEAdvertisingReportEvent(parameters: rest))
        case HCILEExtendedAdvertisingReportEvent.subeventCode:
            self = .extendedAdvertisingReport(try HCILEExtendedAdvertisingReportEvent(parameters: rest))
        default:
            self = .unknown(subevent: subevent, parameters: Array(rest))
        }
    }

    public var subeventCode: UInt8 {
        switch self {
        case .advertisingReport: return HCILEAdvertisingReportEvent.subeventCode
        case .extendedAdvertisingReport: return HCILEExtendedAdvertisingReportEvent.subeventCode
        case let .unknown(code, _): return code
        }
    }

    public func encodeParameters() -> [UInt8] {
        switch self {
        case let .advertisingReport(e): return [subeventCode] + e.encodeParameters()
        case let .extendedAdvertisingReport(e): return [subeventCode] + e.encodeParameters()
        case let .unknown(code, parameters): return [code] + parameters
        }
    }
}

/// Event_Type of a legacy advertising report (Vol 4 Part E, 7.7.65.2).
public enum LegacyReportEventType: UInt8, Sendable, CaseIterable {
    case advInd = 0x00
    case advDirectInd = 0x01
    case advScanInd = 0x02
    case advNonconnInd = 0x03
    case scanRsp = 0x04
}

/// HCI_LE_Advertising_Report (Vol 4 Part E, 7.7.65.2): Num_Reports (1...0x19), then for each
/// report Event_Type, Address_Type, Address, Data_Length (0...31), Data, RSSI (127 = not
/// available). Reports are laid out one after another, as controllers send them (BlueZ and
/// Bumble read them the same way).
public struct HCILEAdvertisingReportEvent: Equatable, Sendable {
    public static let subeventCode: UInt8 = 0x02

    public struct Report: Equatable, Sendable {
        public var eventType: LegacyReportEventType
        public var addressType: LEAddressType
        public var address: BDAddress
        public var data: [UInt8]
        public var rssi: Int8
        public init(eventType: LegacyReportEventType, addressType: LEAddressType, address: BDAddress, data: [UInt8], rssi: Int8) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.data = data
            self.rssi = rssi
        }
    }

    public var reports: [Report]
    public init(reports: [Report]) { self.reports = reports }

    /// `parameters` follow the subevent code.
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = ByteReader(parameters, what: "LE Advertising Report")
        let count = Int(try r.u8("Num_Reports"))
        guard (1...0x19).contains(count) else {
            throw HCIDecodingError.invalidValue(what: "LE Advertising Report.Num_Reports", expected: "1...25", actual: "\(count)")
        }
        var reports: [Report] = []
        reports.reserveCapacity(count)
        for i in 0..<count {
            // Fixed part of one report: type, address type, address, data length, RSSI.
            guard r.remaining >= 10 else {
                throw HCIDecodingError.truncated(what: "LE Advertising Report.report[\(i)]", expected: 10, actual: r.remaining)
            }
            let rawType = try r.u8("Event_Type")
            guard let type = LegacyReportEventType(rawValue: rawType) else {
                throw HCIDecodingError.invalidValue(what: "LE Advertising Report.report[\(i)].Event_Type", expected: "0x00...0x04", actual: "0x\(hex2(rawType))")
            }
            let addressType = LEAddressType(rawValue: try r.u8("Address_Type"))
            let address = try r.address("Address")
            let length = Int(try r.u8("Data_Length"))
            guard length <= 31 else {
                throw HCIDecodingError.invalidValue(what: "LE Advertising Report.report[\(i)].Data_Length", expected: "0...31", actual: "\(length)")
            }
            let data = try r.bytes(length, "report[\(i)].Data")
            let rssi = try r.i8("report[\(i)].RSSI")
            reports.append(Report(eventType: type, addressType: addressType, address: address, data: data, rssi: rssi))
        }
        try r.expectEnd()
        self.reports = reports
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter()
        w.u8(UInt8(reports.count))
        for report in reports {
            w.u8(report.eventType.rawValue); w.u8(report.addressType.rawValue); w.address(report.address)
            w.u8(UInt8(report.data.count)); w.append(report.data); w.i8(report.rssi)
        }
        return w.bytes
    }
}

/// Event_Type bits of an extended advertising report (Vol 4 Part E, 7.7.65.13).
public struct ExtendedReportEventType: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let connectable = Self(rawValue: 1 << 0)
    public static let scannable = Self(rawValue: 1 << 1)
    public static let directed = Self(rawValue: 1 << 2)
    public static let scanResponse = Self(rawValue: 1 << 3)
    public static let legacy = Self(rawValue: 1 << 4)
    /// Data_Status in bits 5-6: 0 complete, 1 incomplete (more to come), 2 truncated.
    public var dataStatus: UInt8 { UInt8((rawValue >> 5) & 0x3) }
}

/// HCI_LE_Extended_Advertising_Report (Vol 4 Part E, 7.7.65.13): Num_Reports (1...10), then
/// for each report Event_Type (2), Address_Type, Address, Primary_PHY, Secondary_PHY,
/// Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval (2), Direct_Address_Type,
/// Direct_Address, Data_Length, Data (24 octets before the data).
public struct HCILEExtendedAdvertisingReportEvent: Equatable, Sendable {
    public static let subeventCode: UInt8 = 0x0D
    static let fixedReportSize = 24

    public struct Report: Equatable, Sendable {
        public var eventType: ExtendedReportEventType
        public var addressType: LEAddressType
        public var address: BDAddress
        public var primaryPHY: UInt8
        public var secondaryPHY: UInt8
        public var advertisingSID: UInt8
        /// dBm; 127 = not available.
        public var txPower: Int8
        /// dBm; 127 = not available.
        public var rssi: Int8
        public var periodicAdvertisingInterval: UInt16
        public var directAddressType: LEAddressType
        public var directAddress: BDAddress
        public var data: [UInt8]

        public init(eventType: ExtendedReportEventType, addressType: LEAddressType, address: BDAddress, primaryPHY: UInt8 = 1,
                    secondaryPHY: UInt8 = 0, advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, rssi: Int8,
                    periodicAdvertisingInterval: UInt16 = 0, directAddressType: LEAddressType = .public,
                    directAddress: BDAddress = .zero, data: [UInt8]) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.primaryPHY = primaryPHY
            self.secondaryPHY = secondaryPHY
            self.advertisingSID = advertisingSID
            self.txPower = txPower
            self.rssi = rssi
            self.periodicAdvertisingInterval = periodicAdvertisingInterval
            self.directAddressType = directAddressType
            self.directAddress = directAddress
            self.data = data
        }
    }

    public var reports: [Report]
    public init(reports: [Report]) { self.reports = reports }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = ByteReader(parameters, what: "LE Extended Advertising Report")
        let count = Int(try r.u8("Num_Reports"))
        guard (1...10).contains(count) else {
            throw HCIDecodingError.invalidValue(what: "LE Extended Advertising Report.Num_Reports", expected: "1...10", actual: "\(count)")
        }
        var reports: [Report] = []
        reports.reserveCapacity(count)
        for i in 0..<count {
            guard r.remaining >= Self.fixedReportSize else {
                throw HCIDecodingError.truncated(what: "LE Extended Advertising Report.report[\(i)]", expected: Self.fixedReportSize, actual: r.remaining)
            }
            let type = ExtendedReportEventType(rawValue: try r.u16("Event_Type"))
            let addressType = LEAddressType(rawValue: try r.u8("Address_Type"))
            let address = try r.address("Address")
            let primary = try r.u8("Primary_PHY")
            let secondary = try r.u8("Secondary_PHY")
            let sid = try r.u8("Advertising_SID")
            let tx = try r.i8("TX_Power")
            let rssi = try r.i8("RSSI")
            let periodic = try r.u16("Periodic_Advertising_Interval")
            let directType = LEAddressType(rawValue: try r.u8("Direct_Address_Type"))
            let direct = try r.address("Direct_Address")
            let length = Int(try r.u8("Data_Length"))
            let data = try r.bytes(length, "report[\(i)].Data")
            reports.append(Report(eventType: type, addressType: addressType, address: address, primaryPHY: primary,
                                  secondaryPHY: secondary, advertisingSID: sid, txPower: tx, rssi: rssi,
                                  periodicAdvertisingInterval: periodic, directAddressType: directType,
                                  directAddress: direct, data: data))
        }
        try r.expectEnd()
        self.reports = reports
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter()
        w.u8(UInt8(reports.count))
        for p in reports {
            w.u16(p.eventType.rawValue); w.u8(p.addressType.rawValue); w.address(p.address)
            w.u8(p.primaryPHY); w.u8(p.secondaryPHY); w.u8(p.advertisingSID); w.i8(p.txPower); w.i8(p.rssi)
            w.u16(p.periodicAdvertisingInterval); w.u8(p.directAddressType.rawValue); w.address(p.directAddress)
            w.u8(UInt8(p.data.count)); w.append(p.data)
        }
        return w.bytes
    }
}
