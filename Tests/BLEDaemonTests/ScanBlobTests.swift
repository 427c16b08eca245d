import ENProtocol
import Foundation
@testable import HCIHost
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
import HCIProtocol
@testable import GaenStore

@Suite("Scan record plaintext")
struct ScanBlobTests {
    @Test("random records round-trip exactly", arguments: 0..<20)
    func roundTrip(seed: Int) throws {
        var rng = SeededRandom(seed: UInt64(seed))
        let count = Int(rng.next() % 200)
        let correction: Int? = seed % 5 == 0 ? nil : Int(rng.next() % 201) - 100
        // As the radio records them: each sighting carries its scan's correction.
        let sightings = try (0..<count).map { _ in
            Sighting(time: Double(rng.next() % 2_000_000_000) + Double(rng.next() % 1000) / 1000,
                     rpi: try RollingProximityIdentifier(bytes: rng.bytes(16)),
                     aem: try AssociatedEncryptedMetadata(bytes: rng.bytes(4)),
                     rssi: Int(Int8(truncatingIfNeeded: rng.next())), rssiCorrection: correction ?? 0,
                     address: rng.next() % 4 == 0 ? nil : BDAddress(littleEndian: [UInt8](try rng.bytes(5)) + [0x3F]).sightingAddress)
        }
        let blob = ScanBlob.encode(sightings, rssiCorrection: correction)
        #expect(blob.first == 3 && blob.count == 7 + count * ScanBlob.reportSize(version: 3))
        let back = try ScanBlob.decode(blob)
        #expect(back.sightings == sightings && back.rssiCorrection == correction)
    }

    @Test("bad plaintext is refused with the reason, never trapped on")
    func badInput() throws {
        let good = ScanBlob.encode([StressRecords.scan(number: 5).sightings[0]], rssiCorrection: -7)
        func reason(_ d: Data) -> String? {
            do { _ = try ScanBlob.decode(d); return nil } catch let r as ScanBlob.Reason { return r.text } catch { return "\(error)" }
        }
        #expect(reason(Data()) == "blob of 0 bytes is shorter than its 5-byte header")
        #expect(reason(Data([4, 0, 0, 0, 0, 0])) == "blob version 4, expected 1, 2 or 3")
        #expect(reason(Data([2, 0, 0, 0, 0])) == "blob of 5 bytes is shorter than its 6-byte header")
        #expect(reason(Data([3, 0, 0, 0, 0, 0])) == "blob of 6 bytes is shorter than its 7-byte header")
        #expect(reason(Data([3, 0, 0, 0, 0, 2, 0])) == "blob flags 0x2 has unknown bits")
        #expect(reason(good.dropLast()) == "blob declares 1 reports (42 bytes) but has 41 bytes")
        #expect(reason(Data([1, 0xff, 0xff, 0xff, 0xff])) == "blob declares 4294967295 reports (\(5 + 4_294_967_295 * 29) bytes) but has 5 bytes")
        // Every truncation of a valid blob is refused.
        for n in 0..<good.count { #expect(reason(good.prefix(n)) != nil) }
    }

    @Test("version 1 and 2 blobs, written before the correction and the address were kept, still read")
    func olderVersions() throws {
        var s = StressRecords.scan(number: 5).sightings[0]
        s.advertiser = try BDAddress(string: "12:34:56:78:9A:BC")
        s.rssiCorrection = -3
        var withoutAddress = s
        withoutAddress.address = nil
        var withoutCorrection = withoutAddress
        withoutCorrection.rssiCorrection = 0
        let v1 = ScanBlob.encode([s], rssiCorrection: -3, version: 1)
        #expect(v1.first == 1 && v1.count == 5 + ScanBlob.reportSize(version: 1))
        let back1 = try ScanBlob.decode(v1)
        #expect(back1.sightings == [withoutCorrection] && back1.rssiCorrection == nil)
        let v2 = ScanBlob.encode([s], rssiCorrection: -3, version: 2)
        #expect(v2.first == 2 && v2.count == 6 + ScanBlob.reportSize(version: 2))
        let back2 = try ScanBlob.decode(v2)
        #expect(back2.sightings == [withoutAddress] && back2.rssiCorrection == -3)
        let v3 = try ScanBlob.decode(ScanBlob.encode([s], rssiCorrection: -3))
        #expect(v3.sightings == [s] && v3.rssiCorrection == -3)
    }
}

@Suite("Radio scan to stored scan")
struct RadioScanConversionTests {
    @Test("GAEN reports keep time, RPI, AEM, RSSI and the advertiser's address; other reports are no sightings")
    func conversion() throws {
        let rpi = try RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
        let aem = try AssociatedEncryptedMetadata(hex: "01020304")
        let gaen = ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData
        let address = try BDAddress(string: "12:34:56:78:9A:BC")
        let sighting = try #require(Sighting(report: LEAdvertisingReport(address: address, addressType: .random, kind: .advNonconnInd, rssi: -61, data: [UInt8](gaen)), time: 100.5))
        #expect(Sighting(report: LEAdvertisingReport(address: address, addressType: .random, kind: .advInd, rssi: -50, data: [0x02, 0x01, 0x06]), time: 101) == nil)
        #expect(sighting == Sighting(time: 100.5, rpi: rpi, aem: aem, rssi: -61, address: 0x1234_5678_9ABC))
        #expect(sighting.advertiser == address && sighting.addressText == "12:34:56:78:9A:BC")
        var corrected = sighting
        corrected.rssiCorrection = 4
        let stored = Scan(start: 100, end: 104, rssiCorrection: 4, sightings: [corrected])
        let dir = try TempStoreDir()
        let store = try dir.open()
        try store.recordScan(stored)
        #expect(try store.scans(from: 0, to: .infinity) == [stored])
    }
}
