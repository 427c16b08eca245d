import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GaenSQLite
import HCIHost
import Logging
import PlatformSupport
import Synchronization

/// The scan records (one per scan, every report inside, sealed), for async callers: a write
/// with its fsync runs on the store's thread, never on the caller's.
package struct ScanStore: Sendable {
    let store: NodeStore

    /// See `NodeStore.recordScan(_:)`.
    @discardableResult
    package func record(_ scan: Scan) async throws -> Int64 { try await store.perform { try $0.recordScan(scan) } }

    /// See `NodeStore.scans(from:to:)`.
    package func scans(from: Double, to: Double) async throws -> [Scan] { try await store.perform { try $0.scans(from: from, to: to) } }

    /// Counts from the clear columns, without decrypting.
    package func counts() async throws -> StoreCounts {
        try await store.perform { let c = try $0.counts(); return StoreCounts(scans: c.scans, sightings: c.sightings, keys: c.keys) }
    }
}

/// What `ScanStore.counts()` gives.
package struct StoreCounts: Sendable, Equatable {
    package var scans: Int, sightings: Int, keys: Int
}

extension NodeStore {
    // MARK: Scans

    /// Records one scan (also an empty one). Scans that could not be written earlier because
    /// the disk was full are written first, in order. On a full disk the scan waits in memory
    /// and `StoreError.diskFull` is thrown; the caller keeps running (advertising goes on) and
    /// a later call or `flushPending()` writes it once space returns.
    @discardableResult
    package func recordScan(_ scan: Scan) throws -> Int64 {
        guard scan.start.isFinite, scan.end.isFinite, scan.end >= scan.start else {
            throw StoreError.invalidRecord(reason: "scan times must be finite with end >= start, got \(scan.start)...\(scan.end)")
        }
        guard scan.sightings.allSatisfy({ $0.time.isFinite }) else {
            throw StoreError.invalidRecord(reason: "a sighting time is not finite")
        }
        // A crowd's scan leaves megabytes of transient buffers (the radio's collector, the
        // blob, the sealed copy, SQLite's) free in glibc's arenas, which keeps them resident
        // unless asked: at rest after a report flood the node held 11-25 MB instead of 8.
        // Trimmed after every write, large scan or not: a large scan's own buffers are still
        // held by its caller during its write and are free only by the next one. A few
        // milliseconds once per scan.
        defer { Allocator.trim() }
        return try locked {
            let waiting = PendingScan(scan)
            pending.append(waiting)
            pendingBytes += waiting.bytes
            // Oldest first, but never the scan just added: the newest record is the one worth
            // keeping when the disk has been full for long.
            while pending.count > 1 && (pending.count > configuration.maximumPendingScans || pendingBytes > configuration.maximumPendingBytes) {
                let dropped = pending.removeFirst()
                pendingBytes -= dropped.bytes
                droppedWhileFull += 1
                droppedScans += 1
                droppedSightings += dropped.count
                if droppedWhileFull == 1 || droppedWhileFull.nonzeroBitCount == 1 {
                    // Logged at the first drop and then at powers of two, so a long outage does not flood the log.
                    logger.warning("disk full: dropped the oldest scan waiting in memory",
                                   metadata: ["store.droppedScans": "\(droppedScans)", "store.droppedSightings": "\(droppedSightings)",
                                              "store.pendingBytes": "\(pendingBytes)"])
                }
            }
            guard let id = try flushOnExecutor() else {
                throw StoreError.invalidRecord(reason: "scan was queued but not written") // unreachable: the queue held it
            }
            return id
        }
    }

    /// Writes the scans waiting for disk space. Returns how many were written.
    @discardableResult
    package func flushPending() throws -> Int {
        try locked {
            let before = pending.count
            _ = try flushOnExecutor()
            return before - pending.count
        }
    }

    /// Scans waiting in memory for disk space.
    package var pendingScanCount: Int { published.withLock { $0.losses.pendingScans } }

    /// A scan waiting for disk space: its clear columns and its encoded reports (the blob
    /// that is sealed when it is written).
    struct PendingScan {
        var start: Double
        var end: Double
        var count: Int
        var blob: Data

