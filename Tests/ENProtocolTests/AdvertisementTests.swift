import Foundation
import Testing
@testable import ENProtocol

@Suite struct AdvertisementTests {
    let rpi = try! RollingProximityIdentifier(hex: "8be6cd371c5c891604bfbe49df845096")
    let aem = try! AssociatedEncryptedMetadata(hex: "72033874")

    @Test func payloadHasTheSpecLayout() {
        let d = ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData
        #expect(d.count == 31)
        #expect(d.hexString == "02011a" + "03036ffd" + "17166ffd" + "8be6cd371c5c891604bfbe49df845096" + "72033874")
    }

    @Test func parsesOwnPayloadAndOtherOrders() throws {
        let ad = ExposureNotificationAdvertisement(rpi: rpi, aem: aem)
        #expect(try ExposureNotificationAdvertisement(advertisingData: ad.advertisingData) == ad)
        // Service data first, an unrelated structure (name) between, zero padding after.
        let reordered = try Data(hex: "17166ffd8be6cd371c5c891604bfbe49df845096720338740504414243440201060000")
        #expect(try ExposureNotificationAdvertisement(advertisingData: reordered) == ad)
        // Another service's data (0xFE9F) is tolerated.
        let other = try Data(hex: "05169ffe0102" + "17166ffd8be6cd371c5c891604bfbe49df84509672033874")
        #expect(try ExposureNotificationAdvertisement(advertisingData: other) == ad)
    }

    @Test func rejectsWithSpecificReasons() throws {
        #expect(throws: AdvertisementParseError.empty) { try ExposureNotificationAdvertisement(advertisingData: Data()) }
        #expect(throws: AdvertisementParseError.noExposureNotificationServiceData) {
            try ExposureNotificationAdvertisement(advertisingData: Data(hex: "02011a03036ffd"))
        }
        #expect(throws: AdvertisementParseError.truncatedStructure(offset: 7, declaredLength: 23, available: 22)) {
            try ExposureNotificationAdvertisement(advertisingData: Data(hex: "02011a03036ffd17166ffd8be6cd371c5c891604bfbe49df845096720338"))
        }
        #expect(throws: AdvertisementParseError.wrongServiceDataLength(expected: 20, actual: 19)) {
            try ExposureNotificationAdvertisement(advertisingData: Data(hex: "16166ffd8be6cd371c5c891604bfbe49df845096720338"))
        }
        let one = "17166ffd8be6cd371c5c891604bfbe49df84509672033874"
        #expect(throws: AdvertisementParseError.duplicateServiceData(offset: 24)) {
            try ExposureNotificationAdvertisement(advertisingData: Data(hex: one + one))
        }
        #expect(throws: AdvertisementParseError.tooLong(length: 1651, maximum: 1650)) {
            try ExposureNotificationAdvertisement(advertisingData: Data(count: 1651))
        }
    }

    @Test func everyTruncationOfAValidPayloadIsRejectedNotTrapped() throws {
        let full = ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData
        for n in 0..<full.count {
            #expect(throws: AdvertisementParseError.self) { try ExposureNotificationAdvertisement(advertisingData: full.prefix(n)) }
        }
    }

    @Test func metadataVersionsRoundTrip() throws {
        let v10 = BluetoothMetadata.v1_0(txPower: -30)
        #expect(v10.bytes.hexString == "40e20000")
        let v11 = BluetoothMetadata.v1_1(txPower: -25, calibrationConfidence: .high)
        #expect(v11.bytes.hexString == "5ce70000")
        #expect(try BluetoothMetadata(bytes: v11.bytes) == v11)
        #expect(try BluetoothMetadata(bytes: v10.bytes).calibrationConfidence == nil)
        #expect(BluetoothMetadata.v1_0(txPower: -60).isPlausible == false)
        #expect(BluetoothMetadata.v1_0(txPower: 21).isPlausible == false)
        #expect(try BluetoothMetadata(bytes: Data(hex: "80000000")).isPlausible == false) // major 2
    }
}
