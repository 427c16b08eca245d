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
#if canImport(Glibc)
import Glibc
#endif

/// Settings of the store (config file / command line).
package struct StoreConfiguration: Sendable {
    /// How much a commit must survive. `.full` (default) survives power loss: a board is
    /// often unplugged. `.normal` survives a crashed or killed process only.
    package enum Durability: String, Sendable { case full, normal }

    package var path: String
    /// Scans, results, markers and keys older than this many days are deleted (GAEN: 14).
    package var retentionDays: Int
    /// Bytes of live data the store may hold; beyond it the oldest scans are evicted with a
    /// warning. nil: no bound other than the disk.
    package var maximumBytes: Int64?
    package var durability: Durability
    /// Scan records kept in memory while the disk is full, oldest dropped beyond it
    /// (2016 = a week of the nominal schedule).
    package var maximumPendingScans: Int
    /// Bytes those waiting records may take (estimated from their report counts), oldest
    /// dropped beyond it: in continuous scanning a crowd makes big records, and a full disk
    /// must not turn into unbounded memory.
    package var maximumPendingBytes: Int
    /// Testing hook: SQLite's `max_page_count`, to make the store "full" without a full disk.
    var pageLimit: Int?
    /// Bytes provided key files may take (sealed export.bin), a budget of their own beside
    /// `maximumBytes`: a new file evicts the oldest key files, never a scan, and
    /// `maximumBytes` bounds everything else. 64 MiB: one call's files at most (ProvideLimits).
    package var keyFileBytes: Int64 = 64 << 20

    package init(path: String, retentionDays: Int = 14, maximumBytes: Int64? = 256 << 20,
                durability: Durability = .full, maximumPendingScans: Int = 2016, maximumPendingBytes: Int = 16 << 20) {
        self.path = path
        self.retentionDays = retentionDays
        self.maximumBytes = maximumBytes
        self.durability = durability
        self.maximumPendingScans = maximumPendingScans
        self.maximumPendingBytes = maximumPendingBytes
    }
}

/// What retention removed.
package struct RetentionResult: Equatable, Sendable {
    package var scans = 0, keys = 0, results = 0, markers = 0, keyFiles = 0
}

/// What was lost or set aside instead of stored: scans dropped from the full-disk queue and
/// records quarantined because they failed authentication. Counts since the store was opened,
/// except `quarantined`, which counts the quarantined records still in the store (a store set
/// aside counts every record it held).
package struct StoreLosses: Equatable, Sendable {
    package var droppedScans = 0
    package var droppedSightings = 0
    package var pendingScans = 0
    package var pendingBytes = 0
    package var quarantined = 0
    package init(droppedScans: Int = 0, droppedSightings: Int = 0, pendingScans: Int = 0, pendingBytes: Int = 0, quarantined: Int = 0) {
        self.droppedScans = droppedScans; self.droppedSightings = droppedSightings
        self.pendingScans = pendingScans; self.pendingBytes = pendingBytes; self.quarantined = quarantined
    }
}

/// A record that failed authentication or did not decode, set aside (see `NodeStore`); or a
/// whole store set aside (table `store`), with the number of records it held.
package struct QuarantinedRecord: Equatable, Sendable {
    package var table: String
    package var id: Int64
    package var reason: String
    package var detectedAt: Double
    /// Records this row stands for: 1, or for a store set aside the records it held.
    package var records: Int = 1
}