        init(_ scan: Scan) {
            start = scan.start
            end = scan.end
            count = scan.sightings.count
            blob = ScanBlob.encode(scan.sightings, rssiCorrection: scan.rssiCorrection)
        }

        /// Memory it takes: the blob and the fields around it.
        var bytes: Int { 96 + blob.count }
    }

    func flushOnExecutor() throws -> Int64? {
        var lastID: Int64?
        var written = 0
        defer { if let lastID { ledgerCommitted("scan", upTo: lastID) } }
        while let next = pending.first {
            do {
                lastID = try insertScan(next)
            } catch StoreError.diskFull {
                if !full {
                    full = true
                    logger.error("disk full: scan records wait in memory until space returns; advertising continues",
                                 metadata: ["store.pendingScans": "\(pending.count)"])
                }
                if written > 0 { enforceSizeBound() }
                throw StoreError.diskFull(pendingScans: pending.count)
            }
            pendingBytes -= pending.removeFirst().bytes
            written += 1
        }
        if full {
            full = false
            logger.notice("store writable again", metadata: ["store.flushedScans": "\(written)", "store.droppedScans": "\(droppedWhileFull)"])
            droppedWhileFull = 0
        }
        if written > 0 { enforceSizeBound() }
        return lastID
    }

    /// Whether the last write found the disk full (status: "storage error").
    package var isFull: Bool { published.withLock { $0.full } }

    func insertScan(_ scan: PendingScan) throws -> Int64 {
        try write { db in
            let id = try Self.nextID(db, table: "scan")
            let count = Int64(scan.count)
            let aad = Self.aad("scan", [id, Self.bits(scan.start), Self.bits(scan.end), count])
            try db.execute("INSERT INTO scan (id, start_time, end_time, report_count, sealed) VALUES (?, ?, ?, ?, ?)",
                           [.integer(id), .real(scan.start), .real(scan.end), .integer(count), .bytes(seal(scan.blob, aad: aad))])
            return id
        }
    }

    /// Scans that started in [from, to), oldest first, decrypted (matching and export). A scan
    /// that fails authentication or does not decode is quarantined and left out: one rotten
    /// record costs that record only.
    package func scans(from: Double, to: Double) throws -> [Scan] {
        try readSkippingRotten("scan", sql: """
            SELECT id, start_time, end_time, report_count, sealed FROM scan
            WHERE start_time >= ? AND start_time < ? AND \(Self.notQuarantined("scan")) ORDER BY start_time, id
            """, arguments: [.real(from), .real(to)], decode: decodeScan)
    }

    func decodeScan(_ row: Row) throws -> Scan {
        let id = row.int64(0), start = row.double(1), end = row.double(2)
        let count = row.int64(3), sealed = row.data(4)
        let plain = try open(sealed, aad: Self.aad("scan", [id, Self.bits(start), Self.bits(end), count]), table: "scan", id: id)
        let sightings: [Sighting], correction: Int?
        do { (sightings, correction) = try ScanBlob.decode(plain) } catch let r as ScanBlob.Reason {
            throw StoreError.corruptRecord(table: "scan", id: id, reason: r.text)
        }
        guard sightings.count == count else {
            throw StoreError.corruptRecord(table: "scan", id: id, reason: "\(sightings.count) reports, \(count) in the clear count")
        }
        return Scan(start: start, end: end, rssiCorrection: correction, sightings: sightings)
    }

    /// The reason a record is rotten, without the "store record ... is corrupt" framing.
    static func reason(_ error: any Error) -> String {
        if case StoreError.corruptRecord(_, _, let r) = error { return r }
        return "\(error)"
    }

    /// Counts from the clear columns (no decryption): for status properties.
    package func counts() throws -> (scans: Int, sightings: Int, keys: Int) {
        try read { db in
            let scans = try db.fetchInt("SELECT count(*) FROM scan") ?? 0
            let sightings = try db.fetchInt("SELECT coalesce(sum(report_count), 0) FROM scan") ?? 0
            let keys = try db.fetchInt("SELECT count(*) FROM tek") ?? 0
            return (scans, sightings, keys)
        }
    }
}
