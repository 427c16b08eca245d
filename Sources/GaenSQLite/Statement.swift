import CSQLite3

/// A prepared statement: bind values, step through rows, reset. Made by `Connection.prepare`;
/// used on the connection's thread.
public final class Statement {
    private var handle: OpaquePointer?
    private let connection: OpaquePointer
    public let sql: String
    /// Set while a query runs it (the connection's cache hands it out once at a time).
    var inUse = false

    init(_ handle: OpaquePointer, connection: OpaquePointer, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { finalize() }

    func finalize() {
        if let handle { sqlite3_finalize(handle) }
        handle = nil
    }

    private func live() throws -> OpaquePointer {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "statement is finalized", sql: sql) }
        return handle
    }

    public var parameterCount: Int { handle.map { Int(sqlite3_bind_parameter_count($0)) } ?? 0 }
    public var columnCount: Int { handle.map { Int(sqlite3_column_count($0)) } ?? 0 }
    public var columnNames: [String] {
        guard let handle else { return [] }
        return (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// Binds `values` to parameters 1...n (they must be exactly as many as the statement has).
    public func bind(_ values: [SQLValue]) throws {
        let stmt = try live()
        sqlite3_clear_bindings(stmt)
        guard values.count == Int(sqlite3_bind_parameter_count(stmt)) else {
            throw SQLiteError(code: SQLITE_RANGE, message: "\(values.count) values for \(sqlite3_bind_parameter_count(stmt)) parameters", sql: sql)
        }
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    /// Binds one value to parameter `index` (1-based).
    public func bind(_ value: SQLValue, at index: Int32) throws {
        let stmt = try live()
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(stmt, index)
        case .integer(let v): rc = sqlite3_bind_int64(stmt, index, v)
        case .real(let v): rc = sqlite3_bind_double(stmt, index, v)
        case .text(var v):
            // By length, not up to the first NUL (a Swift string may hold one).
            rc = v.isEmpty ? sqlite3_bind_text(stmt, index, "", 0, gaend_sqlite3_transient())
                : v.withUTF8 { $0.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(stmt, index, $0.baseAddress, Int32($0.count), gaend_sqlite3_transient()) } }
        case .blob(let v):
            // An empty blob is still a blob (a nil pointer would bind NULL).
            rc = v.isEmpty ? sqlite3_bind_zeroblob(stmt, index, 0)
                : v.withUnsafeBytes { sqlite3_bind_blob(stmt, index, $0.baseAddress, Int32($0.count), gaend_sqlite3_transient()) }
        }
        guard rc == SQLITE_OK else { throw SQLiteError(connection: connection, code: rc, sql: sql) }
    }

    /// The next row (valid until the next `step` or `reset`), or nil when the statement is done.
    public func step() throws -> Row? {
        let stmt = try live()
        switch sqlite3_step(stmt) {
        case SQLITE_ROW: return Row(stmt)
        case SQLITE_DONE: return nil
        case let rc: throw SQLiteError(connection: connection, code: rc, sql: sql)
        }
    }

    /// Back to before the first row, with no values bound.
    public func reset() {
        guard let handle else { return }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}

/// The row a statement is on. Valid only until the statement steps again or is reset: read
/// its columns inside the closure that receives it. Columns are numbered from 0.
public struct Row {
    public enum ColumnType: Sendable { case integer, real, text, blob, null }

    private let stmt: OpaquePointer

    init(_ stmt: OpaquePointer) { self.stmt = stmt }

    public var count: Int { Int(sqlite3_column_count(stmt)) }
    public func name(_ i: Int) -> String { String(cString: sqlite3_column_name(stmt, Int32(i))) }

    public func type(_ i: Int) -> ColumnType {
        switch sqlite3_column_type(stmt, Int32(i)) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    public func isNull(_ i: Int) -> Bool { sqlite3_column_type(stmt, Int32(i)) == SQLITE_NULL }
    /// SQLite's conversions apply: NULL reads as 0, a REAL is truncated.
    public func int64(_ i: Int) -> Int64 { sqlite3_column_int64(stmt, Int32(i)) }
    public func int(_ i: Int) -> Int { Int(int64(i)) }
    public func double(_ i: Int) -> Double { sqlite3_column_double(stmt, Int32(i)) }

    /// The column as text (NULL reads as "", numbers in SQLite's text form).
    public func text(_ i: Int) -> String {
        guard let p = sqlite3_column_text(stmt, Int32(i)) else { return "" }
        let n = Int(sqlite3_column_bytes(stmt, Int32(i)))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The column's bytes (NULL and an empty blob read as []).
    public func blob(_ i: Int) -> [UInt8] { withBlob(i) { Array($0) } }

    /// The column's bytes without a copy, valid inside `body` only.
    public func withBlob<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = sqlite3_column_blob(stmt, Int32(i))
        let n = Int(sqlite3_column_bytes(stmt, Int32(i)))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : p, count: n))
    }

    /// The column in its own storage class.
    public func value(_ i: Int) -> SQLValue {
        switch type(i) {
        case .integer: return .integer(int64(i))
        case .real: return .real(double(i))
        case .text: return .text(text(i))
        case .blob: return .blob(blob(i))
        case .null: return .null
        }
    }
}
