import CSQLite3

/// A failed SQLite call: SQLite's extended result code and its message (and the statement, if
/// any). Callers tell faults apart by `primaryCode` (the store maps SQLITE_FULL to a full
/// disk, SQLITE_NOTADB to a file that is not a store, SQLITE_CORRUPT to a damaged file).
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The extended result code (e.g. 2067 = SQLITE_CONSTRAINT_UNIQUE); `primaryCode` is its low byte.
    public var code: Int32
    public var message: String
    public var sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    public var primaryCode: Int32 { code & 0xff }

    public static let error: Int32 = SQLITE_ERROR
    public static let busy: Int32 = SQLITE_BUSY
    public static let readOnly: Int32 = SQLITE_READONLY
    public static let ioError: Int32 = SQLITE_IOERR
    public static let corrupt: Int32 = SQLITE_CORRUPT
    public static let full: Int32 = SQLITE_FULL
    public static let cantOpen: Int32 = SQLITE_CANTOPEN
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    public static let misuse: Int32 = SQLITE_MISUSE
    public static let range: Int32 = SQLITE_RANGE
    public static let notADatabase: Int32 = SQLITE_NOTADB

    /// The disk (or the database's max_page_count) is full.
    public var isFull: Bool { primaryCode == SQLITE_FULL }
    /// The file is damaged (SQLITE_CORRUPT) or is not an SQLite database at all (SQLITE_NOTADB).
    public var isCorrupt: Bool { primaryCode == SQLITE_CORRUPT }
    public var isNotADatabase: Bool { primaryCode == SQLITE_NOTADB }

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in \($0))" } ?? "")
    }

    /// The connection's last error (call right after the failing call, on the same thread).
    init(connection: OpaquePointer?, code: Int32, sql: String? = nil) {
        if let connection {
            self.init(code: sqlite3_extended_errcode(connection), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
            // sqlite3_errmsg describes the connection's last failure; a misuse or range error
            // returned by a bind call is not always recorded there.
            if self.primaryCode != code & 0xff { self = SQLiteError(code: code, message: String(cString: sqlite3_errstr(code)), sql: sql) }
        } else {
            self.init(code: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
        }
    }
}
