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
    /// The pool in use and its generation. The pool is replaced (under `lock`) when the store
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

    /// The store's ledger (keys of recent days, highest committed ids); guarded by `lock`.
    var ledger: StoreLedger
    /// The ledger write failed (logged once until it works again).
    var ledgerFailing = false
    /// The last checkpoint failed (logged once until one works).
    var checkpointFailing = false
    /// The last damaged store this one replaced (at open or while running): where it was set
    /// aside, and why. Guarded by `lock`; `setAside` reads the published copy.
    var setAsideLocked: (path: String, reason: String)?
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
        setAsideLocked = opened.aside
        lastQuickCheck = now
        ledger = opened.ledger
        do {
            try locked { try reconcileLocked(now: now, whileRunning: false) }
        } catch {
            try? executor.sync { try opened.pool.close() }
            executor.stop()
            throw Self.mapped(error, pending: 0)
        }
    }

    /// What `openFiles` found and opened.
    struct Opened {
        var pool: ConnectionPool
        var config: ConnectionPool.Configuration
        var aside: (path: String, reason: String)?
        var ledger: StoreLedger
    }

    /// The files' part of opening: the ledger, the key check, damage found at open (set aside),
    /// a new store created whole, the pool opened and checked.
    static func openFiles(configuration: StoreConfiguration, key: StoreKey, logger: Logger, now: Double) throws -> Opened {
        let path = configuration.path
        var ledger = StoreLedger(storePath: path, key: key, sync: configuration.durability == .full)
        let ledgerRead = ledger.read()
        var ledgerOpens = false
        switch ledgerRead {
        case .valid(let c, let g):
            ledger.adopt(c, generation: g)
            ledgerOpens = true
        case .damaged(let why):
            logger.error("the store's ledger is damaged: a gap in the store cannot be detected this time; it is written anew",
                         metadata: ["store.ledger": "\(ledger.path)", "store.reason": "\(why)"])
        case .wrongKey, .absent:
            break
        }
        var st = stat()
        let exists = stat(path, &st) == 0
        let size = exists ? Int(st.st_size) : 0
        // gaend creates its store atomically (below), so an empty file is not one of its
        // stores: a truncated copy, a failed restore or a lost file system write. Opening it
        // as new would silently start over; only a state directory holding nothing else is
        // taken as new.
        if exists && size == 0 && !Self.isAloneInDirectory(path) { throw StoreError.emptyStoreFile(path: path) }
        var damage: String?
        if size > 0 {
            do {
                try Self.verifyKey(path: path, key: key)
            } catch StoreError.wrongKey(let p) {
                // The check value is one sealed blob: if the ledger opens under this key, the
                // key is right and the blob is damaged.
                guard ledgerOpens else { throw StoreError.wrongKey(path: p) }
                damage = "its key check value does not open under the key the ledger opens with"
            } catch StoreError.notAStore(let p, let reason) {
                // A foreign file stays refused; with our ledger beside it, or with our own
                // table left without its row, it is a damaged store of ours.
                guard ledgerOpens || reason == "no key check value" else { throw StoreError.notAStore(path: p, reason: reason) }
                damage = reason
            } catch let e where Self.isDamage(e) {
                damage = "\(e)"
            }
        }
        if case .wrongKey = ledgerRead, damage != nil || size == 0 {
            // Nothing proves the key right: refuse, as a wrong key always is.
            throw StoreError.wrongKey(path: ledger.path)
        }
        var aside: (path: String, reason: String)?
        if let damage {
            aside = (try Self.setAside(path, now: now), damage)
            try Self.createAtomically(path: path, key: key)
        } else if size == 0 {
            try Self.createAtomically(path: path, key: key)
        }
        var config = ConnectionPool.Configuration(path: path)
        config.releaseReaderMemory = true
        let durability = configuration.durability
        let pageLimit = configuration.pageLimit
        config.prepareWriter = { db in
            try db.execute("PRAGMA foreign_keys = ON")
            // The log stays (empty) after close: the read-only key check at the next start then
            // finds it instead of creating files, so a refused start (wrong key) leaves the
            // state directory exactly as it was.
            try db.setPersistentWAL(true)
            // Set after WAL is on, last, so that nothing of the setup overrides it (GRDB's pool,
            // which older gaend versions used, set NORMAL after its setup: `.full` was NORMAL).
            try db.execute("PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            // Every commit is checkpointed at once (`checkpointAfterCommit`); this bound is
            // for the case that cannot (a long read holding frames back).
            try db.execute("PRAGMA wal_autocheckpoint = 256")
            try db.execute("PRAGMA journal_size_limit = 1048576")
            if let pageLimit { try db.execute("PRAGMA max_page_count = \(pageLimit)") }
        }
        do {
            do {
                let pool = try Self.openChecked(config: config, key: key, path: path)
                return Opened(pool: pool, config: config, aside: aside, ledger: ledger)
            } catch let e where aside == nil && Self.isDamage(e) {
                aside = (try Self.setAside(path, now: now), Self.damageText(e))
                try Self.createAtomically(path: path, key: key)
                let pool = try Self.openChecked(config: config, key: key, path: path)
                return Opened(pool: pool, config: config, aside: aside, ledger: ledger)
            }
        } catch let e as StoreError {
            throw e
        } catch {
            throw Self.mapped(error, pending: 0)
        }
    }

    /// The pool in use (reads take it without `lock`, so a write in progress never holds them up).
    var currentPool: ConnectionPool { poolState.withLock { $0.pool } }

    /// When SQLite's quick check last ran (at open, then daily with retention; guarded by
    /// `lock`): damage in pages no write touches (the schema, an old scan) is found within a
    /// day rather than at the next start.
    var lastQuickCheck: Double
    static let quickCheckInterval: Double = 86_400

    /// Runs the quick check on a reader (writes go on beside it) and replaces the store if it
    /// finds damage. Called with `lock` held.
    func quickCheckLocked(now: Double) throws {
        let generation = poolGeneration
        let found: String
        do {
            found = try readOnce { db in try db.fetchText("PRAGMA quick_check(1)") } ?? ""
        } catch let e where Self.isDamage(e) {
            try replaceDamagedStore(after: e, failedOn: generation, now: now)
            return
        }
        lastQuickCheck = now
        if found != "ok" {
            try replaceDamagedStore(after: StoreDamage(reason: "SQLite's quick check: \(found)"), failedOn: generation, now: now)
        }
    }
    /// Bumped each time a damaged store is replaced while running: an operation that failed
    /// on the old store retries once on the new one, and two that failed together replace it once.
    var poolGeneration: Int { poolState.withLock { $0.generation } }

    /// Sets a store found damaged while running aside and opens a fresh one in its place,
    /// exactly as at open: the damaged files are kept for recovery, a quarantine row and a
    /// critical journal line say where and why, the keys of recent days come back from the
    /// ledger (the day's key stays the same) and recording goes on. Called with `lock` held,
    /// after an operation on generation `failedOn` found `error`. Throws when the fresh store
    /// cannot be made (the caller's operation then fails as before and its scan stays queued).
    func replaceDamagedStore(after error: any Error, failedOn generation: Int,
                                     now: Double = Date().timeIntervalSince1970) throws {
        guard generation == poolGeneration else { return } // another operation replaced it already
        let path = configuration.path
        let old = currentPool
        try? old.close()
        let aside = (path: try Self.setAside(path, now: now), reason: "found while running: " + Self.damageText(error))
        try Self.createAtomically(path: path, key: key)
        let fresh: ConnectionPool
        do { fresh = try Self.openChecked(config: poolConfiguration, key: key, path: path) } catch {
            throw Self.mapped(error, pending: pending.count)
        }
        poolState.withLock { $0 = (fresh, $0.generation + 1) }
        setAsideLocked = aside
        reportedRotten = []
        try reconcileLocked(now: now, whileRunning: true)
    }

    /// Opens the pool, refuses a newer schema, migrates, and runs SQLite's quick check: a
    /// structural fault found now sets the store aside instead of failing every write later.
    static func openChecked(config: ConnectionPool.Configuration, key: StoreKey, path: String) throws -> ConnectionPool {
        let pool = try ConnectionPool(configuration: config)
        do {
            let migrator = Self.migrator(key: key)
            // Refuse a newer schema before touching it; then apply what this version adds.
            let unknown = try pool.read { db in try migrator.unknownIdentifiers(db) }
            if !unknown.isEmpty { throw StoreError.newerSchema(path: path, unknownMigrations: unknown) }
            let check = try pool.read { db in try db.fetchText("PRAGMA quick_check(1)") } ?? ""
            if check != "ok" { throw StoreDamage(reason: "SQLite's quick check: \(check)") }
            try pool.writeWithoutTransaction { db in _ = try migrator.migrate(db) }
            return pool
        } catch {
            try? pool.close()
            throw error
        }
    }

    /// What the quick check found (a store open otherwise).
    struct StoreDamage: Error, CustomStringConvertible { var reason: String; var description: String { reason } }

    /// Whether `error` says the file is structurally damaged (malformed, not a database any
    /// more): not a wrong key, not a lock, not a permission.
    static func isDamage(_ error: any Error) -> Bool {
        if error is StoreDamage { return true }
        if let e = error as? SQLiteError { return e.isCorrupt || e.isNotADatabase }
        if case StoreError.database(let code, _) = error { return code & 0xff == 11 || code & 0xff == 26 }
        return false
    }

    static func damageText(_ error: any Error) -> String {
        if let e = error as? SQLiteError { return "SQLite error \(e.code): \(e.message)" }
        return "\(error)"
    }

    /// Renames the store (and its log and shared memory, so the pair opens together) to
    /// `<store>.damaged-<UTC time>`, kept for recovery. Returns the new name.
    static func setAside(_ path: String, now: Double) throws -> String {
        var t = time_t(now.isFinite ? now : 0)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let stamp = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
        var aside = "\(path).damaged-\(stamp)"
        var n = 1
        while access(aside, F_OK) == 0 { n += 1; aside = "\(path).damaged-\(stamp)-\(n)" }
        guard rename(path, aside) == 0 else {
            throw StoreError.database(code: 14, message: "cannot set the damaged store \(path) aside: \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm"] where access(path + suffix, F_OK) == 0 { rename(path + suffix, aside + suffix) }
        let dirFD = Glibc.open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 { fsync(dirFD); Glibc.close(dirFD) }
        return aside
    }

    /// Brings store and ledger together at open: after a store set aside, a quarantine row
    /// says so and the fresh store's ids start over; otherwise every id the ledger says was
    /// committed and the store lacks is a lost record, one quarantine row each (the store's
    /// sequence moves past them, so they are never reused). Keys of days the ledger holds and
    /// the store never had (lost with a WAL, or with the store set aside) are put back; keys
    /// the store holds and the ledger lacks (a store older than its ledger) are added to it.
    func reconcileLocked(now: Double, whileRunning: Bool) throws {
        var contents = ledger.contents
        let setAside = setAsideLocked
        // What the store set aside held, before the ledger's sequences start over.
        let held = setAside.map { Self.recordsHeld(setAside: $0.path, ledger: contents) }
        let result = try {
            try writeOnce { db -> (lost: [String: Int64], restored: [Int32]) in
                var lost: [String: Int64] = [:]
                if let setAside, let held {
                    try db.execute("INSERT OR IGNORE INTO quarantine (tbl, row_id, reason, detected_at, records) VALUES ('store', ?, ?, ?, ?)",
                                   [.integer(Int64(now)), .text("damaged store set aside as \(setAside.path): \(setAside.reason); \(held.text)"),
                                    .real(now), .integer(Int64(held.records))])
                    contents.sequences = [:]
                } else {
                    for table in StoreLedger.tables {
                        let stored = try db.fetchInt64("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)]) ?? 0
                        let committed = contents.sequences[table] ?? 0
                        guard committed > stored else { contents.sequences[table] = stored; continue }
                        for id in (stored + 1)...committed {
                            try db.execute("INSERT OR IGNORE INTO quarantine (tbl, row_id, reason, detected_at) VALUES (?, ?, ?, ?)",
                                           [.text("lost-\(table)"), .integer(id),
                                            .text("committed (the ledger says so) but missing after the store was opened: a damaged or removed write-ahead log"),
                                            .real(now)])
                        }
                        if try db.fetchInt64("SELECT 1 FROM sqlite_sequence WHERE name = ?", [.text(table)]) != nil {
                            try db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", [.integer(committed), .text(table)])
                        } else {
                            try db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(table), .integer(committed)])
                        }
                        lost[table] = committed - stored
                    }
                }
                contents.oldest = try Self.oldestIDs(db, sequences: contents.sequences)
                var restored: [Int32] = []
                for (day, bytes) in contents.keys.sorted(by: { $0.key < $1.key }) {
                    if try db.fetchInt64("SELECT 1 FROM tek WHERE day = ?", [.int(day)]) != nil { continue }
                    if try db.fetchInt64("SELECT 1 FROM key_day WHERE day = ?", [.int(day)]) != nil { continue }
                    try db.execute("INSERT INTO tek (day, created_at, sealed) VALUES (?, ?, ?)",
                                   [.int(day), .real(now), .bytes(seal(bytes, aad: Self.aad("tek", [Int64(day)])))])
                    try db.execute("INSERT INTO key_day (day, created_at) VALUES (?, ?)", [.int(day), .real(now)])
                    restored.append(day)
                }
                let newest = contents.keys.keys.max() ?? Int32.min
                let cutoff = newest == Int32.min ? Int32.min : newest - Int32(clamping: configuration.retentionDays + 1)
                for (day, sealed) in try db.fetchAll("SELECT day, sealed FROM tek WHERE day >= ?", [.int(cutoff)], { (Int32(truncatingIfNeeded: $0.int64(0)), $0.data(1)) })
                where contents.keys[day] == nil {
                    // A rotten stored key stays the quarantine's business.
                    if let bytes = try? AES256GCM.open(sealed, key: key.bytes, associatedData: Self.aad("tek", [Int64(day)])) { contents.keys[day] = bytes }
                }
                quarantinedCount = try db.fetchInt(Self.quarantinedCountSQL) ?? 0
                return (lost, restored)
            }
        }()
        if let setAside, let held, whileRunning {
            logger.critical("the store became damaged while gaend runs: set aside (kept for recovery) and replaced by a fresh store; the day's key comes from the ledger, recording goes on",
                            metadata: ["store.setAside": "\(setAside.path)", "store.reason": "\(setAside.reason)",
                                       "store.setAsideRecords": "\(held.records)", "store.held": "\(held.text)"])
        } else if let setAside, let held {
            logger.critical("the store is damaged: set aside (kept for recovery) and replaced by a fresh store; the day's key comes from the ledger",
                            metadata: ["store.setAside": "\(setAside.path)", "store.reason": "\(setAside.reason)",
                                       "store.setAsideRecords": "\(held.records)", "store.held": "\(held.text)"])
        }
        for (table, n) in result.lost.sorted(by: { $0.key < $1.key }) where n > 0 {
            logger.error("the store lost committed records: the ledger recorded them, the store does not hold them (a damaged or removed write-ahead log after a crash?); counted as quarantined records",
                         metadata: ["store.table": "\(table)", "store.lostRecords": "\(n)"])
        }
        if !result.restored.isEmpty {
            logger.warning("keys missing from the store were restored from the ledger (no day gets a second key)",
                           metadata: ["store.days": "\(result.restored.map(String.init).joined(separator: ","))"])
        }
        writeLedger(contents)
    }

    /// What a store set aside held: per ledger table (scans, key files, markers), the rows its
    /// file still counts (read as it was left: read-only and immutable, nothing is written
    /// beside the copy kept for recovery), else, where the damage hides them, what the ledger
    /// says was committed and not yet deleted. `records` is their sum, or 1 when neither can
    /// tell (the store itself, as before).
    static func recordsHeld(setAside path: String, ledger: StoreLedger.Contents) -> (records: Int, text: String) {
        var counted: [String: Int] = [:]
        if let db = try? Connection(path: immutableURI(path), options: [.readOnly, .uri]) {
            for table in StoreLedger.tables {
                if let n = try? db.fetchInt("SELECT count(*) FROM \(table)") { counted[table] = n }
            }
            try? db.close()
        }
        var parts: [String] = [], records = 0, known = false
        for table in StoreLedger.tables {
            let name = ["scan": "scans", "key_file": "key files", "marker": "markers"][table] ?? table
            if let n = counted[table] {
                parts.append("\(n) \(name)")
                records += n; known = true
            } else if let n = ledger.held(table) {
                parts.append("\(n) \(name) (by the ledger)")
                records += n; known = true
            } else {
                parts.append("\(name) unknown")
            }
        }
        return (known ? records : 1, "it held " + parts.joined(separator: ", "))
    }

    /// An SQLite URI that opens `path` as immutable: no lock, no log, no shared memory file.
    static func immutableURI(_ path: String) -> String {
        var out = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%\(hex[Int(byte >> 4)])\(hex[Int(byte & 0xF)])"
            }
        }
        return out + "?immutable=1"
    }

    /// Writes the ledger; a failure is logged (once until it works again), never thrown: the
    /// store itself holds the data, the ledger only guards it.
    func writeLedger(_ contents: StoreLedger.Contents) {
        guard contents != ledger.contents || ledger.generation == 0 else { return }
        do {
            try ledger.write(contents)
            if ledgerFailing {
                ledgerFailing = false
                logger.notice("the store's ledger is written again")
            }
        } catch {
            if !ledgerFailing {
                ledgerFailing = true
                logger.error("cannot write the store's ledger: a loss of committed records in the store would go undetected",
                             metadata: ["store.error": "\(error)"])
            }
        }
    }

    /// The lowest id each ledger table still holds, or the next id where it holds none.
    static func oldestIDs(_ db: Connection, sequences: [String: Int64]) throws -> [String: Int64] {
        var out: [String: Int64] = [:]
        for table in StoreLedger.tables {
            out[table] = try db.fetchInt64("SELECT min(id) FROM \(table)") ?? ((sequences[table] ?? 0) + 1)
        }
        return out
    }

    /// Records in the ledger the oldest ids after records were deleted (called with `lock`
    /// held, after the delete committed). Best effort: a read that fails leaves the last ones.
    func ledgerDeleted() {
        var c = ledger.contents
        guard let oldest = try? readOnce({ db in try Self.oldestIDs(db, sequences: c.sequences) }) else { return }
        c.oldest = oldest
        writeLedger(c)
    }

    /// Records in the ledger that `table` committed up to `id` (called with `lock` held).
    func ledgerCommitted(_ table: String, upTo id: Int64) {
        var c = ledger.contents
        guard id > c.sequences[table] ?? 0 else { return }
        c.sequences[table] = id
        writeLedger(c)
    }

    /// Schema, versioned in GRDB's migrator table (grdb_migrations: stores written by the
    /// GRDB-based gaend versions open unchanged). Add migrations, never edit one that has shipped.
    static func migrator(key: StoreKey) -> Migrator {
        var m = Migrator(table: "grdb_migrations")
        m.register("v1") { db in
            try db.execute(script: """
                CREATE TABLE store_meta (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    created_at REAL NOT NULL,
                    key_check BLOB NOT NULL);
                -- One key per UTC day: the primary key makes a second key for a day impossible.
                CREATE TABLE tek (
                    day INTEGER PRIMARY KEY,
                    created_at REAL NOT NULL,
                    sealed BLOB NOT NULL);
                CREATE TABLE scan (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    start_time REAL NOT NULL,
                    end_time REAL NOT NULL CHECK (end_time >= start_time),
                    report_count INTEGER NOT NULL CHECK (report_count >= 0),
                    sealed BLOB NOT NULL);
                CREATE INDEX scan_by_start ON scan(start_time);
                CREATE TABLE exposure_result (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    day INTEGER,
                    sealed BLOB NOT NULL);
                CREATE INDEX exposure_result_by_kind ON exposure_result(kind, created_at);
                CREATE TABLE marker (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    time REAL NOT NULL,
                    sealed BLOB NOT NULL);
                CREATE INDEX marker_by_time ON marker(time);
                """)
            let check = try AES256GCM.seal(keyCheckPlaintext, key: key.bytes, associatedData: keyCheckAAD, random: SecureRandom())
            try db.execute("INSERT INTO store_meta (id, created_at, key_check) VALUES (1, ?, ?)",
                           [.real(Date().timeIntervalSince1970), .bytes(check)])
        }
        m.register("v2-quarantine-key-days-clock") { db in
            try db.execute(script: """
                -- Records that failed authentication or did not decode: skipped by every read,
                -- kept for inspection until retention deletes the row itself.
                CREATE TABLE quarantine (
                    tbl TEXT NOT NULL,
                    row_id INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    detected_at REAL NOT NULL,
                    PRIMARY KEY (tbl, row_id));
                -- Every UTC day that ever had a key. Retention deletes keys, never these, so a
                -- clock stepped back into a day whose key is gone cannot make a second key.
                CREATE TABLE key_day (
                    day INTEGER PRIMARY KEY,
                    created_at REAL NOT NULL);
                INSERT INTO key_day (day, created_at) SELECT day, created_at FROM tek;
                -- The latest wall time that has held (docs/schedule.md): retention never runs
                -- ahead of it.
                CREATE TABLE clock_mark (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    high_water REAL NOT NULL);
                """)
        }
        m.register("v3-key-files") { db in
            try db.execute(script: """
                -- Provided key files (export.bin, sealed), in the order provided. valid_until
                -- (clear, like every time here) is the end of the newest key's validity:
                -- retention drops a file once none of its keys can match a kept sighting.
                CREATE TABLE key_file (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    provided_at REAL NOT NULL,
                    valid_until REAL NOT NULL,
                    sealed BLOB NOT NULL);
                """)
            // Files kept as exposure results before: re-sealed here. Their keys' validity was
            // not recorded; a key file's keys end by the day after it was stored, so that is
            // taken as their end (created_at was re-stamped at every call: at least that late).
            let old = try db.fetchAll("SELECT id, created_at, day, sealed FROM exposure_result WHERE kind = 'key-file' ORDER BY id") { row in
                (id: row.int64(0), createdAt: row.double(1), day: row.isNull(2) ? nil : UTCDay(Int32(truncatingIfNeeded: row.int64(2))), sealed: row.data(3))
            }
            for (id, createdAt, day, sealed) in old {
                guard let payload = try? AES256GCM.open(sealed, key: key.bytes, associatedData: resultAAD(id: id, kind: "key-file", createdAt: createdAt, day: day))
                else { continue } // rotten: dropped with the old row
                let newID = try nextID(db, table: "key_file")
                let validUntil = createdAt + 86_400
                try db.execute("INSERT INTO key_file (id, provided_at, valid_until, sealed) VALUES (?, ?, ?, ?)",
                               [.integer(newID), .real(createdAt), .real(validUntil),
                                .bytes(try AES256GCM.seal(payload, key: key.bytes, associatedData: keyFileAAD(id: newID, providedAt: createdAt, validUntil: validUntil),
                                                          random: SecureRandom()))])
            }
            try db.execute("DELETE FROM exposure_result WHERE kind = 'key-file'")
        }
        m.register("v4-quarantine-records") { db in
            // A store set aside is one row that stands for every record it held: counted as
            // one, a damaged store that took 22 scans along said 1 (issue 29).
            try db.execute("ALTER TABLE quarantine ADD COLUMN records INTEGER NOT NULL DEFAULT 1")
        }
        return m
    }

    /// Creates a new store under a temporary name, with its schema and key check, and renames it
    /// into place: a store path holds either nothing or a whole store, never an empty file.
    static func createAtomically(path: String, key: StoreKey) throws {
        let temporary = path + ".creating"
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temporary + suffix) }
        // SQLite would create the file with the umask's mode; the store is private.
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.database(code: 14 /* SQLITE_CANTOPEN */, message: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        Glibc.close(fd)
        do {
            let db = try Connection(path: temporary, options: [.readWrite])
            do {
                try db.execute("PRAGMA foreign_keys = ON")
                try migrator(key: key).migrate(db)
            } catch {
                try? db.close()
                throw error
            }
            try db.close()
        } catch {
            unlink(temporary)
            throw mapped(error, pending: 0)
        }
        let fileFD = Glibc.open(temporary, O_RDONLY | O_CLOEXEC)
        if fileFD >= 0 { fsync(fileFD); Glibc.close(fileFD) }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw StoreError.database(code: 14, message: "cannot rename \(temporary) to \(path): \(reason)")
        }
        let dirFD = Glibc.open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 { fsync(dirFD); Glibc.close(dirFD) }
    }

    /// Whether `path` is the only entry of its directory besides key files (a new state directory).
    static func isAloneInDirectory(_ path: String) -> Bool {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        guard let dir = opendir(directory(of: path)) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if entryName == "." || entryName == ".." { continue }
            guard entryName == name || entryName.hasSuffix("key") else { return false }
        }
        return true
    }

    /// The directory part of `path` ("." for a bare name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Read-only check of the key check value: wrong key, foreign file and non-SQLite file
    /// each give their own error, and nothing is written (a read-only connection never
    /// checkpoints or recovers into the main file).
    static func verifyKey(path: String, key: StoreKey) throws {
        let sealed: Data?
        do {
            let db = try Connection(path: path, options: [.readOnly])
            defer { try? db.close() }
            try db.setBusyTimeout(milliseconds: 5_000)
            sealed = try db.transaction(.deferred) { () -> Data? in
                // A store killed while being created holds no table yet: it is new, not foreign.
                if try db.fetchInt("SELECT count(*) FROM sqlite_master") == 0 { return nil }
                guard try db.tableExists("store_meta") else {
                    throw StoreError.notAStore(path: path, reason: "no store_meta table")
                }
                guard let check = try db.fetchOne("SELECT key_check FROM store_meta WHERE id = 1", [], { $0.data(0) }) else {
                    throw StoreError.notAStore(path: path, reason: "no key check value")
                }
                return check
            }
        } catch let e as StoreError {
            throw e
        } catch let e as SQLiteError where e.isNotADatabase {
            throw StoreError.notAStore(path: path, reason: "not an SQLite database")
        } catch {
            throw mapped(error, pending: 0)
        }
        guard let sealed else { return }
        do {
            let plain = try AES256GCM.open(sealed, key: key.bytes, associatedData: keyCheckAAD)
            guard plain == keyCheckPlaintext else { throw StoreError.wrongKey(path: path) }
        } catch CryptoError.authenticationFailed {
            throw StoreError.wrongKey(path: path)
        }
    }

    /// Closes the database (checkpointing the WAL into the main file; the log stays, empty).
    /// Scans still waiting for disk space are written first; those that cannot be (the disk
    /// is still full) are counted as dropped and logged, never lost uncounted. Throws when the
    /// database does not close cleanly (the caller exits with an error).
    @discardableResult
    package func close() throws -> (droppedScans: Int, droppedSightings: Int) {
        let dropped = locked { () -> (Int, Int) in
            if !pending.isEmpty { _ = try? flushLocked() }
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
            defer { publishLocked() }
            return try body()
        }
    }

    func publishLocked() {
        let losses = StoreLosses(droppedScans: droppedScans, droppedSightings: droppedSightings, pendingScans: pending.count,
                                 pendingBytes: pendingBytes, quarantined: quarantinedCount)
        let isFull = full, aside = setAsideLocked
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

    /// Always called with `lock` held (it reads the pending queue's size). A store found
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
            if abs(now - lastQuickCheck) >= Self.quickCheckInterval { try quickCheckLocked(now: now) }
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
