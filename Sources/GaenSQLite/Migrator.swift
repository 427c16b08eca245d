/// Schema versions as a list of named migrations, each applied once, in order, in its own
/// write transaction that also records its name. The record is GRDB's (older gaend versions'
/// stores were migrated by GRDB's DatabaseMigrator): a table `grdb_migrations (identifier TEXT NOT NULL
/// PRIMARY KEY)`, one row per applied migration, so stores written then open unchanged and
/// their history goes on. Add migrations; never edit or rename one that has shipped.
public struct Migrator {
    public let table: String
    private var migrations: [(identifier: String, migrate: (Connection) throws -> Void)] = []

    public init(table: String = "grdb_migrations") { self.table = table }

    public mutating func register(_ identifier: String, _ migrate: @escaping (Connection) throws -> Void) {
        precondition(!migrations.contains { $0.identifier == identifier }, "migration \(identifier) registered twice")
        migrations.append((identifier, migrate))
    }

    /// The registered migrations' names, in order.
    public var identifiers: [String] { migrations.map(\.identifier) }

    /// The names recorded in the database (none when the table does not exist yet).
    public func appliedIdentifiers(_ db: Connection) throws -> Set<String> {
        guard try db.tableExists(table) else { return [] }
        return Set(try db.fetchAll("SELECT identifier FROM \"\(table)\"") { $0.text(0) })
    }

    /// Applied migrations this code does not know: the database was written by newer code.
    public func unknownIdentifiers(_ db: Connection) throws -> [String] {
        let known = Set(identifiers)
        return try appliedIdentifiers(db).filter { !known.contains($0) }.sorted()
    }

    /// Applies the migrations not yet recorded, in order, each in its own immediate
    /// transaction. Returns the names applied.
    @discardableResult
    public func migrate(_ db: Connection) throws -> [String] {
        try db.execute("CREATE TABLE IF NOT EXISTS \"\(table)\" (identifier TEXT NOT NULL PRIMARY KEY)")
        var applied: [String] = []
        for m in migrations {
            let done = try db.transaction(.immediate) { () -> Bool in
                // Checked inside the transaction: another process may have migrated meanwhile.
                if try db.fetchInt64("SELECT 1 FROM \"\(table)\" WHERE identifier = ?", [.text(m.identifier)]) != nil { return false }
                try m.migrate(db)
                try db.execute("INSERT INTO \"\(table)\" (identifier) VALUES (?)", [.text(m.identifier)])
                return true
            }
            if done { applied.append(m.identifier) }
        }
        return applied
    }
}
