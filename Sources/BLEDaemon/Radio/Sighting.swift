import ENProtocol
import Foundation
import HCIProtocol

/// A received GAEN advertisement: an advertising report with 0xFD6F service data, stamped
/// with the protocol time (UTC Unix seconds) of its scan window.
public struct Sighting: Equatable, Sendable {
    public var time: Double
    /// The advertiser's address (a GAEN sender's changes with every rotation).
    public var address: BDAddress
    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// dBm as the controller reported it, before any correction.
    public var rssi: Int

    public init(time: Double, address: BDAddress, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int) {
        self.time = time
        self.address = address
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
    }

    /// The sighting in `report`, or nil for a report without GAEN service data or RSSI.
    public init?(report: LEAdvertisingReport, time: Double) {
        guard let rssi = report.rssi, Self.mayCarryGAEN(report.data),
              let ad = try? ExposureNotificationAdvertisement(advertisingData: Data(report.data)) else { return nil }
        self.init(time: time, address: report.address, rpi: ad.rpi, aem: ad.aem, rssi: Int(rssi))
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

/// One finished scan: its start and end (UTC Unix seconds) and every GAEN sighting it kept,
/// possibly none (exposure windows need every scan for secondsSinceLastScan).
public struct ScanRecord: Equatable, Sendable {
    public var start: Double
    public var end: Double
    public var sightings: [Sighting]
    public init(start: Double, end: Double, sightings: [Sighting]) {
        self.start = start
        self.end = end
        self.sightings = sightings
    }
}
