import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GaenSQLite
import Logging
import PlatformSupport

/// Provided key files and the exposure results computed from them, for async callers.
package struct KeyFileStore: Sendable {
    let store: NodeStore

    /// See `NodeStore.addKeyFiles(_:replacing:now:)`.
    @discardableResult
    package func add(_ files: [KeyFileInput], replacing: [Int64] = [], now: Double) async throws -> [Int64] {
        try await store.perform { try $0.addKeyFiles(files.map { ($0.exportBin, $0.validUntil) }, replacing: replacing, now: now) }
    }

    package func ids() async throws -> [Int64] { try await store.perform { try $0.keyFileIDs() } }

    package func files(ids: [Int64]? = nil) async throws -> [StoredKeyFile] { try await store.perform { try $0.keyFiles(ids: ids) } }

    /// See `NodeStore.replaceExposureResults(kind:with:now:)`.
    package func replaceResults(kind: String, with payloads: [ResultInput], now: Double) async throws {
        try await store.perform { try $0.replaceExposureResults(kind: kind, with: payloads.map { ($0.day, $0.payload) }, now: now) }
    }

    package func results(kind: String) async throws -> [StoredExposureResult] { try await store.perform { try $0.exposureResults(kind: kind) } }

    /// A key file to add: its export.bin and the end of its newest key's validity.
    package struct KeyFileInput: Sendable {
        package var exportBin: Data, validUntil: Double
        package init(exportBin: Data, validUntil: Double) { self.exportBin = exportBin; self.validUntil = validUntil }
    }

    /// A result to store: its day (if any) and payload.
    package struct ResultInput: Sendable {
        package var day: UTCDay?, payload: Data
        package init(day: UTCDay?, payload: Data) { self.day = day; self.payload = payload }
    }
}

extension NodeStore {
    // MARK: Exposure results

    /// Replaces every result of `kind` in one transaction: a failed computation (say, a
    /// corrupt key file) never gets here, so earlier results stay until new ones replace them.
    package func replaceExposureResults(kind: String, with payloads: [(day: UTCDay?, payload: Data)],
                                       now: Double = Date().timeIntervalSince1970) throws {
        try locked {
            try write { db in
                try db.execute("DELETE FROM exposure_result WHERE kind = ?", [.text(kind)])
                for p in payloads {
                    let id = try Self.nextID(db, table: "exposure_result")
                    let aad = Self.resultAAD(id: id, kind: kind, createdAt: now, day: p.day)
                    try db.execute("INSERT INTO exposure_result (id, kind, created_at, day, sealed) VALUES (?, ?, ?, ?, ?)",
                                   [.integer(id), .text(kind), .real(now), .optional(p.day.map { Int64($0.rawValue) }), .bytes(seal(p.payload, aad: aad))])
                }
            }
        }
    }

    package func exposureResults(kind: String) throws -> [StoredExposureResult] {
        try readSkippingRotten("exposure_result",
                               sql: "SELECT id, created_at, day, sealed FROM exposure_result WHERE kind = ? AND \(Self.notQuarantined("exposure_result")) ORDER BY id",
                               arguments: [.text(kind)]) { row in
            let id = row.int64(0), createdAt = row.double(1)
            let day = row.isNull(2) ? nil : UTCDay(Int32(truncatingIfNeeded: row.int64(2)))
            let payload = try open(row.data(3), aad: Self.resultAAD(id: id, kind: kind, createdAt: createdAt, day: day), table: "exposure_result", id: id)
            return StoredExposureResult(id: id, kind: kind, createdAt: createdAt, day: day, payload: payload)
        }
    }

    static func resultAAD(id: Int64, kind: String, createdAt: Double, day: UTCDay?) -> Data {
        var d = aad("exposure_result", [id, bits(createdAt), day.map { Int64($0.rawValue) } ?? Int64.min])
        d.append(Data(kind.utf8))
        return d
    }

    // MARK: Key files

    /// Adds provided key files (export.bin) after the stored ones, removing the stored files
    /// `replacing` (the same files provided again) in the same transaction. Returns the new ids.
    @discardableResult
    package func addKeyFiles(_ files: [(exportBin: Data, validUntil: Double)], replacing: [Int64] = [],
                            now: Double = Date().timeIntervalSince1970) throws -> [Int64] {
        let budget = configuration.keyFileBytes
        return try locked {
            let ids = try write { db in
                for id in replacing { try db.execute("DELETE FROM key_file WHERE id = ?", [.integer(id)]) }
                // Room within the key files' own budget: the oldest files go first.
                let incoming = files.reduce(Int64(0)) { $0 + Int64($1.exportBin.count) }
                var stored = try Self.keyFileBytes(db), evicted = 0
                while stored + incoming > budget, let oldest = try db.fetchInt64("SELECT id FROM key_file ORDER BY id LIMIT 1") {
                    try db.execute("DELETE FROM key_file WHERE id = ?", [.integer(oldest)])
                    evicted += 1
                    stored = try Self.keyFileBytes(db)
                }
                if evicted > 0 {
                    logger.warning("key files above their budget: removed the oldest provided files",
                                   metadata: ["store.evictedKeyFiles": "\(evicted)", "store.keyFileBytes": "\(budget)"])
                }
                return try files.map { f in
                    let id = try Self.nextID(db, table: "key_file")
                    try db.execute("INSERT INTO key_file (id, provided_at, valid_until, sealed) VALUES (?, ?, ?, ?)",
                                   [.integer(id), .real(now), .real(f.validUntil),
                                    .bytes(seal(f.exportBin, aad: Self.keyFileAAD(id: id, providedAt: now, validUntil: f.validUntil)))])
                    return id
                }
            }
            if let last = ids.max() { ledgerCommitted("key_file", upTo: last) }
            // Replaced or evicted files may have been the oldest (provided rarely: one read).
            ledgerDeleted()
            return ids
        }
    }

    /// The ids of the stored key files, in the order provided (no decryption).
    package func keyFileIDs() throws -> [Int64] {
        try read { db in try db.fetchAll("SELECT id FROM key_file WHERE \(Self.notQuarantined("key_file")) ORDER BY id") { $0.int64(0) } }
    }

    /// The stored key files, in the order provided (rotten ones quarantined and skipped).
    package func keyFiles(ids: [Int64]? = nil) throws -> [StoredKeyFile] {
        let only = ids.map { " AND id IN (" + $0.map(String.init).joined(separator: ",") + ")" } ?? ""
        return try readSkippingRotten("key_file",
                                      sql: "SELECT id, provided_at, valid_until, sealed FROM key_file WHERE \(Self.notQuarantined("key_file"))\(only) ORDER BY id") { row in
            let id = row.int64(0), providedAt = row.double(1), validUntil = row.double(2)
            let payload = try open(row.data(3), aad: Self.keyFileAAD(id: id, providedAt: providedAt, validUntil: validUntil),
                                   table: "key_file", id: id)
            return StoredKeyFile(id: id, providedAt: providedAt, validUntil: validUntil, exportBin: payload)
        }
    }

    /// Bytes the stored key files take (their sealed payloads).
    static func keyFileBytes(_ db: Connection) throws -> Int64 {
        try db.fetchInt64("SELECT coalesce(sum(length(sealed)), 0) FROM key_file") ?? 0
    }

    static func keyFileAAD(id: Int64, providedAt: Double, validUntil: Double) -> Data {
        aad("key_file", [id, bits(providedAt), bits(validUntil)])
    }
}
