import ENProtocol
import Foundation

/// Deterministic scan records numbered 1, 2, ... so a test can check, after a crash, that
/// every committed record reads back exactly (used by StoreStress, the tests and the bench).
public enum StressRecords {
    public static let baseTime: Double = 1_795_000_000

    /// Scan `number`: `number % 7` reports (some scans are empty), content derived from it.
    public static func scan(number n: Int, reports: Int? = nil) -> RecordedScan {
        let start = baseTime + Double(n) * 240
        let count = reports ?? n % 7
        var rng = SeededRandom(seed: UInt64(n))
        let sightings = (0..<count).map { i -> RecordedSighting in
            // try! cannot trap here: SeededRandom never throws and the sizes are the fixed ones.
            let rpi = try! RollingProximityIdentifier(bytes: rng.bytes(16))
            let aem = try! AssociatedEncryptedMetadata(bytes: rng.bytes(4))
            return RecordedSighting(time: start + Double(i) * 0.25, rpi: rpi, aem: aem, rssi: Int8(-40 - i % 50))
        }
        return RecordedScan(start: start, end: start + 4, sightings: sightings)
    }
}
