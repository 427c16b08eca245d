import ENProtocol
import Foundation
import GaenSQLite
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
@testable import GaenStore

/// Stores on boards were written by gaend releases whose store ran on GRDB (schema versions in
/// GRDB's migrator table, grdb_migrations). The fixture is such a store, as that release left it
/// after closing (main file and WAL); scripts/gen-store-fixture.sh regenerates it.
@Suite("Store compatibility")
struct StoreFixtureTests {
    static let fixture = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/store-grdb")

    /// A copy of the fixture in a throwaway directory (opening a store writes to it).
    static func copy() throws -> (TempStoreDir, StoreKey) {
        let dir = try TempStoreDir()
        for name in ["store.sqlite", "store.sqlite-wal"] {
            let from = fixture.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: from.path) {
                try FileManager.default.copyItem(at: from, to: dir.url.appendingPathComponent(name))
            }
        }
        return (dir, try StoreKey(bytes: Data(hex: StoreFixture.keyHex)))
    }

    static func teks() throws -> [(day: UTCDay, key: TemporaryExposureKey)] {
        let text = try String(decoding: Data(contentsOf: fixture.appendingPathComponent("teks.txt")), as: UTF8.self)
        return try text.split(separator: "\n").map { line in
            let f = line.split(separator: " ")
            return (UTCDay(Int32(f[0])!), try TemporaryExposureKey(bytes: Data(hex: String(f[1]))))
        }
    }

    @Test("a store written by the GRDB release opens unchanged and reads back in full")
    func readsEverything() throws {
        let (dir, key) = try Self.copy()
        let store = try NodeStore(configuration: StoreConfiguration(path: dir.storePath), key: key)
        var expected = StoreFixture.scans
        expected.remove(at: Int(StoreFixture.tamperedScan) - 1)
        #expect(try store.scans(from: -.infinity, to: .infinity) == expected)
        let q = try store.quarantinedRecords()
        #expect(q.map(\.table) == ["scan"] && q.map(\.id) == [StoreFixture.tamperedScan] && q.map(\.reason) == ["authentication failed"])
        #expect(store.losses().quarantined == 1)
        let teks = try Self.teks()
        #expect(teks.map(\.day) == StoreFixture.keyDays)
        let stored = try store.keys(in: StoreFixture.retiredDay...StoreFixture.keyDays.last!)
        #expect(stored.map(\.day) == teks.map(\.day) && stored.map(\.key) == teks.map(\.key))
        for t in teks { #expect(try store.key(for: t.day) == t.key) }
        #expect(throws: StoreError.keyDayRetired(day: StoreFixture.retiredDay.rawValue)) { try store.key(for: StoreFixture.retiredDay) }
        #expect(try store.markerRecords(from: -.infinity, to: .infinity).map(\.marker) == StoreFixture.markers)
        #expect(try store.markerRecords(from: -.infinity, to: .infinity).map(\.id) == [1, 2])
        for kind in ["windows", "summaries"] {
            let want = StoreFixture.results.filter { $0.kind == kind }
            let got = try store.exposureResults(kind: kind)
            #expect(got.map(\.payload) == want.map(\.payload) && got.map(\.day) == want.map(\.day))
            #expect(got.allSatisfy { $0.createdAt == StoreFixture.resultsTime })
        }
        let files = try store.keyFiles()
        #expect(files.map(\.exportBin) == StoreFixture.keyFiles.map(\.exportBin))
        #expect(files.map(\.validUntil) == StoreFixture.keyFiles.map(\.validUntil))
        #expect(files.allSatisfy { $0.providedAt == StoreFixture.keyFilesTime })
        #expect(try store.keyFileIDs() == files.map(\.id))
        #expect(try store.highWaterMark() == StoreFixture.highWater)
        let counts = try store.counts()
        #expect(counts.scans == 25 && counts.keys == 3)
        #expect(counts.sightings == StoreFixture.scans.map(\.sightings.count).reduce(0, +))
        // The schema history GRDB's migrator recorded is this store's history, nothing re-run,
        // followed by what later versions added (v4: the quarantine's record counts).
        let history = try store.withWriterForTesting { db in
            (try db.fetchAll("SELECT identifier FROM grdb_migrations ORDER BY rowid") { $0.text(0) }, try db.fetchText("PRAGMA integrity_check"))
        }
        #expect(history.0 == NodeStore.migrator(key: key).identifiers && history.0 == ["v1", "v2-quarantine-key-days-clock", "v3-key-files", "v4-quarantine-records"])
        #expect(history.1 == "ok")
        // It keeps working: new rows after the old ones, new days' keys, across reopening.
        let added = try store.recordScan(StressRecords.scan(number: 26))
        #expect(added == 26)
        let next = try store.key(for: StoreFixture.keyDays.last!.advanced(by: 1))
        #expect(try store.addMarker(Marker(time: StressRecords.baseTime + 5_000, label: "new")) == 3)
        try store.close()
        let reopened = try NodeStore(configuration: StoreConfiguration(path: dir.storePath), key: key)
        #expect(try reopened.scans(from: -.infinity, to: .infinity) == expected + [StressRecords.scan(number: 26)])
        #expect(try reopened.key(for: StoreFixture.keyDays.last!.advanced(by: 1)) == next)
        #expect(reopened.losses().quarantined == 1)
        try reopened.close()
    }

    @Test("the wrong key leaves the fixture's files byte for byte as they were")
    func wrongKey() throws {
        let (dir, _) = try Self.copy()
        let main = try Data(contentsOf: URL(fileURLWithPath: dir.storePath))
        let wal = try Data(contentsOf: URL(fileURLWithPath: dir.storePath + "-wal"))
        var rng = SecureRandom()
        #expect(throws: StoreError.wrongKey(path: dir.storePath)) {
            try NodeStore(configuration: StoreConfiguration(path: dir.storePath), key: try StoreKey.random(using: &rng))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.storePath)) == main)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.storePath + "-wal")) == wal)
    }
}