/// The node's encrypted store: TEKs (one per UTC day), scan records (one per scan, every
/// report inside), exposure results and markers, in SQLite (WAL) through GaenSQLite (our own
/// small layer: GRDB imported full Foundation, and the daemon imports FoundationEssentials
/// only, to keep its idle footprint small).
///
/// Every sensitive value is sealed with AES-256-GCM under the data key, with the row's
/// identity (table, id or day, and the clear columns) as associated data, so a blob moved to
/// another row or a clear column edited fails authentication. Only times, counts and schema
/// data are in the clear. See docs/store.md.
///
/// The connection owner: it holds the pool, the ledger, the quarantine and the full-disk
/// queue, and runs every statement on one thread of its own (`executor`, a serial executor),
/// so statements never run beside each other or on Swift's cooperative pool, and queue order
/// is write order. The areas of the store are small stores over it, each in its own file:
/// `KeyStore`, `ScanStore`, `KeyFileStore` (key files and results), `MarkerStore`,
/// `ClockMarkStore`; daemon code awaits them (`store.scanStore.record(...)`). The synchronous
/// methods hop to the same thread and wait: for benchmarks, tools and tests.
package final class NodeStore: @unchecked Sendable {
    package let configuration: StoreConfiguration
    let key: StoreKey
    /// The pool in use and its generation. The pool is replaced (on the store's executor) when the store
    /// is found damaged while running: see `replaceDamagedStore`.
    let poolState: Mutex<(pool: ConnectionPool, generation: Int)>
    let poolConfiguration: ConnectionPool.Configuration
    let logger: Logger
    /// The store's own thread: every statement runs there, in order (`locked`, `read`), so no
    /// caller can run one on Swift's cooperative pool or beside another. Async callers reach it
    /// through `perform` (the small stores: `keys`, `scans`, ...), which never blocks their thread.
    let executor: SerialThreadExecutor
    /// Scans waiting for disk space, already encoded: their memory is their bytes, so the
    /// queue's bound is a bound on memory (a report as a Swift value takes several heap
    /// allocations, about 200 bytes; encoded it is 35).
    var pending: [PendingScan] = []
    var pendingBytes = 0
    var droppedWhileFull = 0
    var droppedScans = 0
    var droppedSightings = 0
    var full = false
    /// Rotten records already logged (once each), also when the quarantine table could not be
    /// written (a full disk): reads skip them either way.
    var reportedRotten: Set<String> = []
    /// Rows in `quarantine`, kept in memory so status never queries for it.
    var quarantinedCount = 0
    /// What status reads (`losses()`, `isFull`), published after each store operation.
    let published = Mutex((losses: StoreLosses(), full: false, setAside: nil as (path: String, reason: String)?))

    static let keyCheckPlaintext = Data("gaend store key check v1".utf8)
    static let keyCheckAAD = Data("gaend/v1/store_meta/key_check".utf8)

    /// The store's ledger (keys of recent days, highest committed ids); touched only on the store's executor.
    var ledger: StoreLedger
    /// The ledger write failed (logged once until it works again).
    var ledgerFailing = false
    /// The last checkpoint failed (logged once until one works).
    var checkpointFailing = false
    /// The last damaged store this one replaced (at open or while running): where it was set
    /// aside, and why. Touched only on the store's executor; `setAside` reads the published copy.
    var setAsideOnExecutor: (path: String, reason: String)?
    package var setAside: (path: String, reason: String)? { published.withLock { $0.setAside } }

    /// Opens (or creates) the store. An existing store is first checked read-only against
    /// `key`, so a wrong key throws `StoreError.wrongKey` without writing a byte. A store that
    /// is structurally damaged (SQLite finds it malformed, truncated, or its key check value
    /// gone while the ledger opens under the key) is renamed aside, kept for recovery, and a
    /// fresh store takes its place, with the keys of recent days from the ledger. Commits the
    /// ledger records but the store lacks (a damaged or removed WAL after a crash) are counted
    /// as quarantined records and logged.
    package init(configuration: StoreConfiguration, key: StoreKey, logger: Logger = Logger(label: "gaend.store"),
                now: Double = Date().timeIntervalSince1970) throws {
        self.configuration = configuration
        self.key = key
        self.logger = logger
        // Opening runs on the store's thread too: every statement of this store runs there.
        let executor = SerialThreadExecutor(name: "gaend.store")
        self.executor = executor
        let opened: Opened
        do {
            opened = try executor.sync { try Self.openFiles(configuration: configuration, key: key, logger: logger, now: now) }
        } catch {
            executor.stop()
            throw error
        }
        poolState = Mutex((opened.pool, 0))
        poolConfiguration = opened.config
        setAsideOnExecutor = opened.aside
        lastQuickCheck = now
        ledger = opened.ledger
        do {
            try locked { try reconcileOnExecutor(now: now, whileRunning: false) }
        } catch {
            try? executor.sync { try opened.pool.close() }
            executor.stop()
            throw Self.mapped(error, pending: 0)
        }
    }

    /// When SQLite's quick check last ran (at open, then daily with retention; on the
    /// store's executor): damage in pages no write touches (the schema, an old scan) is found within a
    /// day rather than at the next start.
    var lastQuickCheck: Double
    static let quickCheckInterval: Double = 86_400

    /// Closes the database (checkpointing the WAL into the main file; the log stays, empty).
    /// Scans still waiting for disk space are written first; those that cannot be (the disk
    /// is still full) are counted as dropped and logged, never lost uncounted. Throws when the
    /// database does not close cleanly (the caller exits with an error).
    @discardableResult
    package func close() throws -> (droppedScans: Int, droppedSightings: Int) {
        let dropped = locked { () -> (Int, Int) in
            if !pending.isEmpty { _ = try? flushOnExecutor() }
            guard !pending.isEmpty else { return (0, 0) }
            let scans = pending.count, sightings = pending.reduce(0) { $0 + $1.count }
            droppedScans += scans
            droppedSightings += sightings
            pending = []
            pendingBytes = 0
            logger.error("stopping with scans still waiting for disk space: dropped",
                         metadata: ["store.droppedScans": "\(scans)", "store.droppedSightings": "\(sightings)",
                                    "store.droppedScansTotal": "\(droppedScans)"])
            return (scans, sightings)
        }
        defer { executor.stop() }
        do { try executor.sync { try currentPool.close() } } catch { throw Self.mapped(error, pending: 0) }
        return dropped
    }

    // MARK: Sealing

    func seal(_ plaintext: Data, aad: Data) throws -> Data {
        try AES256GCM.seal(plaintext, key: key.bytes, associatedData: aad, random: SecureRandom())
    }

    func open(_ sealed: Data, aad: Data, table: String, id: Int64) throws -> Data {
        do { return try AES256GCM.open(sealed, key: key.bytes, associatedData: aad) } catch {
            throw StoreError.corruptRecord(table: table, id: id, reason: "authentication failed")
        }
    }

    // MARK: Quarantine

    /// The records set aside: one per row, except a store set aside, whose row counts the
    /// records it held (`records`).
    static let quarantinedCountSQL = "SELECT coalesce(sum(records), 0) FROM quarantine"

    /// SQL excluding quarantined rows of `table` (its id column is `column`).
    static func notQuarantined(_ table: String, column: String = "id") -> String {
        "\(column) NOT IN (SELECT row_id FROM quarantine WHERE tbl = '\(table)')"
    }

    /// Sets rotten records aside: one row each in `quarantine` (reads skip them from then on),
    /// logged once. Never throws: a record that cannot even be quarantined (full disk) is
    /// skipped by the read that found it and found again by the next read.
    func quarantine(_ table: String, _ rotten: [(id: Int64, reason: String)], now: Double = Date().timeIntervalSince1970) {
        guard !rotten.isEmpty else { return }
        locked {
            do {
                try write { db in
                    for r in rotten {
                        try db.execute("INSERT OR IGNORE INTO quarantine (tbl, row_id, reason, detected_at) VALUES (?, ?, ?, ?)",
                                       [.text(table), .integer(r.id), .text(r.reason), .real(now)])
                    }
                    quarantinedCount = try db.fetchInt(Self.quarantinedCountSQL) ?? quarantinedCount
                }
            } catch {
                logger.error("cannot record quarantined records", metadata: ["store.error": "\(error)"])
            }
            for r in rotten where reportedRotten.insert("\(table)#\(r.id)").inserted {
                logger.error("store record quarantined: it fails authentication or does not decode; it is skipped, everything else is served",
                             metadata: ["store.table": "\(table)", "store.id": "\(r.id)", "store.reason": "\(r.reason)"])
            }
        }
    }

    /// Reads the rows `sql` selects from `table` (the SQL leaves out quarantined rows), decoding
    /// each: a row that fails is quarantined and left out, so one rotten record costs that
    /// record only.
    func readSkippingRotten<T>(_ table: String, idColumn: String = "id", sql: String,
                                       arguments: [SQLValue] = [],
                                       decode: (Row) throws -> T) throws -> [T] {
        var rotten: [(id: Int64, reason: String)] = []
        let found = try read { db in
            var found: [T] = []
            // The row id is the first column of every such query.
            try db.forEachRow(sql, arguments) { row in
                do { found.append(try decode(row)) } catch {
                    rotten.append((row.int64(0), Self.reason(error)))
                }
            }
            return found
        }
        quarantine(table, rotten)
        return found
    }

    /// The quarantined records still in the store, oldest detection first.
    package func quarantinedRecords() throws -> [QuarantinedRecord] {
        try read { db in
            try db.fetchAll("SELECT tbl, row_id, reason, detected_at, records FROM quarantine ORDER BY detected_at, tbl, row_id") {
                QuarantinedRecord(table: $0.text(0), id: $0.int64(1), reason: $0.text(2), detectedAt: $0.double(3), records: Int($0.int64(4)))
            }
        }
    }

    /// Drops and quarantine counts, for status and metrics.
    /// Read without waiting for a write in progress (a large scan's write and checkpoint can
    /// take seconds on a busy disk): the counts as the last store operation left them.
    package func losses() -> StoreLosses {
        published.withLock { $0.losses }
    }

    /// `close()`, awaited: the flush of waiting scans and the final checkpoint run on the
    /// store's thread.
    @discardableResult
    package func closing() async throws -> StoreLosses {
        _ = try await perform { try $0.close() }
        return losses()
    }

    /// Retention (see `applyRetention(now:)`), awaited.
    @discardableResult
    package func retain(now: Double) async throws -> RetentionResult { try await perform { try $0.applyRetention(now: now) } }

    /// Runs `body` on the store's thread and awaits it: the caller's thread (a cooperative
    /// one) goes on with other tasks meanwhile, however long the disk takes. The small stores
    /// below are made of these; the synchronous methods are for callers on threads of their
    /// own (benchmarks, tools, tests), which they block.
    package func perform<T: Sendable>(_ body: @escaping @Sendable (NodeStore) throws -> T) async throws -> T {
        try await executor.run { [self] in try body(self) }
    }

    /// The store's parts, each awaited from async code without blocking a thread.
    package var keyStore: KeyStore { KeyStore(store: self) }
    package var scanStore: ScanStore { ScanStore(store: self) }
    package var keyFileStore: KeyFileStore { KeyFileStore(store: self) }
    package var markerStore: MarkerStore { MarkerStore(store: self) }
    package var clockMarkStore: ClockMarkStore { ClockMarkStore(store: self) }

    /// Runs `body` on the store's thread (at once when already there), then publishes the
    /// counts status reads. Every statement of the store runs inside one of these or `read`.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try executor.sync {
            defer { publishOnExecutor() }
            return try body()
        }
    }

    func publishOnExecutor() {
        let losses = StoreLosses(droppedScans: droppedScans, droppedSightings: droppedSightings, pendingScans: pending.count,
                                 pendingBytes: pendingBytes, quarantined: quarantinedCount)
        let isFull = full, aside = setAsideOnExecutor
        published.withLock { $0 = (losses, isFull, aside) }
    }

    /// Associated data: a domain label, the table and the row's identifying clear columns.
    static func aad(_ table: String, _ fields: [Int64]) -> Data {
        var d = Data("gaend/v1/\(table)".utf8)
        for f in fields { withUnsafeBytes(of: f.littleEndian) { d.append(contentsOf: $0) } }
        return d
    }

    static func bits(_ v: Double) -> Int64 { Int64(bitPattern: v.bitPattern) }

    /// The id the next row of an AUTOINCREMENT table will get. It is part of the associated
    /// data, so it must be known before sealing; called inside the inserting transaction.
    static func nextID(_ db: Connection, table: String) throws -> Int64 {
        (try db.fetchInt64("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)]) ?? 0) + 1
    }

    // MARK: Errors

    /// SQLite's errors as the store's: a full disk (SQLITE_FULL) is `diskFull`, anything else
    /// (SQLITE_CORRUPT, an I/O error...) `database` with SQLite's extended code and message.
    static func mapped(_ error: any Error, pending: Int) -> any Error {
        guard let e = error as? SQLiteError else { return error }
        if e.isFull { return StoreError.diskFull(pendingScans: pending) }
        return StoreError.database(code: e.code, message: e.message)
    }

    /// Always called on the store's executor (it reads the pending queue's size). A store found
    /// structurally damaged is replaced by a fresh one and `body` runs again there once (its
    /// transaction was rolled back), so the record it writes lands in the fresh store.
    func write<T>(_ body: (Connection) throws -> T) throws -> T {
        let generation = poolGeneration
        do {
            return try writeOnce(body)
        } catch let e where Self.isDamage(e) {
            try replaceDamagedStore(after: e, failedOn: generation)
            return try writeOnce(body)
        }
    }

    func writeOnce<T>(_ body: (Connection) throws -> T) throws -> T {
        let pool = currentPool
        let result: T
        do { result = try pool.write(body) } catch let e as StoreError { throw e } catch { throw Self.mapped(error, pending: pending.count) }
        checkpointAfterCommit()
        pool.releaseWriterMemory()
        return result
    }

    /// Copies the commit into the main file and empties the log at once. A WAL frame with a
    /// bad checksum ends SQLite's recovery and silently drops every later commit, and an old
    /// frame replayed over a checkpointed page undoes it; with the log empty between writes,
    /// a crash leaves at most the commit in flight in it. A reader holding frames back keeps
    /// them until the next commit (the ledger detects a loss in that window).
    func checkpointAfterCommit() {
        if case .failure(let e) = currentPool.checkpointTruncating(), !checkpointFailing {
            checkpointFailing = true
            logger.warning("cannot checkpoint the store after a commit; the commit is in the write-ahead log",
                           metadata: ["store.error": "\(e)"])
        } else {
            checkpointFailing = false
        }
    }

    /// A read that finds the store structurally damaged replaces it (as a write does) and
    /// runs again on the fresh store.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try executor.sync {
            let generation = poolGeneration
            do {
                return try readOnce(body)
            } catch let e where Self.isDamage(e) {
                try locked { try replaceDamagedStore(after: e, failedOn: generation) }
                return try readOnce(body)
            }
        }
    }

    func readOnce<T>(_ body: (Connection) throws -> T) throws -> T {
        do { return try currentPool.read(body) } catch let e as StoreError { throw e } catch { throw Self.mapped(error, pending: 0) }
    }

    // MARK: Retention and size

    /// Deletes everything older than the retention period by its clear times, decrypting
    /// nothing. `now` must be a time that has held (`HeldTime.trustedNow`, docs/schedule.md),
    /// never a raw clock reading: a clock stepped weeks ahead must not wipe the store. Days
    /// whose keys it deletes stay in `key_day`, so no second key is ever made for them.
    @discardableResult
    package func applyRetention(now: Double) throws -> RetentionResult {
        let cutoff = now - Double(configuration.retentionDays) * 86_400
        let cutoffDay = UTCDay(unixSeconds: cutoff)
        return try locked {
            if abs(now - lastQuickCheck) >= Self.quickCheckInterval { try quickCheckOnExecutor(now: now) }
            let result = try write { db in
                var r = RetentionResult()
                try db.execute("DELETE FROM scan WHERE end_time < ?", [.real(cutoff)]); r.scans = db.changes
                try db.execute("DELETE FROM tek WHERE day < ?", [.int(cutoffDay.rawValue)]); r.keys = db.changes
                try db.execute("DELETE FROM exposure_result WHERE created_at < ?", [.real(cutoff)]); r.results = db.changes
                try db.execute("DELETE FROM marker WHERE time < ?", [.real(cutoff)]); r.markers = db.changes
                // A key matches sightings up to 12 intervals (2 h) after its validity; once that
                // is before the oldest kept sighting, its file can match nothing any more.
                try db.execute("DELETE FROM key_file WHERE valid_until < ?", [.real(cutoff - 7_200)]); r.keyFiles = db.changes
                try db.execute("""
                    DELETE FROM quarantine WHERE
                        (tbl = 'scan' AND row_id NOT IN (SELECT id FROM scan)) OR
                        (tbl = 'tek' AND row_id NOT IN (SELECT day FROM tek)) OR
                        (tbl = 'exposure_result' AND row_id NOT IN (SELECT id FROM exposure_result)) OR
                        (tbl = 'marker' AND row_id NOT IN (SELECT id FROM marker)) OR
                        (tbl = 'key_file' AND row_id NOT IN (SELECT id FROM key_file)) OR
                        -- Lost records and stores set aside: reported for a retention period.
                        (tbl NOT IN ('scan', 'tek', 'exposure_result', 'marker', 'key_file') AND detected_at < ?)
                    """, [.real(cutoff)])
                quarantinedCount = try db.fetchInt(Self.quarantinedCountSQL) ?? quarantinedCount
                return r
            }
            defer {
                var c = ledger.contents
                for day in c.keys.keys where day < cutoffDay.rawValue { c.keys[day] = nil }
                writeLedger(c)
                ledgerDeleted()
            }
            return result
        }
    }

    /// Bytes the store's files take on disk (database and write-ahead log), by stat alone:
    /// the status reads it without waiting for the store.
    package func fileBytes() -> Int64 {
        var total: Int64 = 0
        for path in [configuration.path, configuration.path + "-wal"] {
            var st = stat()
            if stat(path, &st) == 0 { total += Int64(st.st_size) }
        }
        return total
    }

    /// Bytes of live data: pages in use (not on the free list) times the page size.
    package func usedBytes() throws -> Int64 {
        try read { db in try Self.usedBytes(db) }
    }

    static func usedBytes(_ db: Connection) throws -> Int64 {
        let pageSize = try db.fetchInt64("PRAGMA page_size") ?? 4096
        let pages = try db.fetchInt64("PRAGMA page_count") ?? 0
        let free = try db.fetchInt64("PRAGMA freelist_count") ?? 0
        return (pages - free) * pageSize
    }

    /// Oldest-first eviction of scans while the live data exceeds `maximumBytes`.
    func enforceSizeBound() {
        guard let bound = configuration.maximumBytes else { return }
        do {
            let evicted: Int = try write { db in
                var evicted = 0
                // Key files have their own budget (`keyFileBytes`): they never make a scan go.
                while try Self.usedBytes(db) - Self.keyFileBytes(db) > bound {
                    let total = try db.fetchInt("SELECT count(*) FROM scan") ?? 0
                    guard total > 1 else { break } // keep the newest scan
                    let batch = max(1, total / 20)
                    try db.execute("DELETE FROM scan WHERE id IN (SELECT id FROM scan ORDER BY start_time, id LIMIT ?)",
                                   [.int(batch)])
                    evicted += db.changes
                }
                return evicted
            }
            if evicted > 0 {
                ledgerDeleted()
                logger.warning("store above its size bound: evicted the oldest scans",
                               metadata: ["store.evictedScans": "\(evicted)", "store.maximumBytes": "\(bound)"])
            }
        } catch {
            logger.error("size bound enforcement failed", metadata: ["store.error": "\(error)"])
        }
    }

    // MARK: Testing hooks

    /// Changes SQLite's page limit on the writer (simulates the disk filling or freeing).
    func setPageLimitForTesting(_ pages: Int) throws {
        try executor.sync { try currentPool.writeWithoutTransaction { db in _ = try db.fetchInt64("PRAGMA max_page_count = \(pages)") } }
    }

    func withWriterForTesting<T>(_ body: (Connection) throws -> T) throws -> T {
        try executor.sync { try currentPool.writeWithoutTransaction(body) }
    }
}

extension SQLValue {
    /// Bytes (a sealed value) as a blob.
    static func bytes(_ data: Data) -> SQLValue { .blob(Array(data)) }
}

extension Row {
    /// A blob column as Data (the sealed values).
    func data(_ i: Int) -> Data { withBlob(i) { Data($0) } }
}
