import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import HCIProtocol
import GaenStore

/// Deterministic scan records numbered 1, 2, ... so a test can check, after a crash, that
/// every committed record reads back exactly. Used by the tests, by StoreStress (the writer
/// the kill -9 test runs) and by GaenStoreBench's ingest benchmark, so that the ingest figures
/// are measured on the same records the durability tests write.
package enum StressRecords {
    package static let baseTime: Double = 1_795_000_000

    /// Scan `number`: `number % 7` reports (some scans are empty), content derived from it.
    package static func scan(number n: Int, reports: Int? = nil) -> Scan {
        let start = baseTime + Double(n) * 240
        let count = reports ?? n % 7
        var rng = SeededRandom(seed: UInt64(n))
        let sightings = (0..<count).map { i -> Sighting in
            // try! cannot trap here: SeededRandom never throws and the sizes are the fixed ones.
            let rpi = try! RollingProximityIdentifier(bytes: rng.bytes(16))
            let aem = try! AssociatedEncryptedMetadata(bytes: rng.bytes(4))
            return Sighting(time: start + Double(i) * 0.25, rpi: rpi, aem: aem, rssi: -40 - i % 50)
        }
        return Scan(start: start, end: start + 4, sightings: sightings)
    }
}

/// What the compatibility fixture store holds (Tests/BLEDaemonTests/Fixtures/store-grdb/): a
/// store written by the last GRDB-based gaend, which every later gaend must open unchanged
/// (scripts/gen-store-fixture.sh regenerates it from that release with `StoreStress --fixture`).
/// The TEKs are random; the generator writes them beside the store (teks.txt).
package enum StoreFixture {
    /// The fixture's data key (a test key, published with the fixture).
    package static let keyHex = "6761656e642073746f726520666978747572652074657374206b65792030312e"
    package static let firstDay = UTCDay(unixSeconds: StressRecords.baseTime)
    /// A day whose key retention deleted: `key_day` remembers it, so no second key is made.
    package static let retiredDay = firstDay.advanced(by: -20)
    package static let keyDays = [firstDay, firstDay.advanced(by: 1), firstDay.advanced(by: 2)]
    /// Scan 5's end time is edited behind the store's back (it fails authentication) and the
    /// store quarantines it when read.
    package static let tamperedScan: Int64 = 5
    package static let highWater = StressRecords.baseTime + 3 * 86_400

    package static var scans: [Scan] {
        var scans = (1...24).map { StressRecords.scan(number: $0) }
        // One scan with advertiser addresses and an RSSI correction (blob version 3's fields).
        var last = StressRecords.scan(number: 25, reports: 3)
        last.rssiCorrection = -7
        for i in last.sightings.indices {
            last.sightings[i].advertiser = BDAddress(littleEndian: [0x10 + UInt8(i), 0x22, 0x33, 0x44, 0x55, 0xC6])
            last.sightings[i].rssiCorrection = -7 // as the radio records it: the scan's correction on each sighting
        }
        scans.append(last)
        return scans
    }

    package static var markers: [Marker] {
        [Marker(time: StressRecords.baseTime + 100, label: "bus seat 3", distanceMeters: 1.5, note: "facing"),
         Marker(time: StressRecords.baseTime + 900, label: "away")]
    }

    package static let resultsTime = StressRecords.baseTime + 2_000
    package static var results: [(kind: String, day: UTCDay?, payload: Data)] {
        [("windows", firstDay, Data("window payload 1".utf8)), ("windows", nil, Data("window payload 2".utf8)),
         ("summaries", firstDay.advanced(by: 1), Data([0, 1, 2, 3, 255]))]
    }

    package static let keyFilesTime = StressRecords.baseTime + 3_000
    package static var keyFiles: [(exportBin: Data, validUntil: Double)] {
        [(Data("EK Export v1    first file".utf8), StressRecords.baseTime + 86_400),
         (Data((0..<300).map { UInt8($0 & 0xff) }), StressRecords.baseTime + 2 * 86_400)]
    }

    /// Writes the fixture's contents into `store` (a new store) and returns its TEKs.
    package static func write(to store: NodeStore) throws -> [(day: UTCDay, key: TemporaryExposureKey)] {
        _ = try store.key(for: retiredDay, now: StressRecords.baseTime - 20 * 86_400)
        _ = try store.applyRetention(now: StressRecords.baseTime)
        let keys = try keyDays.map { ($0, try store.key(for: $0, now: StressRecords.baseTime)) }
        for s in scans { try store.recordScan(s) }
        for m in markers { try store.addMarker(m) }
        for kind in ["windows", "summaries"] {
            try store.replaceExposureResults(kind: kind, with: results.filter { $0.kind == kind }.map { ($0.day, $0.payload) }, now: resultsTime)
        }
        try store.addKeyFiles(keyFiles, now: keyFilesTime)
        try store.raiseHighWaterMark(to: highWater)
        return keys
    }
}
