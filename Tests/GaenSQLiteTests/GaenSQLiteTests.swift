import Foundation
import GaenSQLite
import Testing

/// A throwaway directory for database files, removed at deinit.
final class TempDir {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("gaen-sqlite-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> String { path + "/" + name }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

@Suite("SQLite layer")
struct GaenSQLiteTests {
    @Test("every storage class binds and reads back exactly, through typed reads and values")
    func bindsRoundTrip() throws {
        let dir = try TempDir()
        let db = try Connection(path: dir.file("t.sqlite"))
        try db.execute(script: "CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, n BLOB);")
        let rows: [[SQLValue]] = [
            [1, .integer(.max), .real(-0.5), "plain", .blob([0, 1, 2, 255]), .null],
            [2, .integer(.min), .real(1e300), "ünïcödé ✓ and a \0 inside", .blob([]), .null],
            [3, 0, .real(Double.leastNonzeroMagnitude), "", .blob(Array(repeating: 0xAB, count: 10_000)), .null],
        ]
        for r in rows { try db.execute("INSERT INTO t (id, i, r, s, b, n) VALUES (?, ?, ?, ?, ?, ?)", r) }
        #expect(db.changes == 1 && db.lastInsertRowID == 3)
        let back = try db.fetchAll("SELECT id, i, r, s, b, n FROM t ORDER BY id") { row in (0..<6).map { row.value($0) } }
        #expect(back == rows)
        let typed = try db.fetchAll("SELECT i, r, s, b, n FROM t ORDER BY id") { row in
            (row.int64(0), row.double(1), row.text(2), row.blob(3), row.isNull(4), row.type(3), row.type(4))
        }
        #expect(typed.map(\.0) == [.max, .min, 0])
        #expect(typed.map(\.1) == [-0.5, 1e300, Double.leastNonzeroMagnitude])
        #expect(typed.map(\.2) == ["plain", "ünïcödé ✓ and a \0 inside", ""])
        #expect(typed.map(\.3) == [[0, 1, 2, 255], [], Array(repeating: 0xAB, count: 10_000)])
        #expect(typed.allSatisfy { $0.4 && $0.5 == .blob && $0.6 == .null })
        // An empty blob is a blob, not NULL.
        #expect(try db.fetchInt64("SELECT count(*) FROM t WHERE b IS NOT NULL AND typeof(b) = 'blob'") == 3)
        #expect(try db.fetchInt64("SELECT i FROM t WHERE id = ?", [2]) == .min)
        #expect(try db.fetchDouble("SELECT r FROM t WHERE id = ?", [1]) == -0.5)
        #expect(try db.fetchText("SELECT s FROM t WHERE id = ?", [3]) == "")
        #expect(try db.fetchBlob("SELECT b FROM t WHERE id = ?", [1]) == [0, 1, 2, 255])
        #expect(try db.fetchInt64("SELECT n FROM t WHERE id = 1") == nil)
        #expect(try db.fetchInt64("SELECT i FROM t WHERE id = 99") == nil)
        #expect(try db.columns(in: "t") == ["id", "i", "r", "s", "b", "n"])
        #expect(try db.tableExists("t") && !db.tableExists("u"))
        // A prepared statement reused with new binds; the wrong number of values is refused.
        do {
            let s = try db.prepare("SELECT s FROM t WHERE id = ?")
            for id in [3, 1] as [Int64] {
                try s.bind([.integer(id)])
                #expect(try s.step().map { $0.text(0) } == (id == 1 ? "plain" : ""))
                s.reset()
            }
            #expect(s.columnNames == ["s"] && s.parameterCount == 1)
            let range = try #require(throws: SQLiteError.self) { try s.bind([1, 2]) }
            #expect(range.primaryCode == SQLiteError.range)
            // A connection with a statement of its own still alive does not close.
            let busy = try #require(throws: SQLiteError.self) { try db.close() }
            #expect(busy.primaryCode == SQLiteError.busy)
        }
        #expect(throws: SQLiteError.self) { _ = try db.prepare("SELECT 1; SELECT 2") }
        try db.close()
        #expect(throws: SQLiteError.self) { try db.execute("SELECT 1") }
    }

    @Test("a transaction commits what its body did, and rolls all of it back when the body throws")
    func transactionRollback() throws {
        struct Stop: Error {}
        let dir = try TempDir()
        let db = try Connection(path: dir.file("t.sqlite"))
        try db.execute(script: "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL);")
        try db.transaction { for k in 1...3 { try db.execute("INSERT INTO t VALUES (?, 'a')", [.int(k)]) } }
        #expect(throws: Stop.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (4, 'b')")
                try db.execute("UPDATE t SET v = 'changed'")
                #expect(db.changes == 4 && db.isInTransaction)
                throw Stop()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.fetchAll("SELECT k, v FROM t ORDER BY k") { "\($0.int(0))\($0.text(1))" } == ["1a", "2a", "3a"])
        // A failing statement (a constraint) rolls back the statements before it too.
        let e = try #require(throws: SQLiteError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (5, 'c')")
                try db.execute("INSERT INTO t VALUES (1, 'duplicate')")
            }
        }
        #expect(e.primaryCode == SQLiteError.constraint && e.code == 1555 /* SQLITE_CONSTRAINT_PRIMARYKEY */)
        #expect(e.message.contains("UNIQUE constraint failed") && e.sql == "INSERT INTO t VALUES (1, 'duplicate')")
        #expect(try db.fetchInt64("SELECT count(*) FROM t") == 3)
        try db.execute("DELETE FROM t WHERE k >= 2")
        #expect(db.changes == 2)
    }

    @Test("a full database is SQLITE_FULL; the transaction is rolled back and writes resume once there is room")
    func fullIsNamed() throws {
        let dir = try TempDir()
        let db = try Connection(path: dir.file("t.sqlite"))
        try db.execute(script: "CREATE TABLE t (b BLOB);")
        let pages = try #require(try db.fetchInt64("PRAGMA page_count"))
        _ = try db.fetchInt64("PRAGMA max_page_count = \(pages + 2)")
        let e = try #require(throws: SQLiteError.self) {
            try db.transaction { for _ in 0..<10 { try db.execute("INSERT INTO t VALUES (?)", [.blob(Array(repeating: 7, count: 3000))]) } }
        }
        #expect(e.isFull && e.primaryCode == 13 && !e.isCorrupt)
        #expect(!db.isInTransaction)
        #expect(try db.fetchInt64("SELECT count(*) FROM t") == 0)
        _ = try db.fetchInt64("PRAGMA max_page_count = 100000")
        try db.transaction { for _ in 0..<10 { try db.execute("INSERT INTO t VALUES (?)", [.blob(Array(repeating: 7, count: 3000))]) } }
        #expect(try db.fetchInt64("SELECT count(*) FROM t") == 10)
    }

    @Test("a file that is not a database is SQLITE_NOTADB; a damaged one SQLITE_CORRUPT")
    func notADatabaseAndCorrupt() throws {
        let dir = try TempDir()
        let text = dir.file("text.sqlite")
        try Data(String(repeating: "not a database, only some text. ", count: 200).utf8).write(to: URL(fileURLWithPath: text))
        let notDB = try #require(throws: SQLiteError.self) {
            _ = try Connection(path: text, options: [.readOnly]).fetchInt64("SELECT count(*) FROM sqlite_master")
        }
        #expect(notDB.isNotADatabase && notDB.code == 26 && !notDB.isCorrupt)

        let path = dir.file("damaged.sqlite")
        let db = try Connection(path: path)
        try db.execute(script: "PRAGMA page_size = 4096; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t(v);")
        try db.transaction { for i in 0..<2000 { try db.execute("INSERT INTO t (v) VALUES (?)", [.text("value \(i) " + String(repeating: "x", count: 40))]) } }
        let pages = try #require(try db.fetchInt64("PRAGMA page_count"))
        try db.close()
        // Garbage over every page but the first (the header and schema stay readable).
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for p in 1..<Int(pages) { for i in 0..<64 { bytes[p * 4096 + i] = 0xEE } }
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = try Connection(path: path, options: [.readOnly])
        let corrupt = try #require(throws: SQLiteError.self) { _ = try damaged.fetchAll("SELECT v FROM t ORDER BY id") { $0.text(0) } }
        #expect(corrupt.isCorrupt && corrupt.primaryCode == 11, "\(corrupt)")
    }

    @Test("the pool reads a consistent snapshot while the writer holds an open write transaction, without waiting")
    func poolReadsBesideWriter() throws {
        let dir = try TempDir()
        let path = dir.file("p.sqlite")
        try Connection(path: path).execute(script: "CREATE TABLE t (k INTEGER PRIMARY KEY);")
        var config = ConnectionPool.Configuration(path: path)
        config.prepareWriter = { try $0.execute("PRAGMA synchronous = FULL") }
        let pool = try ConnectionPool(configuration: config)
        #expect(try pool.writeWithoutTransaction { try $0.fetchInt64("PRAGMA synchronous") } == 2)
        #expect(try pool.writeWithoutTransaction { try $0.fetchText("PRAGMA journal_mode") } == "wal")
        try pool.write { try $0.execute("INSERT INTO t VALUES (1)") }
        let start = ContinuousClock.now
        let seenInside = try pool.write { db -> Int64? in
            try db.execute("INSERT INTO t VALUES (2)")
            return try pool.read { try $0.fetchInt64("SELECT count(*) FROM t") }
        }
        #expect(seenInside == 1)
        #expect(ContinuousClock.now - start < .seconds(2)) // the busy timeout is 5 s
        #expect(try pool.read { try $0.fetchInt64("SELECT count(*) FROM t") } == 2)
        // Readers refuse to write.
        let e = try #require(throws: SQLiteError.self) { try pool.read { try $0.execute("INSERT INTO t VALUES (3)") } }
        #expect(e.primaryCode == SQLiteError.readOnly)
        // Reads from many threads at once, beside writes.
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for j in 0..<20 {
                if i == 0 { try? pool.write { try $0.execute("INSERT INTO t VALUES (?)", [.int(100 + j)]) } }
                else { #expect((try? pool.read { try $0.fetchInt64("SELECT count(*) FROM t") }).flatMap { $0 }.map { $0 >= 2 } == true) }
            }
        }
        #expect(try pool.read { try $0.fetchInt64("SELECT count(*) FROM t") } == 22)
        try pool.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal")) // checkpointed and removed
        #expect(throws: SQLiteError.self) { try pool.read { _ in 0 } }
    }

    @Test("persistent WAL with a journal size limit: closing truncates the log to 0 bytes and keeps it; a read-only connection then creates no log")
    func persistentWAL() throws {
        let dir = try TempDir()
        let path = dir.file("w.sqlite")
        try Connection(path: path).execute(script: "CREATE TABLE t (k);")
        var config = ConnectionPool.Configuration(path: path)
        config.prepareWriter = { db in
            try db.setPersistentWAL(true)
            try db.execute("PRAGMA journal_size_limit = 1048576") // as the store sets it: the kept log is truncated
        }
        let pool = try ConnectionPool(configuration: config)
        try pool.write { try $0.execute("INSERT INTO t VALUES (1)") }
        #expect(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0 > 0)
        try pool.close()
        #expect(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int == 0)
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        let reader = try Connection(path: path, options: [.readOnly])
        #expect(try reader.fetchInt64("SELECT count(*) FROM t") == 1)
        try reader.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == main)
        #expect(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int == 0)
        // Without it, the same read-only open creates the log the last close deleted.
        let other = dir.file("o.sqlite")
        try Connection(path: other).execute(script: "PRAGMA journal_mode = WAL; CREATE TABLE t (k);")
        #expect(!FileManager.default.fileExists(atPath: other + "-wal"))
        _ = try Connection(path: other, options: [.readOnly]).fetchInt64("SELECT count(*) FROM t")
        #expect(FileManager.default.fileExists(atPath: other + "-wal"))
    }

    @Test("migrations: applied once each in order and recorded in grdb_migrations; a failing one leaves no trace; unknown ones are named")
    func migrator() throws {
        struct Broken: Error {}
        let dir = try TempDir()
        let db = try Connection(path: dir.file("m.sqlite"))
        var m = Migrator()
        m.register("v1") { try $0.execute(script: "CREATE TABLE a (x); INSERT INTO a VALUES (1);") }
        m.register("v2") { try $0.execute("INSERT INTO a VALUES (2)") }
        #expect(try m.appliedIdentifiers(db).isEmpty)
        #expect(try m.migrate(db) == ["v1", "v2"])
        #expect(try m.migrate(db) == [])
        #expect(try db.fetchAll("SELECT identifier FROM grdb_migrations ORDER BY rowid") { $0.text(0) } == ["v1", "v2"])
        var later = m
        later.register("v3") { db in
            try db.execute("INSERT INTO a VALUES (3)")
            throw Broken()
        }
        #expect(throws: Broken.self) { try later.migrate(db) }
        #expect(try db.fetchAll("SELECT x FROM a ORDER BY x") { $0.int(0) } == [1, 2])
        #expect(try m.appliedIdentifiers(db) == ["v1", "v2"])
        try db.execute("INSERT INTO grdb_migrations VALUES ('v9-future')")
        #expect(try m.unknownIdentifiers(db) == ["v9-future"])
        // GRDB's own table definition, as a store written by GRDB has it.
        #expect(try db.fetchText("SELECT sql FROM sqlite_master WHERE name = 'grdb_migrations'")
                == "CREATE TABLE \"grdb_migrations\" (identifier TEXT NOT NULL PRIMARY KEY)")
    }
}
