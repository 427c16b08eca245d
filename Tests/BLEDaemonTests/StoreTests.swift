import ENProtocol
import Foundation
import GaenSQLite
@testable import HCIHost
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
@testable import GaenStore

@Suite("Encrypted store")
struct StoreTests {
    static let day = UTCDay(unixSeconds: StressRecords.baseTime)

    @Test("scans round-trip, empty scans included, in time order; counts come from the clear columns")
    func scansRoundTrip() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let records = (1...20).map { StressRecords.scan(number: $0) }
        for r in records.reversed() { try store.recordScan(r) }
        let back = try store.scans(from: 0, to: .infinity)
        #expect(back == records)
        #expect(back.contains { $0.sightings.isEmpty })
        let counts = try store.counts()
        #expect(counts.scans == 20 && counts.sightings == records.map(\.sightings.count).reduce(0, +))
        let window = try store.scans(from: records[4].start, to: records[9].start)
        #expect(window == Array(records[4..<9]))
    }

    @Test("one TEK per UTC day: key(for:) returns the stored key, across reopening")
    func oneKeyPerDay() throws {
        let dir = try TempStoreDir()
        var store: NodeStore? = try dir.open()
        let k1 = try store!.key(for: Self.day)
        #expect(try store!.key(for: Self.day) == k1)
        let k2 = try store!.key(for: Self.day.advanced(by: 1))
        #expect(k2 != k1)
        try store!.close()
        store = nil
        let reopened = try dir.open()
        #expect(try reopened.key(for: Self.day) == k1)
        let history = try reopened.keys(in: Self.day.advanced(by: -5)...Self.day.advanced(by: 5))
        #expect(history.map(\.day) == [Self.day, Self.day.advanced(by: 1)])
        #expect(history.map(\.key) == [k1, k2])
    }

    @Test("the schema itself refuses a second key for a day")
    func uniqueDayConstraint() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        _ = try store.key(for: Self.day)
        #expect(throws: SQLiteError.self) {
            try store.withWriterForTesting { db in
                try db.execute("INSERT INTO tek (day, created_at, sealed) VALUES (?, 0, x'00')", [.int(Self.day.rawValue)])
            }
        }
    }

    @Test("many tasks asking for the same day's key at once get one key")
    func concurrentKeyRequests() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let keys = try await withThrowingTaskGroup(of: TemporaryExposureKey.self) { group in
            for _ in 0..<16 { group.addTask { try store.key(for: Self.day) } }
            return try await group.reduce(into: Set<TemporaryExposureKey>()) { $0.insert($1) }
        }
        #expect(keys.count == 1)
        #expect(try store.counts().keys == 1)
    }

    @Test("a wrong key is a clear error and leaves the file byte for byte as it was")
    func wrongKey() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        for n in 1...5 { try store.recordScan(StressRecords.scan(number: n)) }
        try store.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.storePath))
        var rng = SecureRandom()
        let wrong = try StoreKey.random(using: &rng)
        #expect(throws: StoreError.wrongKey(path: dir.storePath)) {
            try NodeStore(configuration: StoreConfiguration(path: dir.storePath), key: wrong)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.storePath)) == before)
        #expect(try dir.open().counts().scans == 5)
    }

    @Test("a wrong key on a store left by a crash (WAL not checkpointed) touches neither file")
    func wrongKeyAfterCrash() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        // Every commit is checkpointed at once, except while a read holds its frames back.
        let reader = try StoreDurabilityTests.holdingReader(dir)
        for n in 1...5 { try store.recordScan(StressRecords.scan(number: n)) }
        // Snapshot the files while the store is open: what a crash leaves behind.
        let crashed = try TempStoreDir()
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(atPath: dir.storePath + suffix, toPath: crashed.storePath + suffix)
        }
        try reader.execute("COMMIT")
        try reader.close()
        try store.close()
        let main = try Data(contentsOf: URL(fileURLWithPath: crashed.storePath))
        let wal = try Data(contentsOf: URL(fileURLWithPath: crashed.storePath + "-wal"))
        #expect(!wal.isEmpty)
        #expect(throws: StoreError.wrongKey(path: crashed.storePath)) {
            try NodeStore(configuration: StoreConfiguration(path: crashed.storePath), key: crashed.key)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: crashed.storePath)) == main)
        #expect(try Data(contentsOf: URL(fileURLWithPath: crashed.storePath + "-wal")) == wal)
        // The right key recovers every committed scan from the WAL.
        let reopened = try NodeStore(configuration: StoreConfiguration(path: crashed.storePath), key: dir.key)
        #expect(try reopened.counts().scans == 5)
    }

    @Test("a file that is not a store is named as such")
    func notAStore() throws {
        let dir = try TempStoreDir()
        try Data("this is not sqlite at all, just some text that is long enough".utf8).write(to: URL(fileURLWithPath: dir.storePath))
        #expect {
            try dir.open()
        } throws: { error in
            if case StoreError.notAStore = error { return true } else { return false }
        }
    }

    @Test("the store's bytes on disk contain none of the TEKs, RPIs or AEMs written")
    func noSecretsOnDisk() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        var keys: [TemporaryExposureKey] = []
        for d in 0..<14 { keys.append(try store.key(for: Self.day.advanced(by: d))) }
        let records = (1...120).map { StressRecords.scan(number: $0, reports: 5) }
        for r in records { try store.recordScan(r) }
        try store.addMarker(Marker(time: StressRecords.baseTime, label: "secret-label-xyz", distanceMeters: 1.5, note: "note-abc"))
        let schedule = try GAENKeySchedule()
        var secrets = keys.map(\.bytes)
        for k in keys { secrets += try schedule.rollingProximityIdentifiers(for: k, from: Self.day.firstInterval, count: 8).map(\.bytes) }
        secrets += records.flatMap { $0.sightings.flatMap { [$0.rpi.bytes] } }
        secrets += [Data("secret-label-xyz".utf8), Data("note-abc".utf8), dir.key.bytes]
        let open = try dir.storeBytes()
        #expect(open.count > 30_000)
        #expect(!secrets.contains { open.contains($0) })
        try store.close()
        let closed = try dir.storeBytes()
        #expect(!secrets.contains { closed.contains($0) })
        // The check has teeth: a sealed blob would be found if it were plaintext.
        #expect(closed.contains(Data("CREATE TABLE scan".utf8)))
    }

    @Test("a clear column changed behind the store's back fails authentication")
    func tamperedClearColumn() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        try store.recordScan(StressRecords.scan(number: 3))
        try store.withWriterForTesting { db in try db.execute("UPDATE scan SET end_time = end_time + 60") }
        // The record is quarantined, not served and not fatal (StoreRotTests has the rest).
        #expect(try store.scans(from: 0, to: .infinity).isEmpty)
        #expect(try store.quarantinedRecords().map(\.id) == [1])
        // A key blob copied to another day does not open either.
        _ = try store.key(for: Self.day)
        try store.withWriterForTesting { db in
            try db.execute("INSERT INTO tek (day, created_at, sealed) SELECT day + 1, created_at, sealed FROM tek")
        }
        #expect(throws: StoreError.self) { try store.key(for: Self.day.advanced(by: 1)) }
    }

    @Test("retention deletes by time without decrypting, 14 days by default, configurable")
    func retention() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let now = StressRecords.baseTime + 30 * 86_400
        for d in 0..<30 {
            let start = StressRecords.baseTime + Double(d) * 86_400 + 1000
            try store.recordScan(Scan(start: start, end: start + 4, sightings: []))
            _ = try store.key(for: UTCDay(unixSeconds: start))
            try store.addMarker(Marker(time: start, label: "d\(d)"))
        }
        let removed = try store.applyRetention(now: now)
        #expect(removed.scans == 16 && removed.markers == 16)
        let left = try store.scans(from: 0, to: .infinity)
        #expect(left.count == 14)
        #expect(left.allSatisfy { $0.end >= now - 14 * 86_400 })
        #expect(try store.counts().keys == 14) // the cutoff day itself is kept
        try store.close()
        let longer = try dir.open { $0.retentionDays = 21 }
        #expect(try longer.applyRetention(now: now).scans == 0)
        // 21 days from 8 days later: only the oldest remaining day falls out.
        #expect(try longer.applyRetention(now: now + 8 * 86_400).scans == 1)
    }

    @Test("a size bound evicts the oldest scans first")
    func sizeBound() throws {
        let dir = try TempStoreDir()
        let store = try dir.open { $0.maximumBytes = 400_000 }
        for n in 1...600 { try store.recordScan(StressRecords.scan(number: n, reports: 40)) }
        #expect(try store.usedBytes() <= 400_000)
        let left = try store.scans(from: 0, to: .infinity)
        #expect(left.count < 600 && left.count > 100)
        // What is left is the newest, contiguous run.
        #expect(left.last! == StressRecords.scan(number: 600, reports: 40))
        #expect(left.first! == StressRecords.scan(number: 600 - left.count + 1, reports: 40))
    }

    @Test("a full store is a named error; scans wait in memory and are written when space returns")
    func fullStoreResumes() throws {
        let dir = try TempStoreDir()
        let store = try dir.open { $0.maximumBytes = nil }
        try store.recordScan(StressRecords.scan(number: 1))
        let pages = try store.withWriterForTesting { db in try db.fetchInt("PRAGMA page_count")! }
        try store.setPageLimitForTesting(pages + 2)
        var n = 1
        var fullError: StoreError?
        while fullError == nil, n < 500 {
            n += 1
            do { try store.recordScan(StressRecords.scan(number: n, reports: 60)) } catch let e as StoreError { fullError = e }
        }
        #expect(fullError == .diskFull(pendingScans: 1))
        #expect(fullError?.name == "DiskFull")
        #expect(store.isFull)
        // More scans while full queue up.
        for m in (n + 1)...(n + 3) {
            #expect(throws: StoreError.diskFull(pendingScans: m - n + 1)) { try store.recordScan(StressRecords.scan(number: m, reports: 60)) }
        }
        try store.setPageLimitForTesting(1_000_000)
        #expect(try store.flushPending() == 4)
        #expect(!store.isFull && store.pendingScanCount == 0)
        let numbers = try store.scans(from: 0, to: .infinity).map { Int(($0.start - StressRecords.baseTime) / 240) }
        #expect(numbers == Array(1...(n + 3)))
    }

    @Test("exposure results are replaced whole; markers round-trip")
    func resultsAndMarkers() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        try store.replaceExposureResults(kind: "windows", with: [(Self.day, Data("a".utf8)), (nil, Data("b".utf8))])
        try store.replaceExposureResults(kind: "summaries", with: [(Self.day, Data("s".utf8))])
        try store.replaceExposureResults(kind: "windows", with: [(Self.day, Data("c".utf8))])
        #expect(try store.exposureResults(kind: "windows").map(\.payload) == [Data("c".utf8)])
        #expect(try store.exposureResults(kind: "summaries").map(\.day) == [Self.day])
        let m = Marker(time: 100, label: "bus seat 3", distanceMeters: 1.5, note: "facing")
        try store.addMarker(m)
        try store.addMarker(Marker(time: 200, label: "away"))
        #expect(try store.markers(from: 0, to: 150) == [m])
    }

    @Test("durability full is SQLite's synchronous FULL on the writer, normal NORMAL; the store is in WAL mode")
    func durability() throws {
        let dir = try TempStoreDir()
        for (durability, level) in [(StoreConfiguration.Durability.full, Int64(2)), (.normal, 1)] {
            let store = try dir.open { $0.durability = durability }
            #expect(try store.withWriterForTesting { try $0.fetchInt64("PRAGMA synchronous") } == level)
            #expect(try store.withWriterForTesting { try $0.fetchText("PRAGMA journal_mode") } == "wal")
            try store.close()
        }
    }

    @Test("a store written by a newer schema is refused by name")
    func newerSchema() throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        try store.withWriterForTesting { db in try db.execute("INSERT INTO grdb_migrations (identifier) VALUES ('v99-future')") }
        try store.close()
        #expect(throws: StoreError.newerSchema(path: dir.storePath, unknownMigrations: ["v99-future"])) { try dir.open() }
    }
}

