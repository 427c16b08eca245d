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

/// The store's schema and its migrations, and creating a new store whole.
extension NodeStore {
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
        guard fd >= 0 else { throw StoreError.database(code: 14 /* SQLITE_CANTOPEN */, message: "cannot create \(temporary): \(SystemCallError.lastReason)") }
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
        do throws(SystemCallError) { try AtomicFile.replace(path, with: temporary) } catch {
            throw StoreError.database(code: 14, message: "cannot rename \(temporary) to \(path): \(error.reason)")
        }
    }

    /// Whether `path` is the only entry of its directory besides key files (a new state directory).
    static func isAloneInDirectory(_ path: String) -> Bool {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        guard let dir = opendir(PathName.directory(of: path)) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if entryName == "." || entryName == ".." { continue }
            guard entryName == name || entryName.hasSuffix("key") else { return false }
        }
        return true
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
}
