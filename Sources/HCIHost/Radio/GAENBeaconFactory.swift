import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol

/// One GAEN beacon with what it was made from, for logs, counters and `gaenctl radio advertise`.
package struct GAENBeacon: Equatable, Sendable {
    package var beacon: Beacon
    package var rpi: RollingProximityIdentifier
    package var aem: AssociatedEncryptedMetadata
    package var interval: ENIntervalNumber
}

/// Makes GAEN beacons: a fresh non-resolvable private address, the RPI of the interval and its
/// AEM, always together (GAEN Bluetooth spec: address, RPI and AEM change at the same time).
package struct GAENBeaconFactory {
    private let schedule: GAENKeySchedule

    package init() throws { schedule = try GAENKeySchedule() }

    package func beacon(tek: TemporaryExposureKey, interval: ENIntervalNumber, metadata: BluetoothMetadata,
                       random: inout some RandomBytesGenerator) throws -> GAENBeacon {
        let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: interval)
        let aem = try GAENKeySchedule.associatedEncryptedMetadata(metadata, rpi: rpi, aemk: schedule.associatedEncryptedMetadataKey(for: tek))
        let payload = ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData
        return GAENBeacon(beacon: Beacon(address: try Self.nonResolvablePrivateAddress(random: &random),
                                         advertisingData: [UInt8](payload)),
                          rpi: rpi, aem: aem, interval: interval)
    }

    /// Draws until the 46 random bits are neither all 0 nor all 1 (a 2^-45 event per draw).
    static func nonResolvablePrivateAddress(random: inout some RandomBytesGenerator) throws -> BDAddress {
        while true {
            if let a = try? BDAddress.nonResolvablePrivate(randomBytes: [UInt8](random.bytes(6))) { return a }
        }
    }
}
