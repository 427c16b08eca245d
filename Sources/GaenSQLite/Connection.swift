// Why gaend has its own SQLite layer instead of a well-kept library (GRDB.swift, which older
// gaend versions used): the daemon must import FoundationEssentials only (its footprint goal:
// idle RSS <= 20 MB, measured by scripts/measure-idle.sh). GRDB imports full Foundation (58 of
// its files), which pulls Foundation, CoreFoundation, FoundationInternationalization and ICU
// into gaend (measured: about 2.5 MiB of the idle daemon's resident pages before the link
// reordering, GRDB's own code 2.1 MiB more). The store needs a small part
// of SQLite: connections, prepared statements, transactions, result codes. This layer is that
// part, on the system libsqlite3, importing no Foundation at all.
import CSQLite3

/// One SQLite connection. Not thread-safe: use it from one thread at a time (it is opened in
/// SQLite's multi-thread mode); `ConnectionPool` shares connections between threads.
public final class Connection {
    public struct OpenOptions: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readOnly = OpenOptions(rawValue: SQLITE_OPEN_READONLY)
        public static let readWrite = OpenOptions(rawValue: SQLITE_OPEN_READWRITE)
        /// Create the file if it does not exist (with readWrite).
        public static let create = OpenOptions(rawValue: SQLITE_OPEN_CREATE)
        /// The path is an SQLite URI (`file:...?immutable=1`).
        public static let uri = OpenOptions(rawValue: SQLITE_OPEN_URI)
    }

    public enum TransactionKind: String, Sendable {
        /// Takes locks as statements need them (a read transaction: one consistent snapshot).
        case deferred = "DEFERRED"
        /// Takes the write lock at once: a write transaction never fails half-way for a lock.
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    public let path: String
    private var handle: OpaquePointer?
    /// Prepared statements by SQL, reused (reset and unbound after each use).
    private var cache: [String: Statement] = [:]
    private static let cacheLimit = 64

    public init(path: String, options: OpenOptions = [.readWrite, .create]) throws {
        self.path = path
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, options.rawValue | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError(connection: db, code: rc)
            sqlite3_close_v2(db)
            throw error
        }
        sqlite3_extended_result_codes(db, 1)
        handle = db
    }

    deinit {
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
    }

    /// Closes the connection (the last connection to a WAL database checkpoints it and removes
    /// the log). Idempotent.
    public func close() throws {
        guard let db = handle else { return }
        for s in cache.values { s.finalize() }
        cache.removeAll()
        let rc = sqlite3_close(db)
        guard rc == SQLITE_OK else { throw SQLiteError(connection: db, code: rc) }
        handle = nil
    }

    func open() throws -> OpaquePointer {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection to \(path) is closed") }
        return handle
    }

    /// Waits up to `milliseconds` for a lock another connection holds before failing with SQLITE_BUSY.
    public func setBusyTimeout(milliseconds: Int32) throws {
        let rc = sqlite3_busy_timeout(try open(), milliseconds)
        guard rc == SQLITE_OK else { throw SQLiteError(connection: handle, code: rc) }
    }

    /// Persistent WAL (SQLITE_FCNTL_PERSIST_WAL): when this connection closes the database last,
    /// it checkpoints the log and keeps it instead of deleting it (truncated to 0 bytes if
    /// `PRAGMA journal_size_limit` is set, as it is left otherwise). A read-only
    /// connection opening a WAL database whose log is gone creates the log (and -shm); with the
    /// log kept, it finds it and creates nothing.
    public func setPersistentWAL(_ on: Bool) throws {
        var flag: Int32 = on ? 1 : 0
        let rc = sqlite3_file_control(try open(), "main", SQLITE_FCNTL_PERSIST_WAL, &flag)
        guard rc == SQLITE_OK else { throw SQLiteError(connection: handle, code: rc) }
    }

    /// Frees the connection's unused cached pages (SQLite's `sqlite3_db_release_memory`):
    /// the next statement reads them again from the file (or the OS page cache).
    public func releaseMemory() {
        if let handle { _ = sqlite3_db_release_memory(handle) }
    }

    /// `wal_checkpoint(TRUNCATE)` with no busy wait (the timeout is set back to
    /// `restoringBusyTimeout` after): true when every frame was copied and the log truncated,
    /// false when a reader or writer held frames back (SQLITE_BUSY).
    public func checkpointTruncatingNow(restoringBusyTimeout: Int32) throws -> Bool {
        let db = try open()
        sqlite3_busy_timeout(db, 0)
        defer { sqlite3_busy_timeout(db, restoringBusyTimeout) }
        var log: Int32 = 0, copied: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, &log, &copied)
        if rc == SQLITE_BUSY { return false }
        guard rc == SQLITE_OK else { throw SQLiteError(connection: db, code: rc) }
        return true
    }

    // MARK: Statements

    /// A new prepared statement (one statement; trailing text other than spaces and `;` is an error).
    public func prepare(_ sql: String) throws -> Statement {
        let db = try open()
        var stmt: OpaquePointer?
        var trailing = false
        let rc = sql.withCString { text -> Int32 in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v2(db, text, -1, &stmt, &tail)
            if rc == SQLITE_OK, var t = tail {
                while t.pointee == 0x20 || t.pointee == 0x0A || t.pointee == 0x09 || t.pointee == 0x0D || t.pointee == 0x3B { t += 1 }
                trailing = t.pointee != 0
            }
            return rc
        }
        guard rc == SQLITE_OK else { throw SQLiteError(connection: db, code: rc, sql: sql) }
        guard let stmt else { throw SQLiteError(code: SQLITE_MISUSE, message: "no statement in the SQL", sql: sql) }
        guard !trailing else {
            sqlite3_finalize(stmt)
            throw SQLiteError(code: SQLITE_MISUSE, message: "more than one statement (use execute(script:))", sql: sql)
        }
        return Statement(stmt, connection: db, sql: sql)
    }

    /// A cached prepared statement for `sql`, or a new one when that one is in use (a query
    /// run inside another run of the same query).
    private func statement(_ sql: String) throws -> Statement {
        if let s = cache[sql], !s.inUse { return s }
        let s = try prepare(sql)
        if cache[sql] == nil {
            if cache.count >= Self.cacheLimit { for old in cache.values where !old.inUse { old.finalize() }; cache = cache.filter { $0.value.inUse } }
            cache[sql] = s
        }
        return s
    }

    /// Runs one statement with `arguments` bound, and `body` for each row it returns; the
    /// statement is reset and unbound afterwards, also when something throws.
    public func forEachRow(_ sql: String, _ arguments: [SQLValue] = [], _ body: (Row) throws -> Void) throws {
        let s = try statement(sql)
        s.inUse = true
        defer { s.inUse = false; s.reset() }
        try s.bind(arguments)
        while let row = try s.step() { try body(row) }
    }

    /// Runs one statement (INSERT, UPDATE, DELETE, a PRAGMA...) with `arguments` bound.
    public func execute(_ sql: String, _ arguments: [SQLValue] = []) throws {
        try forEachRow(sql, arguments) { _ in }
    }

    /// Runs several `;`-separated statements without arguments (a schema, say).
    public func execute(script sql: String) throws {
        let db = try open()
        var failure: SQLiteError?
        sql.withCString { text in
            var next: UnsafePointer<CChar>? = text
            while let start = next, start.pointee != 0 {
                var stmt: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(db, start, -1, &stmt, &tail)
                guard rc == SQLITE_OK else { failure = SQLiteError(connection: db, code: rc, sql: sql); return }
                next = tail
                guard let stmt else { continue } // only spaces or comments were left
                var step = sqlite3_step(stmt)
                while step == SQLITE_ROW { step = sqlite3_step(stmt) }
                if step != SQLITE_DONE { failure = SQLiteError(connection: db, code: step, sql: String(cString: sqlite3_sql(stmt))) }
                sqlite3_finalize(stmt)
                if failure != nil { return }
            }
        }
        if let failure { throw failure }
    }

    /// Every row `sql` returns, each made by `row`.
    public func fetchAll<T>(_ sql: String, _ arguments: [SQLValue] = [], _ row: (Row) throws -> T) throws -> [T] {
        var out: [T] = []
        try forEachRow(sql, arguments) { out.append(try row($0)) }
        return out
    }

    /// The first row `sql` returns, made by `row` (nil when there is none).
    public func fetchOne<T>(_ sql: String, _ arguments: [SQLValue] = [], _ row: (Row) throws -> T) throws -> T? {
        let s = try statement(sql)
        s.inUse = true
        defer { s.inUse = false; s.reset() }
        try s.bind(arguments)
        return try s.step().map(row)
    }

    /// The first column of the first row: nil when there is no row or the value is NULL.
    public func fetchValue(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue? {
        let v = try fetchOne(sql, arguments) { $0.value(0) }
        return v == .null ? nil : v
    }

    public func fetchInt64(_ sql: String, _ arguments: [SQLValue] = []) throws -> Int64? {
        try fetchOne(sql, arguments) { $0.isNull(0) ? nil : $0.int64(0) } ?? nil
    }

    public func fetchInt(_ sql: String, _ arguments: [SQLValue] = []) throws -> Int? {
        try fetchInt64(sql, arguments).map { Int($0) }
    }

    public func fetchDouble(_ sql: String, _ arguments: [SQLValue] = []) throws -> Double? {
        try fetchOne(sql, arguments) { $0.isNull(0) ? nil : $0.double(0) } ?? nil
    }

    public func fetchText(_ sql: String, _ arguments: [SQLValue] = []) throws -> String? {
        try fetchOne(sql, arguments) { $0.isNull(0) ? nil : $0.text(0) } ?? nil
    }

    public func fetchBlob(_ sql: String, _ arguments: [SQLValue] = []) throws -> [UInt8]? {
        try fetchOne(sql, arguments) { $0.isNull(0) ? nil : $0.blob(0) } ?? nil
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: committed if it returns, rolled back if it (or the
    /// commit) throws. Transactions do not nest.
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        try execute("BEGIN \(kind.rawValue) TRANSACTION")
        do {
            let result = try body()
            try execute("COMMIT TRANSACTION")
            return result
        } catch {
            // SQLite may already have rolled back (a full disk can do that); a failed commit
            // may leave the transaction open.
            if isInTransaction { try? execute("ROLLBACK TRANSACTION") }
            throw error
        }
    }

    /// Whether a transaction is open (SQLite is not in autocommit mode).
    public var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    public var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    // MARK: Schema

    /// Whether a table or view named `name` exists.
    public func tableExists(_ name: String) throws -> Bool {
        try fetchInt64("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE", [.text(name)]) != nil
    }

    /// The column names of a table or view, in order.
    public func columns(in table: String) throws -> [String] {
        try fetchAll("SELECT name FROM pragma_table_info(?)", [.text(table)]) { $0.text(0) }
    }
}
