import ENProtocol
import Foundation
import Testing
@testable import BLEDaemon
import HCIProtocol

@Suite("Scan record plaintext")
struct ScanBlobTests {
    @Test("random records round-trip exactly", arguments: 0..<20)
    func roundTrip(seed: Int) throws {
        var rng = SeededRandom(seed: UInt64(seed))
        let count = Int(rng.next() % 200)
        let sightings = try (0..<count).map { _ in
            RecordedSighting(time: Double(rng.next() % 2_000_000_000) + Double(rng.next() % 1000) / 1000,
                     rpi: try RollingProximityIdentifier(bytes: rng.bytes(16)),
                     aem: try AssociatedEncryptedMetadata(bytes: rng.bytes(4)),
                     rssi: Int8(truncatingIfNeeded: rng.next()))
        }
        let correction = Int(rng.next() % 201) - 100
        let blob = ScanBlob.encode(sightings, rssiCorrection: correction)
        #expect(blob.count == 6 + count * ScanBlob.reportSize)
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
        #expect(reason(Data([3, 0, 0, 0, 0, 0])) == "blob version 3, expected 1 or 2")
        #expect(reason(Data([2, 0, 0, 0, 0])) == "blob of 5 bytes is shorter than its 6-byte header")
        #expect(reason(good.dropLast()) == "blob declares 1 reports (35 bytes) but has 34 bytes")
        #expect(reason(Data([1, 0xff, 0xff, 0xff, 0xff])) == "blob declares 4294967295 reports (\(5 + 4_294_967_295 * 29) bytes) but has 5 bytes")
        // Every truncation of a valid blob is refused.
        for n in 0..<good.count { #expect(reason(good.prefix(n)) != nil) }
    }

    @Test("version 1 blobs, written before the scan's correction was kept, still read (correction unknown)")
    func version1() throws {
        let s = StressRecords.scan(number: 5).sightings[0]
        let v1 = ScanBlob.encode([s], rssiCorrection: nil)
        #expect(v1.first == 1 && v1.count == 5 + ScanBlob.reportSize)
        let back = try ScanBlob.decode(v1)
        #expect(back.sightings == [s] && back.rssiCorrection == nil)
    }
}

@Suite("Radio scan to stored scan")
struct RadioScanConversionTests {
    @Test("GAEN reports keep time, RPI, AEM and RSSI; other reports and addresses are not stored")
    func conversion() throws {
        let rpi = try RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
        let aem = try AssociatedEncryptedMetadata(hex: "01020304")
        let gaen = ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData
        let address = try BDAddress(string: "12:34:56:78:9A:BC")
        let reports = [
            TimedReport(time: 100.5, report: LEAdvertisingReport(address: address, addressType: .random, kind: .advNonconnInd, rssi: -61, data: [UInt8](gaen))),
            TimedReport(time: 101, report: LEAdvertisingReport(address: address, addressType: .random, kind: .advInd, rssi: -50, data: [0x02, 0x01, 0x06])),
        ]
        let stored = RecordedScan(ScanRecord(start: 100, end: 104, reports: reports), rssiCorrection: 4)
        #expect(stored == RecordedScan(start: 100, end: 104, sightings: [RecordedSighting(time: 100.5, rpi: rpi, aem: aem, rssi: -61)], rssiCorrection: 4))
        let dir = try TempStoreDir()
        let store = try dir.open()
        try store.recordScan(stored)
        #expect(try store.scans(from: 0, to: .infinity).map(\.record) == [stored])
    }
}