@Suite("Store key")
struct StoreKeyTests {
    @Test("key files: created 0600, loaded as hex or raw; group/world-readable or malformed refused")
    func keyFiles() throws {
        let dir = try TempStoreDir()
        let mode = try FileManager.default.attributesOfItem(atPath: dir.keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try StoreKey.load(file: dir.keyPath).bytes == dir.key.bytes)
        var rng = SecureRandom()
        #expect(throws: StoreError.keyFileExists(path: dir.keyPath)) { try StoreKey.createFile(at: dir.keyPath, using: &rng) }

        let raw = dir.url.appendingPathComponent("raw").path
        let bytes = try rng.bytes(32)
        #expect(FileManager.default.createFile(atPath: raw, contents: bytes, attributes: [.posixPermissions: 0o400]))
        #expect(try StoreKey.load(file: raw).bytes == bytes)

        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: dir.keyPath)
        #expect(throws: StoreError.keyFileTooOpen(path: dir.keyPath, mode: "0640")) { try StoreKey.load(file: dir.keyPath) }
        try FileManager.default.setAttributes([.posixPermissions: 0o604], ofItemAtPath: dir.keyPath)
        #expect(throws: StoreError.keyFileTooOpen(path: dir.keyPath, mode: "0604")) { try StoreKey.load(keyFile: dir.keyPath) }

