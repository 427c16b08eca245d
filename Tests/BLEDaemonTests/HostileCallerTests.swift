import PlatformSupport
import DBusCore
@testable import ENProtocol
import Foundation
import Logging
import PlatformSupport
import NodeTestSupport
import StoreFixtures
import Testing
@testable import BLEDaemon
@testable import GaenStore
#if canImport(Glibc)
import Glibc
#endif

/// What a hostile app in group gaend can make the node spend: key files within a budget of
/// their own that never costs a sighting, parse memory admitted before it is spent, the store
/// key file and the state directory refused with what they are.
@Suite("Hostile callers (no bus)", .serialized)
struct HostileCallerTests {
    static let now: Double = 1_700_000_000
    static let today = UTCDay(unixSeconds: now)

    static func exportBin(_ count: Int, day: UTCDay = UTCDay(today.rawValue - 1), seed: UInt8 = 0) throws -> Data {
        var keys: [DiagnosisKey] = []
        for i in 0..<count {
            var bytes = Data(count: 16)
            bytes[0] = seed
            bytes[1] = UInt8(i & 0xff)
            bytes[2] = UInt8((i >> 8) & 0xff)
            bytes[3] = UInt8((i >> 16) & 0xff)
            keys.append(DiagnosisKey(key: try TemporaryExposureKey(bytes: bytes), rollingStartIntervalNumber: day.firstInterval))
        }
        return try KeyExportWriter.exportBin(header: KeyExportHeader(startTimestamp: 0, endTimestamp: 1, region: "t"), keys: keys)
    }

    @Test("key files have their own budget: providing them never evicts a scan, and the oldest key files go first")
    func keyFilesNeverEvictSightings() throws {
        let dir = try TempStoreDir()
        let store = try dir.open {
            $0.maximumBytes = 400_000
            $0.keyFileBytes = 1_000_000
        }
        for n in 1...40 { try store.recordScan(StressRecords.scan(number: n, reports: 10)) }
        let scans = try store.scans(from: 0, to: .infinity).count
        #expect(scans == 40)
        // Three files of ~300 KB: 900 KB of key files, beyond the 400 KB bound on the rest.
        var random = SecureRandom()
        let files = try (0..<3).map { _ in (exportBin: try random.bytes(300_000), validUntil: Self.now + 86_400) }
        let ids = try store.addKeyFiles(files, now: Self.now)
        try store.recordScan(StressRecords.scan(number: 41, reports: 10))
        #expect(try store.scans(from: 0, to: .infinity).count == 41)
        // A fourth file: the oldest one goes to make room, the scans stay.
        let more = try store.addKeyFiles([(exportBin: try random.bytes(300_000), validUntil: Self.now + 86_400)], now: Self.now)
        #expect(try store.keyFileIDs() == Array(ids.dropFirst()) + more)
        try store.recordScan(StressRecords.scan(number: 42, reports: 10))
        #expect(try store.scans(from: 0, to: .infinity).count == 42)
    }

