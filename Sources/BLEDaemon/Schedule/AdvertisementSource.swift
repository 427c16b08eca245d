import ENProtocol
import GaenStore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes the advertisement of a slot: the day's TEK from the store (created on first need,
/// never a second one), the RPI of the slot's interval, the AEM of the node's metadata.
package struct AdvertisementSource: Sendable {
    package let store: NodeStore
    package var metadata: BluetoothMetadata

    package init(store: NodeStore, metadata: BluetoothMetadata) {
        self.store = store
        self.metadata = metadata
    }

    package func advertisement(for slot: AdvertisingSlot, now: Double) throws -> ExposureNotificationAdvertisement {
        let tek = try store.key(for: slot.day, now: now)
        let schedule = try GAENKeySchedule()
        let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: slot.interval)
        let aem = try GAENKeySchedule.associatedEncryptedMetadata(metadata, rpi: rpi, aemk: schedule.associatedEncryptedMetadataKey(for: tek))
        return ExposureNotificationAdvertisement(rpi: rpi, aem: aem)
    }
}
