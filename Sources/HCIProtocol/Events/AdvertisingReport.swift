/// The PDU an advertising report came from, the same for legacy (7.7.65.2) and extended
/// (7.7.65.13) reports: legacy PDUs in an extended report map to the legacy cases.
public enum AdvertisingPDUKind: Equatable, Hashable, Sendable, CustomStringConvertible {
    case advInd
    case advDirectInd
    case advScanInd
    case advNonconnInd
    case scanRsp
    /// An extended advertising PDU (not legacy), with its Event_Type bits.
    case extended(ExtendedReportEventType)

    public var description: String {
        switch self {
        case .advInd: return "ADV_IND"
        case .advDirectInd: return "ADV_DIRECT_IND"
        case .advScanInd: return "ADV_SCAN_IND"
        case .advNonconnInd: return "ADV_NONCONN_IND"
        case .scanRsp: return "SCAN_RSP"
        case let .extended(t): return "extended(0x\(hex4(t.rawValue)))"
        }
    }
}

/// One advertising report, whichever subevent carried it. This is what a scanner consumes.
public struct LEAdvertisingReport: Equatable, Sendable {
    public var address: BDAddress
    public var addressType: LEAddressType
    public var kind: AdvertisingPDUKind
    /// dBm; nil when the controller says "not available" (127).
    public var rssi: Int8?
    /// dBm, extended reports only; nil when not available.
    public var txPower: Int8?
    public var data: [UInt8]

    public init(address: BDAddress, addressType: LEAddressType, kind: AdvertisingPDUKind, rssi: Int8?, txPower: Int8? = nil, data: [UInt8]) {
        self.address = address
        self.addressType = addressType
        self.kind = kind
        self.rssi = rssi
        self.txPower = txPower
        self.data = data
    }

    public init(_ r: HCILEAdvertisingReportEvent.Report) {
        let kind: AdvertisingPDUKind
        switch r.eventType {
        case .advInd: kind = .advInd
        case .advDirectInd: kind = .advDirectInd
        case .advScanInd: kind = .advScanInd
        case .advNonconnInd: kind = .advNonconnInd
        case .scanRsp: kind = .scanRsp
        }
        self.init(address: r.address, addressType: r.addressType, kind: kind, rssi: r.rssi == 127 ? nil : r.rssi, data: r.data)
    }

    public init(_ r: HCILEExtendedAdvertisingReportEvent.Report) {
        // Legacy PDU Event_Type values of 7.7.65.13 (bit 4 set).
        let kind: AdvertisingPDUKind
        switch r.eventType.rawValue & 0x1F {
        case 0x13: kind = .advInd
        case 0x15: kind = .advDirectInd
        case 0x12: kind = .advScanInd
        case 0x10: kind = .advNonconnInd
        case 0x1B, 0x1A: kind = .scanRsp
        default: kind = .extended(r.eventType)
        }
        self.init(address: r.address, addressType: r.addressType, kind: kind, rssi: r.rssi == 127 ? nil : r.rssi,
                  txPower: r.txPower == 127 ? nil : r.txPower, data: r.data)
    }

    /// All reports in an LE Meta event (empty for other subevents).
    public static func reports(in event: HCILEMetaEvent) -> [LEAdvertisingReport] {
        switch event {
        case let .advertisingReport(e): return e.reports.map(LEAdvertisingReport.init)
        case let .extendedAdvertisingReport(e): return e.reports.map(LEAdvertisingReport.init)
        case .unknown: return []
        }
    }
}
