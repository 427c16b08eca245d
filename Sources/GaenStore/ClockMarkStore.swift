import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GaenSQLite
import Logging
import PlatformSupport

/// The clock's high-water mark (the latest wall time that has held), for async callers.
package struct ClockMarkStore: Sendable {
    let store: NodeStore

    package func highWaterMark() async throws -> Double? { try await store.perform { try $0.highWaterMark() } }

    /// Raises the mark (never lowers it).
    package func raise(to time: Double) async throws { try await store.perform { try $0.raiseHighWaterMark(to: time) } }
}

extension NodeStore {
    // MARK: Clock high-water mark

    /// The latest wall time that has held (nil in a new store).
    package func highWaterMark() throws -> Double? {
        try read { db in try db.fetchDouble("SELECT high_water FROM clock_mark WHERE id = 1") }
    }

    /// Raises the high-water mark to `time` (never lowers it).
    package func raiseHighWaterMark(to time: Double) throws {
        guard time.isFinite else { return }
        try locked {
            try write { db in
                try db.execute("""
                    INSERT INTO clock_mark (id, high_water) VALUES (1, ?)
                    ON CONFLICT(id) DO UPDATE SET high_water = max(high_water, excluded.high_water)
                    """, [.real(time)])
            }
        }
    }
}
