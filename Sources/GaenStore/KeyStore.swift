import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GaenSQLite
import Logging
import PlatformSupport

/// The node's daily keys (one TEK per UTC day, never a second one), for async callers: each
/// call runs on the store's thread and is awaited without holding the caller's.
package struct KeyStore: Sendable {
    let store: NodeStore

    /// See `NodeStore.key(for:now:)`.
    package func key(for day: UTCDay, now: Double) async throws -> TemporaryExposureKey {
        try await store.perform { try $0.key(for: day, now: now) }
    }

    /// See `NodeStore.keys(in:)`.
    package func keys(in range: ClosedRange<UTCDay>) async throws -> [(day: UTCDay, key: TemporaryExposureKey)] {
        try await store.perform { try $0.keys(in: range).map { Pair(day: $0.day, key: $0.key) } }.map { ($0.day, $0.key) }
    }

    struct Pair: Sendable { var day: UTCDay; var key: TemporaryExposureKey }
}

extension NodeStore {
    // MARK: Temporary exposure keys

    /// The TEK of `day`: the stored one, or a new one created and stored atomically. Never a
    /// second key for a day: the check and the insert are one transaction, `day` is the
    /// primary key, and a day whose key is gone (deleted by retention, or quarantined) is
    /// refused with `keyDayRetired`, because `key_day` remembers every day that had a key. If
    /// the disk is full, the oldest scans are evicted once to make room (a lost key is worse
    /// than a lost scan); if that fails too, `diskFull` is thrown and no key is handed out, so
    /// nothing unstored is ever advertised.
    package func key(for day: UTCDay, now: Double = Date().timeIntervalSince1970) throws -> TemporaryExposureKey {
        do {
            return try locked {
                do {
                    return try keyOnExecutor(for: day, now: now)
                } catch StoreError.diskFull {
                    logger.warning("disk full while storing the key of a new day; evicting the oldest scans", metadata: ["store.day": "\(day)"])
                    _ = try? write { db in try db.execute("DELETE FROM scan WHERE id IN (SELECT id FROM scan ORDER BY start_time LIMIT 32)") }
                    ledgerDeleted()
                    return try keyOnExecutor(for: day, now: now)
                }
            }
        } catch StoreError.corruptRecord(let table, let id, let reason) {
            quarantine(table, [(id, reason)])
            throw StoreError.corruptRecord(table: table, id: id, reason: reason)
        }
    }

    func keyOnExecutor(for day: UTCDay, now: Double) throws -> TemporaryExposureKey {
        try write { db in
            let aad = Self.aad("tek", [Int64(day.rawValue)])
            if let sealed = try db.fetchOne("SELECT sealed FROM tek WHERE day = ?", [.int(day.rawValue)], { $0.data(0) }) {
                return try TemporaryExposureKey(bytes: open(sealed, aad: aad, table: "tek", id: Int64(day.rawValue)))
            }
            if try db.fetchInt64("SELECT 1 FROM key_day WHERE day = ?", [.int(day.rawValue)]) != nil {
                throw StoreError.keyDayRetired(day: day.rawValue)
            }
            // The ledger first: a key it holds is the day's key even if this commit is lost
            // (a damaged WAL, a full disk), so a later call hands out the same key.
            let tek: TemporaryExposureKey
            if let kept = ledger.contents.keys[day.rawValue] {
                tek = try TemporaryExposureKey(bytes: kept)
            } else {
                var random = SecureRandom()
                tek = try TemporaryExposureKey.generate(using: &random)
                var c = ledger.contents
                c.keys[day.rawValue] = tek.bytes
                writeLedger(c)
            }
            try db.execute("INSERT INTO tek (day, created_at, sealed) VALUES (?, ?, ?)",
                           [.int(day.rawValue), .real(now), .bytes(seal(tek.bytes, aad: aad))])
            try db.execute("INSERT INTO key_day (day, created_at) VALUES (?, ?)", [.int(day.rawValue), .real(now)])
            return tek
        }
    }

    /// The stored keys of days in `range`, oldest first (no key is created). A key that fails
    /// authentication is quarantined and left out.
    package func keys(in range: ClosedRange<UTCDay>) throws -> [(day: UTCDay, key: TemporaryExposureKey)] {
        try readSkippingRotten("tek", idColumn: "day",
                               sql: "SELECT day, sealed FROM tek WHERE day BETWEEN ? AND ? AND \(Self.notQuarantined("tek", column: "day")) ORDER BY day",
                               arguments: [.int(range.lowerBound.rawValue), .int(range.upperBound.rawValue)]) { row in
            let day = UTCDay(Int32(truncatingIfNeeded: row.int64(0)))
            let bytes = try open(row.data(1), aad: Self.aad("tek", [Int64(day.rawValue)]), table: "tek", id: Int64(day.rawValue))
            return (day, try TemporaryExposureKey(bytes: bytes))
        }
    }
}
