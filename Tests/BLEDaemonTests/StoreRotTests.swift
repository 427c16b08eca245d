import ENProtocol
import Foundation
import GaenSQLite
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
@testable import GaenStore

/// Rotten records, empty files, retired key days and the full-disk queue: one fault costs
/// what it touched and nothing else.
@Suite("Store faults")
struct StoreRotTests {
    static let day = UTCDay(unixSeconds: StressRecords.baseTime)

    /// Flips one bit in the sealed blob of scan `id`.
    func flipBit(_ store: NodeStore, scan id: Int64) throws {
        try store.withWriterForTesting { db in
            var blob = try db.fetchBlob("SELECT sealed FROM scan WHERE id = ?", [.integer(id)])!
            blob[blob.count / 2] ^= 0x10
            try db.execute("UPDATE scan SET sealed = ? WHERE id = ?", [.blob(blob), .integer(id)])
        }
    }

    @Test("a flipped bit in one sealed scan costs exactly that scan: it is quarantined, reads serve the rest")
    func flippedBit() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let records = (1...12).map { StressRecords.scan(number: $0) }
        for r in records { try store.recordScan(r) }
        try flipBit(store, scan: 9)
        let back = try store.scans(from: 0, to: .infinity)
        var expectedRecords = records
        expectedRecords.remove(at: 8)
        #expect(back == expectedRecords)
        let q = try store.quarantinedRecords()
        #expect(q.map(\.table) == ["scan"] && q.map(\.id) == [9])
        #expect(q.first?.reason == "authentication failed")
        #expect(store.losses().quarantined == 1)
        // Found once: a second read serves the same rows and quarantines nothing new.
        #expect(try store.scans(from: 0, to: .infinity).count == 11)
        #expect(try store.quarantinedRecords().count == 1)
        // Reopened, the quarantine holds.
        try store.close()
        let reopened = try dir.open()
        #expect(try reopened.scans(from: 0, to: .infinity).count == 11)
        #expect(reopened.losses().quarantined == 1)
    }

    @Test("rotten markers, results and keys are quarantined too; retention clears quarantine rows with their records")
    func otherTables() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let t = StressRecords.baseTime
        try store.addMarker(Marker(time: t, label: "a"))
        try store.addMarker(Marker(time: t + 1, label: "b"))
        try store.replaceExposureResults(kind: "w", with: [(nil, Data("x".utf8)), (nil, Data("y".utf8))], now: t)
        _ = try store.key(for: Self.day)
        _ = try store.key(for: Self.day.advanced(by: 1))
        try store.withWriterForTesting { db in
            try db.execute("UPDATE marker SET sealed = x'00' || substr(sealed, 2) WHERE id = 1")
            try db.execute("UPDATE exposure_result SET sealed = substr(sealed, 1, length(sealed) - 1) || x'00' WHERE id = 2")
            try db.execute("UPDATE tek SET sealed = x'01' || substr(sealed, 2) WHERE day = ?", [.int(Self.day.rawValue)])
        }
        #expect(try store.markers(from: 0, to: .infinity).map(\.label) == ["b"])
        #expect(try store.exposureResults(kind: "w").map(\.payload) == [Data("x".utf8)])
        #expect(try store.keys(in: Self.day...Self.day.advanced(by: 1)).map(\.day) == [Self.day.advanced(by: 1)])
        // The day's key is rotten: no second key is made for the day.
        #expect(throws: StoreError.self) { try store.key(for: Self.day) }
        #expect(Set(try store.quarantinedRecords().map(\.table)) == ["marker", "exposure_result", "tek"])
        _ = try store.applyRetention(now: t + 30 * 86_400)
        #expect(try store.quarantinedRecords().isEmpty)
    }

    @Test("a day whose key retention deleted never gets a second key")
    func retiredKeyDay() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        _ = try store.key(for: Self.day, now: StressRecords.baseTime)
        _ = try store.applyRetention(now: StressRecords.baseTime + 40 * 86_400)
        #expect(try store.keys(in: Self.day...Self.day).isEmpty)
        #expect(throws: StoreError.keyDayRetired(day: Self.day.rawValue)) { try store.key(for: Self.day) }
        // Other days are unaffected.
        _ = try store.key(for: Self.day.advanced(by: 41))
    }

    @Test("an empty store file is an error unless the state directory is new; stores are created whole")
    func emptyFile() throws {
        let dir = try TempStoreDir()
        _ = FileManager.default.createFile(atPath: dir.storePath, contents: Data())
        try Data("{}".utf8).write(to: dir.url.appendingPathComponent("node-state.json"))
        #expect(throws: StoreError.emptyStoreFile(path: dir.storePath)) { try dir.open() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.storePath)).isEmpty)
        // In a new directory (only the key beside it) an empty file is taken as new.
        try FileManager.default.removeItem(at: dir.url.appendingPathComponent("node-state.json"))
        let store = try dir.open()
        try store.recordScan(StressRecords.scan(number: 1))
        #expect(try store.counts().scans == 1)
        #expect(!FileManager.default.fileExists(atPath: dir.storePath + ".creating"))
    }

    @Test("the full-disk queue is bounded in bytes: oldest dropped first, counted, the newest kept")
    func pendingBytes() throws {
        let dir = try TempStoreDir()
        let store = try dir.open { $0.maximumPendingBytes = 16 * 1024; $0.maximumBytes = nil }
        // Fill the store until a write fails, then keep recording: everything waits in memory.
        try store.setPageLimitForTesting(try store.withWriterForTesting { db in try db.fetchInt("PRAGMA page_count")! } + 2)
        var first = 0
        for n in 1...1_000 {
            do { try store.recordScan(StressRecords.scan(number: n, reports: 60)) } catch StoreError.diskFull { first = n; break }
        }
        #expect(first > 0)
        for n in (first + 1)...(first + 200) {
            #expect(throws: StoreError.self) { try store.recordScan(StressRecords.scan(number: n, reports: 60)) }
        }
        let losses = store.losses()
        #expect(losses.pendingBytes <= 16 * 1024)
        #expect(losses.droppedScans > 0 && losses.droppedScans + losses.pendingScans == 201)
        #expect(losses.droppedSightings == 60 * losses.droppedScans)
        try store.setPageLimitForTesting(1 << 30)
        #expect(try store.flushPending() == losses.pendingScans)
        let numbers = try store.scans(from: 0, to: .infinity).map { Int(($0.start - StressRecords.baseTime) / 240) }
        // Everything stored before the disk filled, then the newest that fitted in memory.
        let expected = Array(1..<first) + Array((first + 201 - losses.pendingScans)...(first + 200))
        #expect(numbers == expected)
    }

    @Test("the clock's high-water mark only rises and survives reopening")
    func highWater() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        #expect(try store.highWaterMark() == nil)
        try store.raiseHighWaterMark(to: 100)
        try store.raiseHighWaterMark(to: 50)
        #expect(try store.highWaterMark() == 100)
        try store.close()
        #expect(try dir.open().highWaterMark() == 100)
    }
}