        let short = dir.url.appendingPathComponent("short").path
        #expect(FileManager.default.createFile(atPath: short, contents: Data("abcd\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: StoreError.keyFileMalformed(path: short, reason: "expected 32 raw bytes or 64 hex digits, got 5 bytes")) {
            try StoreKey.load(file: short)
        }
        #expect(throws: StoreError.self) { try StoreKey.load(file: dir.url.appendingPathComponent("missing").path) }
    }

    @Test("the systemd credential is used when no key file is given; neither is a clear error")
    func credential() throws {
        let dir = try TempStoreDir()
        try FileManager.default.copyItem(atPath: dir.keyPath, toPath: dir.url.appendingPathComponent("store-key-cred").path)
        let credDir = dir.url.appendingPathComponent("creds")
        try FileManager.default.createDirectory(at: credDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir.keyPath, toPath: credDir.appendingPathComponent("store-key").path)
        let env = ["CREDENTIALS_DIRECTORY": credDir.path]
        #expect(try StoreKey.load(keyFile: nil, environment: env).bytes == dir.key.bytes)
        #expect(throws: StoreError.noKeySource(credentialPath: nil)) { try StoreKey.load(keyFile: nil, environment: [:]) }
        #expect("\(dir.key)" == "StoreKey(<redacted>)")
        #expect(!"\(StoreError.noKeySource(credentialPath: nil))".isEmpty)
        // A credentials directory without store-key names what it does hold.
        let other = dir.url.appendingPathComponent("other-creds")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: other.appendingPathComponent("storekey").path, contents: Data("x".utf8)))
        let missing = try #require(throws: StoreError.self) { try StoreKey.load(keyFile: nil, environment: ["CREDENTIALS_DIRECTORY": other.path]) }
        #expect("\(missing)".contains("store-key (the directory holds: storekey)"), "\(missing)")
        // Anything but a missing file is reported as itself (here: a path through a file).
        let blocked = try #require(throws: StoreError.self) {
            try StoreKey.load(keyFile: nil, environment: ["CREDENTIALS_DIRECTORY": other.appendingPathComponent("storekey").path])
        }
        #expect("\(blocked)".contains("Not a directory"), "\(blocked)")
        // A credential that cannot be read says who asked and what the file and its directory
        // allow (here: store-key is a symbolic link to itself, which stat() refuses even to root).
        let odd = dir.url.appendingPathComponent("odd-creds")
        try FileManager.default.createDirectory(at: odd, withIntermediateDirectories: true)
        #expect(symlink("store-key", odd.appendingPathComponent("store-key").path) == 0)
        try FileManager.default.setAttributes([.posixPermissions: 0o510], ofItemAtPath: odd.path)
        let unreadable = try #require(throws: StoreError.self) { try StoreKey.load(keyFile: nil, environment: ["CREDENTIALS_DIRECTORY": odd.path]) }
        let text = "\(unreadable)"
        #expect(text.hasPrefix("store key file \(odd.path)/store-key cannot be read: Too many levels of symbolic links; gaend runs as uid \(getuid())"), "\(text)")
        #expect(text.contains("gid \(getegid()); the file: mode 0777, owner uid \(geteuid()) gid \(getegid()); its directory \(odd.path): a directory, mode 0510, owner uid \(geteuid())"), "\(text)")
    }
}

@Suite("Store creation")
struct StoreCreationTests {
    @Test("a store file killed before its schema was written opens as a new store")
    func emptyFileIsNew() throws {
        let dir = try TempStoreDir()
        // What SQLite leaves after switching to WAL and dying before the first migration.
        let q = try Connection(path: dir.storePath)
        _ = try q.fetchText("PRAGMA journal_mode = WAL")
        try q.close()
        #expect(try FileManager.default.attributesOfItem(atPath: dir.storePath)[.size] as? Int ?? 0 > 0)
        let store = try dir.open()
        try store.recordScan(StressRecords.scan(number: 1))
        #expect(try store.counts().scans == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: dir.storePath)[.posixPermissions] as? Int
        #expect(mode == 0o644 || mode == 0o600) // this file was made by the test, not the store
    }

    @Test("a new store file is private to the daemon's user")
    func newStoreIsPrivate() throws {
        let dir = try TempStoreDir()
        try dir.open().close()
        #expect(try FileManager.default.attributesOfItem(atPath: dir.storePath)[.posixPermissions] as? Int == 0o600)
    }
}