    @Test("a zip bomb is refused from its declared size, before it is inflated")
    func zipBombRefusedBeforeInflating() throws {
        let limits = ProvideLimits(keys: KeyAcceptanceLimits(maxExportSize: 1 << 20), maxCallBytes: 4 << 20, totalBytes: 8 << 20)
        let bomb = try KeyExportWriter.zip([("export.bin", Data(KeyExportFile.headerBytes) + Data(count: 8 << 20)), ("export.sig", Data())])
        #expect(bomb.count < 64 << 10)
        let claim = BudgetClaim(ByteBudget(total: limits.totalBytes))
        #expect(throws: NodeError.invalidKeyFile("file 1: export.bin inflates to at least \(16 + (8 << 20)) bytes, more than the limit of \(1 << 20)")) {
            _ = try ExposureNotifications.parseKeyFiles([bomb], trust: KeyExportTrustSet(), limits: limits, now: Self.now, claim: claim)
        }
        #expect(claim.bytes == 0) // nothing was claimed, so nothing was inflated
    }

    @Test("parse memory is admitted before it is spent: per call, and against what other calls hold")
    func parseMemoryAdmitted() throws {
        let bin = try Self.exportBin(2_000)  // ~60 KB
        let limits = ProvideLimits(keys: .default, maxCallBytes: 3 * bin.count, totalBytes: 4 * bin.count)
        // Four files: over the call's bound, refused before parsing.
        #expect(throws: NodeError.self) {
            _ = try ExposureNotifications.parseKeyFiles([bin, bin, bin, bin], trust: KeyExportTrustSet(), limits: limits, now: Self.now)
        }
        // Another call holds 3 files' worth of the budget: two more do not fit.
        let budget = ByteBudget(total: limits.totalBytes)
        let other = BudgetClaim(budget)
        #expect(other.claim(3 * bin.count))
        let mine = BudgetClaim(budget)
        do {
            _ = try ExposureNotifications.parseKeyFiles([bin, bin], trust: KeyExportTrustSet(), limits: limits, now: Self.now, claim: mine)
            Issue.record("accepted beyond the budget")
        } catch let NodeError.limitExceeded(message) {
            #expect(message.contains("in flight"))
        }
        #expect(budget.inUse == 3 * bin.count)
        other.release()
        let parsed = try ExposureNotifications.parseKeyFiles([bin, bin], trust: KeyExportTrustSet(), limits: limits, now: Self.now, claim: mine)
        #expect(parsed.count == 2 && budget.inUse == 2 * bin.count)
        mine.release()
        #expect(budget.inUse == 0)
    }

    @Test("a key starting after tomorrow, a file with no keys, too many keys: InvalidKeyFile naming the file and the key")
    func keyValidityAgainstTheClock() throws {
        let future = try Self.exportBin(3, day: UTCDay(Self.today.rawValue + 2))
        #expect(throws: NodeError.invalidKeyFile("file 2: keys[0]: rolling_start_interval_number \(UTCDay(Self.today.rawValue + 2).firstInterval.rawValue) starts after tomorrow (the latest start now is \(UTCDay(Self.today.rawValue + 1).firstInterval.rawValue), 00:00 UTC tomorrow)")) {
            _ = try ExposureNotifications.parseKeyFiles([try Self.exportBin(1), future], trust: KeyExportTrustSet(), now: Self.now)
        }
        #expect(throws: NodeError.invalidKeyFile("file 1: the file holds no keys")) {
            _ = try ExposureNotifications.parseKeyFiles([try Self.exportBin(0)], trust: KeyExportTrustSet(), now: Self.now)
        }
        let small = ProvideLimits(keys: KeyAcceptanceLimits(maxKeysPerFile: 10, maxKeysPerDay: 10))
        #expect(throws: NodeError.invalidKeyFile("file 1: the file holds 11 keys, more than the 10 a key file may hold")) {
            _ = try ExposureNotifications.parseKeyFiles([try Self.exportBin(11)], trust: KeyExportTrustSet(), limits: small, now: Self.now)
        }
    }

    @Test("a stop reaches parsing: a cancelled call stores nothing")
    func cancelledParse() throws {
        let flag = CancelFlag()
        flag.cancel()
        #expect(throws: NodeError.internalFailure("gaend is stopping: nothing was stored")) {
            _ = try ExposureNotifications.parseKeyFiles([try Self.exportBin(5)], trust: KeyExportTrustSet(), now: Self.now, cancel: flag)
        }
    }

    // MARK: Store key file and state directory

    func expectKeyFileMessage(_ path: String, contains text: String) {
        do {
            _ = try StoreKey.load(file: path, requirePrivate: false)
            Issue.record("\(path) was accepted")
        } catch {
            #expect("\(error)".contains(text), "\(error)")
        }
    }

    @Test("a FIFO as store key file is refused at once, not waited on")
    func fifoStoreKey() throws {
        let dir = try TempStoreDir()
        let fifo = dir.url.appendingPathComponent("key.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let started = ContinuousClock.now
        expectKeyFileMessage(fifo, contains: "is a FIFO (named pipe), not a regular file")
        #expect(started.duration(to: .now) < .seconds(2))
    }

    @Test("an empty or a huge store key file gets a message that says so")
    func emptyAndHugeStoreKey() throws {
        let dir = try TempStoreDir()
        let empty = dir.url.appendingPathComponent("empty.key").path
        #expect(FileManager.default.createFile(atPath: empty, contents: Data(), attributes: [.posixPermissions: 0o600]))
        expectKeyFileMessage(empty, contains: "the file is empty")
        let huge = dir.url.appendingPathComponent("huge.key").path
        #expect(FileManager.default.createFile(atPath: huge, contents: Data(), attributes: [.posixPermissions: 0o600]))
        #expect(truncate(huge, 10 << 30) == 0) // sparse: 10 GiB without the disk
        expectKeyFileMessage(huge, contains: "it is \(10 << 30) bytes")
        expectKeyFileMessage(dir.url.path, contains: "it is a directory")
    }

    @Test("a state directory that is a file gets a message that says so")
    func stateDirectoryIsAFile() throws {
        let dir = try TempStoreDir()
        let file = dir.url.appendingPathComponent("plain").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(throws: NodeError.invalidArgs("state directory \(file) exists but is not a directory")) { try GaenNode.makeStateDirectory(file) }
        #expect(throws: NodeError.invalidArgs("state directory \(file)/sub: \(file) is not a directory")) { try GaenNode.makeStateDirectory(file + "/sub") }
        try GaenNode.makeStateDirectory(dir.url.appendingPathComponent("a/b").path)
    }
}
