import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol

// The radio records ENProtocol's `Scan` and `Sighting` (the one type each from the radio to the
// store, matching and the exports); this is their HCI edge: a sighting from an advertising
// report, and the advertiser's address between its compact form and HCIProtocol's `BDAddress`.

extension Sighting {
    /// The sighting in `report` (what the radio owner keeps of it), or nil for a report
    /// without GAEN service data or RSSI.
    package init?(report: LEAdvertisingReport, time: Double) {
        guard let rssi = report.rssi, Self.mayCarryGAEN(report.data),
              let ad = try? ExposureNotificationAdvertisement(advertisingData: Data(report.data)) else { return nil }
        self.init(time: time, rpi: ad.rpi, aem: ad.aem, rssi: Int(rssi), address: report.address.sightingAddress)
    }

    /// The advertiser's address; nil in scans stored before it was kept (blob versions 1-2).
    /// It tells apart two senders that happen to share an RPI-less moment and lets a trial
    /// check that address and RPI changed together.
    package var advertiser: BDAddress? {
        get { address.map(BDAddress.init(sightingAddress:)) }
        set { address = newValue?.sightingAddress }
    }

    /// A cheap look for the 0xFD6F service-data header (AD type 0x16, UUID 6F FD) before the
    /// full parse: in a crowd most reports are not GAEN and are dismissed here.
    static func mayCarryGAEN(_ data: [UInt8]) -> Bool {
        var i = 0
        while i + 3 < data.count {
            let length = Int(data[i])
            if length >= 3, data[i + 1] == 0x16, data[i + 2] == 0x6F, data[i + 3] == 0xFD { return true }
            i += 1 + length
        }
        return false
    }
}

extension BDAddress {
    /// The address as `Sighting.address` keeps it: its six bytes as on the wire, least
    /// significant first, in one number.
    package var sightingAddress: UInt64 {
        littleEndianBytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    package init(sightingAddress v: UInt64) {
        self.init(littleEndian: (0..<6).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) })
    }
}
