import ENProtocol
import Foundation
import GaenSQLite
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
@testable import GaenStore
#if canImport(Glibc)
import Glibc
#endif

/// Faults of the store's files, injected into real files: a rotten or removed write-ahead log
/// after a crash, structural damage of the main file, a stop with scans waiting on a full disk.
@Suite("Store durability")
struct StoreDurabilityTests {
    static let day = UTCDay(unixSeconds: StressRecords.baseTime)

    /// The files a kill -9 would leave right now (the page cache holds every write the process
    /// made), copied into a new directory: the store, its log (when `wal`) and its ledger.
    static func crashCopy(of dir: TempStoreDir, wal: Bool = true) throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for suffix in ["", "-ledger"] + (wal ? ["-wal"] : []) {
            let from = URL(fileURLWithPath: dir.storePath + suffix)
            if FileManager.default.fileExists(atPath: from.path) {
                try FileManager.default.copyItem(at: from, to: copy.appendingPathComponent("store.sqlite" + suffix))
            }
        }
        return copy
    }

    static func open(_ dir: URL, key: StoreKey) throws -> NodeStore {
        try NodeStore(configuration: StoreConfiguration(path: dir.appendingPathComponent("store.sqlite").path, durability: .normal), key: key)
    }

    static func flip(_ path: String, at offset: Int, mask: UInt8 = 0x10) throws {
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        d[offset] ^= mask
        try d.write(to: URL(fileURLWithPath: path))
    }

    /// A reader holding a snapshot (a long export, say): the commits after it stay in the log.
    static func holdingReader(_ dir: TempStoreDir) throws -> Connection {
        let r = try Connection(path: dir.storePath, options: [.readOnly])
        try r.execute("BEGIN DEFERRED TRANSACTION")
        _ = try r.fetchInt("SELECT count(*) FROM scan")
        return r
    }

    @Test("every commit reaches the main file at once: after a crash, the store without its log holds every scan and the day's key")
    func commitsReachTheMainFile() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let tek = try store.key(for: Self.day, now: StressRecords.baseTime)
        for n in 1...30 { try store.recordScan(StressRecords.scan(number: n)) }
        // kill -9 now, then the log (and shared memory) deleted.
        let copy = try Self.crashCopy(of: dir, wal: false)
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.removeItem(at: copy.appendingPathComponent("store.sqlite-ledger"))
        let reopened = try Self.open(copy, key: dir.key)
        #expect(try reopened.scans(from: 0, to: .infinity) == (1...30).map { StressRecords.scan(number: $0) })
        #expect(try reopened.key(for: Self.day, now: StressRecords.baseTime) == tek)
        #expect(reopened.losses().quarantined == 0)
        try store.close()
    }

    @Test("a flipped bit in the log after a crash: every committed scan is either read back or counted and logged as lost")
    func flippedBitInTheLog() throws {
        // One trial per frame region: the first frame, the middle, the last frame's header.
        for target in ["first", "middle", "last"] {
            let dir = try TempStoreDir()
            let store = try dir.open()
            for n in 1...10 { try store.recordScan(StressRecords.scan(number: n)) }
            let reader = try Self.holdingReader(dir)
            for n in 11...30 { try store.recordScan(StressRecords.scan(number: n)) }
            let copy = try Self.crashCopy(of: dir)
            defer { try? FileManager.default.removeItem(at: copy) }
            let wal = copy.appendingPathComponent("store.sqlite-wal").path
            let size = try Data(contentsOf: URL(fileURLWithPath: wal)).count
            #expect(size > 32 + 24 + 4096, "the commits after the reader's snapshot are in the log")
            let frame = 24 + 4096
            let frames = (size - 32) / frame
            let at = switch target {
            case "first": 32 + 24 + 200
            case "middle": 32 + (frames / 2) * frame + 24 + 1000
            default: 32 + (frames - 1) * frame + 10
            }
            try Self.flip(wal, at: at)
            let reopened = try Self.open(copy, key: dir.key)
            let back = try reopened.scans(from: 0, to: .infinity)
            #expect(back == (1...back.count).map { StressRecords.scan(number: $0) }, "what is read back is right")
            #expect(back.count >= 10)
            let lost = try reopened.quarantinedRecords().filter { $0.table == "lost-scan" }
            #expect(lost.map(\.id) == Array(stride(from: Int64(back.count + 1), through: 30, by: 1)),
                    "\(target): \(back.count) scans read back, lost recorded as \(lost.map(\.id))")
            #expect(reopened.losses().quarantined == 30 - back.count)
            // New scans take new ids: a lost id is never reused.
            let id = try reopened.recordScan(StressRecords.scan(number: 31))
            #expect(id == 31)
            try reopened.close()
            try reader.execute("COMMIT")
            try reader.close()
            try store.close()
        }
    }

    @Test("the day's key whose commit is lost with the log comes back: never a second key for a day")
    func keyLostWithTheLog() throws {
        for removeLog in [false, true] {
            let dir = try TempStoreDir()
            let store = try dir.open()
            try store.recordScan(StressRecords.scan(number: 1))
            let reader = try Self.holdingReader(dir)
            let tek = try store.key(for: Self.day, now: StressRecords.baseTime)
            let copy = try Self.crashCopy(of: dir, wal: !removeLog)
            defer { try? FileManager.default.removeItem(at: copy) }
            if !removeLog { try Self.flip(copy.appendingPathComponent("store.sqlite-wal").path, at: 32 + 24 + 100) }
            let reopened = try Self.open(copy, key: dir.key)
            #expect(try reopened.key(for: Self.day, now: StressRecords.baseTime + 60) == tek)
            #expect(try reopened.keys(in: Self.day...Self.day).map(\.key) == [tek])
            try reopened.close()
            try reader.execute("COMMIT")
            try reader.close()
            try store.close()
        }
    }

    @Test("a key whose store commit failed is the day's key at the next call (the ledger is written first)")
    func keyBeforeCommit() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        for n in 1...3 { try store.recordScan(StressRecords.scan(number: n)) }
        let copy = try Self.crashCopy(of: dir)
        defer { try? FileManager.default.removeItem(at: copy) }
        _ = copy
        let tek = try store.key(for: Self.day, now: StressRecords.baseTime)
        // The store as it was before the key's commit, the ledger as it is after.
        try FileManager.default.removeItem(at: copy.appendingPathComponent("store.sqlite-ledger"))
        try FileManager.default.copyItem(at: URL(fileURLWithPath: dir.storePath + "-ledger"), to: copy.appendingPathComponent("store.sqlite-ledger"))
        let reopened = try Self.open(copy, key: dir.key)
        #expect(try reopened.key(for: Self.day, now: StressRecords.baseTime) == tek)
        try reopened.close()
        try store.close()
    }

    // MARK: Structural damage

    enum Damage: CustomStringConvertible, CaseIterable {
        case flip28, flip100, flip4096, flip8192, truncate100, truncate4096, truncateHalf, dropLastPage, flip20, flip12291
        var description: String {
            switch self {
            case .flip28: "flip at 28"
            case .flip100: "flip at 100"
            case .flip4096: "flip at 4096"
            case .flip8192: "flip at 8192"
            case .truncate100: "truncated to 100 B"
            case .truncate4096: "truncated to 4096 B"
            case .truncateHalf: "truncated to half"
            case .dropLastPage: "last page cut off"
            case .flip20: "flip at 20"
            case .flip12291: "flip at 12291"
            }
        }

        func apply(_ path: String) throws {
            let url = URL(fileURLWithPath: path)
            var d = try Data(contentsOf: url)
            switch self {
            case .flip28: d[28] ^= 0x01
            case .flip100: d[100] ^= 0x01
            case .flip4096: d[4096] ^= 0x01
            case .flip8192: d[8192] ^= 0x01
            case .truncate100: d = d.prefix(100)
            case .truncate4096: d = d.prefix(4096)
            case .truncateHalf: d = d.prefix(d.count / 2)
            case .dropLastPage: d = d.prefix(d.count - 4096)
            case .flip20: d[20] ^= 0x01
            case .flip12291: d[12291] ^= 0x01
            }
            try d.write(to: url)
        }
    }

    @Test("a structurally damaged store is set aside, kept, reported; a fresh store records and the day's key stays", arguments: Damage.allCases)
    func damagedStore(_ damage: Damage) throws {
        let dir = try TempStoreDir()
        var tek: TemporaryExposureKey
        do {
            let store = try dir.open()
            tek = try store.key(for: Self.day, now: StressRecords.baseTime)
            for n in 1...40 { try store.recordScan(StressRecords.scan(number: n, reports: 20)) }
            try store.close()
        }
        try damage.apply(dir.storePath)
        let damagedBytes = try Data(contentsOf: URL(fileURLWithPath: dir.storePath))
        let store = try dir.open()
        let aside = try #require(store.setAside, "\(damage): damage not detected")
        // Kept byte for byte for recovery.
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside.path)) == damagedBytes)
        #expect(aside.path.hasPrefix(dir.storePath + ".damaged-"))
        #expect(try store.quarantinedRecords().map(\.table) == ["store"])
        #expect(try store.quarantinedRecords().first?.reason.contains(aside.path) == true)
        // The count says what was set aside: the 40 scans it held (it said 1).
        #expect(try store.quarantinedRecords().first?.records == 40)
        let reason = try store.quarantinedRecords().first?.reason ?? ""
        #expect(reason.contains("it held 40 scans"), "\(damage): \(reason)")
        #expect(store.losses().quarantined == 40)
        // The day's key is the one advertised before; recording goes on.
        #expect(try store.key(for: Self.day, now: StressRecords.baseTime + 600) == tek)
        try store.recordScan(StressRecords.scan(number: 41))
        #expect(try store.scans(from: 0, to: .infinity).count == 1)
        try store.close()
        // The fresh store is a store: it opens as it is, nothing set aside again.
        let again = try dir.open()
        #expect(again.setAside == nil)
        #expect(try again.key(for: Self.day, now: StressRecords.baseTime + 900) == tek)
        #expect(again.losses().quarantined == 40)
        try again.close()
    }

    @Test("a store set aside counts the records it held: from its file where that still counts them, else from the ledger, after retention deleted the oldest", arguments: Damage.allCases)
    func setAsideCountsItsRecords(_ damage: Damage) throws {
        let dir = try TempStoreDir()
        do {
            let store = try dir.open()
            for n in 1...40 { try store.recordScan(StressRecords.scan(number: n, reports: 20)) }
            for n in 1...3 { _ = try store.addMarker(Marker(time: StressRecords.baseTime + Double(n) * 240 + 2_420, label: "m\(n)")) }
            // Retention deletes scans 1-10 (ends before the cutoff): 30 scans and 3 markers stay.
            let r = try store.applyRetention(now: StressRecords.baseTime + 10 * 240 + 5 + 14 * 86_400)
            #expect(r.scans == 10 && r.markers == 0)
            try store.close()
        }
        try damage.apply(dir.storePath)
        let store = try dir.open()
        #expect(store.setAside != nil, "\(damage): damage not detected")
        let row = try #require(try store.quarantinedRecords().first { $0.table == "store" })
        #expect(row.records == 33, "\(damage): \(row.reason)")
        #expect(row.reason.contains("it held 30 scans") && row.reason.contains("3 markers"), "\(damage): \(row.reason)")
        #expect(store.losses().quarantined == 33)
        try store.close()
    }

    @Test("a wrong key is refused as before, damage or not: nothing is set aside or written")
    func wrongKeyIsNotDamage() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        _ = try store.key(for: Self.day, now: StressRecords.baseTime)
        try store.close()
        var rng = SecureRandom()
        let other = try StoreKey(bytes: rng.bytes(32))
        func files() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.url.path) {
                out[name] = try Data(contentsOf: dir.url.appendingPathComponent(name))
            }
            return out
        }
        let before = try files()
        #expect(throws: StoreError.wrongKey(path: dir.storePath)) {
            try NodeStore(configuration: StoreConfiguration(path: dir.storePath, durability: .normal), key: other)
        }
        // A damaged store with a wrong key: still the key's fault, nothing renamed.
        try Damage.flip100.apply(dir.storePath)
        let damaged = try files()
        #expect(throws: StoreError.self) {
            try NodeStore(configuration: StoreConfiguration(path: dir.storePath, durability: .normal), key: other)
        }
        #expect(try files() == damaged)
        #expect(before.keys.sorted() == damaged.keys.sorted())
    }

    // MARK: Stop with a full disk

    @Test("stopping with scans waiting on a full disk counts and logs them as dropped, never loses them uncounted")
    func stopWithPendingScans() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        for n in 1...3 { try store.recordScan(StressRecords.scan(number: n)) }
        let pages = try store.withWriterForTesting { db in try db.fetchInt("PRAGMA page_count") ?? 0 }
        try store.setPageLimitForTesting(pages)
        var waiting = 0, sightings = 0
        for n in 4...9 {
            let scan = StressRecords.scan(number: n, reports: 300)
            #expect(throws: StoreError.self) { try store.recordScan(scan) }
            waiting += 1
            sightings += scan.sightings.count
        }
        #expect(store.losses().pendingScans == waiting)
        let dropped = try store.close()
        #expect(dropped.droppedScans == waiting && dropped.droppedSightings == sightings)
        #expect(store.losses().droppedScans == waiting && store.losses().droppedSightings == sightings)
        #expect(store.losses().pendingScans == 0)
    }
}

