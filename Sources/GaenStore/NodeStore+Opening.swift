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

/// Opening the store's files, and what happens when they are found damaged: the key check,
/// the quick check, a damaged store set aside and replaced, the ledger reconciled.
extension NodeStore {
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

    /// The pool in use (reads take it without waiting for the executor, so a write in progress never holds them up).
    var currentPool: ConnectionPool { poolState.withLock { $0.pool } }


    /// Runs the quick check on a reader (writes go on beside it) and replaces the store if it
    /// finds damage. Called on the store's executor.
    func quickCheckOnExecutor(now: Double) throws {
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
    /// ledger (the day's key stays the same) and recording goes on. Called on the store's executor,
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
        setAsideOnExecutor = aside
        reportedRotten = []
        try reconcileOnExecutor(now: now, whileRunning: true)
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
            throw StoreError.database(code: 14, message: "cannot set the damaged store \(path) aside: \(SystemCallError.lastReason)")
        }
        for suffix in ["-wal", "-shm"] where access(path + suffix, F_OK) == 0 { rename(path + suffix, aside + suffix) }
        AtomicFile.syncDirectory(of: path)
        return aside
    }

    /// Brings store and ledger together at open: after a store set aside, a quarantine row
    /// says so and the fresh store's ids start over; otherwise every id the ledger says was
    /// committed and the store lacks is a lost record, one quarantine row each (the store's
    /// sequence moves past them, so they are never reused). Keys of days the ledger holds and
    /// the store never had (lost with a WAL, or with the store set aside) are put back; keys
    /// the store holds and the ledger lacks (a store older than its ledger) are added to it.
    func reconcileOnExecutor(now: Double, whileRunning: Bool) throws {
        var contents = ledger.contents
        let setAside = setAsideOnExecutor
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

    /// Records in the ledger the oldest ids after records were deleted (called on the store's
    /// executor, after the delete committed). Best effort: a read that fails leaves the last ones.
    func ledgerDeleted() {
        var c = ledger.contents
        guard let oldest = try? readOnce({ db in try Self.oldestIDs(db, sequences: c.sequences) }) else { return }
        c.oldest = oldest
        writeLedger(c)
    }

    /// Records in the ledger that `table` committed up to `id` (called on the store's executor).
    func ledgerCommitted(_ table: String, upTo id: Int64) {
        var c = ledger.contents
        guard id > c.sequences[table] ?? 0 else { return }
        c.sequences[table] = id
        writeLedger(c)
    }
}
