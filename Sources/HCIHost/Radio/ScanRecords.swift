import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol

/// A received GAEN advertisement (an advertising report with 0xFD6F service data): the one
/// sighting type of the radio (RadioOwner keeps them per scan), the store (scan records) and
/// the research signal. ENProtocol's `Sighting` is the matching index's compact record, built
/// from these when a sightings log is read for matching.
package struct RecordedSighting: Hashable, Sendable {
    /// UTC Unix seconds of the report (derived from the scan's start and monotonic time).
    package var time: Double
    package var rpi: RollingProximityIdentifier
    package var aem: AssociatedEncryptedMetadata
    /// RSSI in dBm as the controller reported it, before any correction.
    package var rssi: Int8
    /// The advertiser's address; nil in scans stored before it was kept (blob versions 1-2).
    /// It tells apart two senders that happen to share an RPI-less moment and lets a trial
    /// check that address and RPI changed together.
    package var address: BDAddress?

    package init(time: Double, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8, address: BDAddress? = nil) {
        self.time = time
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
        self.address = address
    }
}

/// One scan: its start and end (UTC Unix seconds) and every report it kept, possibly none
/// (exposure windows need every scan for secondsSinceLastScan). The radio owner makes it once,
/// with the RSSI correction in use when it ended (`RadioScheduleEffects` asks for it), and the
/// store keeps it as it is.
package struct RecordedScan: Hashable, Sendable {
    package var start: Double
    package var end: Double
    package var sightings: [RecordedSighting]
    /// The node's RSSI correction (dB) when the scan ran; nil in scans stored before it was
    /// recorded (blob version 1). Kept per scan so that a calibration changed mid-trial does
    /// not rewrite the attenuation of earlier sightings.
    package var rssiCorrection: Int?

    package init(start: Double, end: Double, sightings: [RecordedSighting], rssiCorrection: Int? = nil) {
        self.start = start
        self.end = end
        self.sightings = sightings
        self.rssiCorrection = rssiCorrection
    }
}

extension RecordedSighting {
    /// The sighting in `report` (what the radio owner keeps of it), or nil for a report
    /// without GAEN service data or RSSI.
    package init?(report: LEAdvertisingReport, time: Double) {
        guard let rssi = report.rssi, Self.mayCarryGAEN(report.data),
              let ad = try? ExposureNotificationAdvertisement(advertisingData: Data(report.data)) else { return nil }
        self.init(time: time, rpi: ad.rpi, aem: ad.aem, rssi: rssi, address: report.address)
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