// MARK: Damage while running

extension StoreDurabilityTests {
    /// Damage done to the store file in place, under an open store (what a failing card or a
    /// stray write does while gaend runs): the store keeps its descriptor on the same file.
    enum RuntimeDamage: CustomStringConvertible, CaseIterable {
        case headerMagic, flip100, truncate4096, pagesAfterTheFirstOverwritten
        /// The first page's b-tree header (the schema's table): a write does not read it (the
        /// schema is cached), the daily quick check does.
        var foundByTheWrite: Bool { self != .flip100 }
        var description: String {
            switch self {
            case .headerMagic: "the header's magic overwritten"
            case .flip100: "flip at 100"
            case .truncate4096: "truncated to 4096 B"
            case .pagesAfterTheFirstOverwritten: "every page after the first overwritten"
            }
        }

        func apply(_ path: String) throws {
            let fd = Glibc.open(path, O_RDWR)
            guard fd >= 0 else { throw CocoaError(.fileNoSuchFile) }
            defer { Glibc.close(fd) }
            var st = stat()
            fstat(fd, &st)
            func put(_ bytes: [UInt8], at offset: Int) { _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) } }
            switch self {
            case .headerMagic: put(Array("not an SQLite f\0".utf8), at: 0)
            case .flip100:
                var b: UInt8 = 0
                _ = pread(fd, &b, 1, 100)
                put([b ^ 0x01], at: 100)
            case .truncate4096: _ = ftruncate(fd, 4096)
            case .pagesAfterTheFirstOverwritten: put([UInt8](repeating: 0xA5, count: Int(st.st_size) - 4096), at: 4096)
            }
            fsync(fd)
        }
    }

    @Test("a store damaged while the node runs is set aside at the next write: the scan lands in a fresh store, the day's key stays",
          arguments: RuntimeDamage.allCases)
    func damagedWhileRunning(_ damage: RuntimeDamage) throws {
        let dir = try TempStoreDir()
        // Opened at the records' time: the daily quick check counts from the open.
        let store = try NodeStore(configuration: StoreConfiguration(path: dir.storePath, durability: .normal), key: dir.key,
                                  now: StressRecords.baseTime)
        let tek = try store.key(for: Self.day, now: StressRecords.baseTime)
        for n in 1...40 { try store.recordScan(StressRecords.scan(number: n, reports: 20)) }
        #expect(store.setAside == nil)
        try damage.apply(dir.storePath)
        let damagedBytes = try Data(contentsOf: URL(fileURLWithPath: dir.storePath))
        if !damage.foundByTheWrite {
            // Before the day is over, retention runs no quick check: nothing is found yet.
            try store.applyRetention(now: StressRecords.baseTime + 3_600)
            #expect(store.setAside == nil)
            try store.applyRetention(now: StressRecords.baseTime + 86_400 + 60)
        }
        let next = StressRecords.scan(number: 41, reports: 20)
        try store.recordScan(next)
        let aside = try #require(store.setAside, "\(damage): damage not detected")
        #expect(aside.path.hasPrefix(dir.storePath + ".damaged-"))
        #expect(aside.reason.contains("found while running"))
        // Kept for recovery as it was found.
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside.path)) == damagedBytes)
        #expect(try store.quarantinedRecords().map(\.table) == ["store"])
        let reason = try store.quarantinedRecords().first?.reason ?? ""
        #expect(store.losses().quarantined == 40, "\(damage): \(reason)")
        #expect(store.losses().pendingScans == 0 && store.losses().droppedScans == 0)
        // The scan that met the damage is in the fresh store, and recording goes on.
        #expect(try store.scans(from: 0, to: .infinity) == [next])
        try store.recordScan(StressRecords.scan(number: 42, reports: 20))
        #expect(try store.counts().scans == 2)
        #expect(try store.key(for: Self.day, now: StressRecords.baseTime + 600) == tek)
        try store.close()
        let again = try dir.open()
        #expect(again.setAside == nil)
        #expect(try again.key(for: Self.day, now: StressRecords.baseTime + 900) == tek)
        #expect(try again.counts().scans == 2)
        try again.close()
    }

    @Test("a read that finds the store damaged while running sets it aside too, and the read answers from the fresh store")
    func damagedWhileRunningFoundByARead() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let tek = try store.key(for: Self.day, now: StressRecords.baseTime)
        for n in 1...10 { try store.recordScan(StressRecords.scan(number: n, reports: 20)) }
        // A read through a reader connection (it has read the file before).
        #expect(try store.scans(from: 0, to: .infinity).count == 10)
        try RuntimeDamage.headerMagic.apply(dir.storePath)
        #expect(try store.scans(from: 0, to: .infinity).isEmpty)
        let aside = try #require(store.setAside)
        #expect(FileManager.default.fileExists(atPath: aside.path))
        #expect(store.losses().quarantined == 10)
        #expect(try store.key(for: Self.day, now: StressRecords.baseTime + 600) == tek)
        try store.recordScan(StressRecords.scan(number: 11))
        #expect(try store.counts().scans == 1)
        try store.close()
    }
}
