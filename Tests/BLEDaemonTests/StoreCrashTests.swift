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

/// Fault tests that need another process or the real file system.
@Suite("Store faults", .serialized)
struct StoreFaultTests {
    /// The StoreStress helper is built next to the test bundle (`swift build` builds it).
    static func helper() throws -> URL {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = runner.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("StoreStress")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        throw StoreError.invalidRecord(reason: "StoreStress helper not found near \(runner.path): run `swift build` first")
    }

    /// Reopens the store and checks it thoroughly: SQLite's integrity check, every scan
    /// decrypts and equals the record the helper wrote under its number.
    static func check(_ dir: TempStoreDir) throws -> Int {
        let store = try dir.open()
        defer { _ = try? store.close() }
        let integrity = try store.withWriterForTesting { db in try db.fetchText("PRAGMA integrity_check") }
        #expect(integrity == "ok")
        let scans = try store.scans(from: 0, to: .infinity)
        for (i, s) in scans.enumerated() { #expect(s == StressRecords.scan(number: i + 1)) }
        _ = try store.keys(in: UTCDay(0)...UTCDay(100_000)) // every key opens
        return scans.count
    }

    @Test("kill -9 at random moments loses at most the scan in progress and leaves a store that opens")
    func killNine() async throws {
        let dir = try TempStoreDir()
        try dir.open().close()
        let helper = try Self.helper()
        var confirmed = 0
        var kills = 0
        for round in 0..<10 {
            let p = Process()
            p.executableURL = helper
            p.arguments = [dir.storePath, dir.keyPath]
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            // Odd rounds may kill the child while it opens the store; even rounds wait for its
            // first commit so that a loaded machine still kills it mid-write.
            var early = Data()
            if round % 2 == 0 { early = out.fileHandleForReading.availableData }
            try await Task.sleep(nanoseconds: UInt64.random(in: 50_000_000...400_000_000))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(errText.isEmpty, "helper failed: \(errText)")
            if p.terminationReason == .uncaughtSignal { kills += 1 }
            let lines = String(decoding: early + out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
            let lastPrinted = lines.last { $0.hasPrefix("committed ") }.flatMap { Int($0.dropFirst(10)) } ?? confirmed
            let count = try Self.check(dir)
            // Everything the helper reported committed is there, plus at most the scan it was
            // writing (committed but not yet reported) when it was killed.
            #expect(count >= lastPrinted && count <= lastPrinted + 1, "store has \(count), helper confirmed \(lastPrinted)")
            confirmed = count
        }
        #expect(kills == 10)
        #expect(confirmed > 20)
    }

    @Test("a real full disk (1 MiB tmpfs): named error, then writes resume when space returns",
          .enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
    func realDiskFull() throws {
        let dir = try TempStoreDir()
        let mountPoint = dir.url.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "mount -t tmpfs failed")
        defer {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            umount.arguments = [mountPoint.path]
            try? umount.run()
            umount.waitUntilExit()
        }
        var config = StoreConfiguration(path: mountPoint.appendingPathComponent("store.sqlite").path, maximumBytes: nil)
        config.durability = .full
        let store = try NodeStore(configuration: config, key: dir.key)
        for n in 1...5 { try store.recordScan(StressRecords.scan(number: n)) }
        // Fill the rest of the file system.
        let filler = mountPoint.appendingPathComponent("filler")
        #expect(FileManager.default.createFile(atPath: filler.path, contents: nil))
        let handle = try FileHandle(forWritingTo: filler)
        let chunk = Data(count: 16 * 1024)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try? handle.close()

        var n = 5
        var error: StoreError?
        while error == nil, n < 2000 {
            n += 1
            do { try store.recordScan(StressRecords.scan(number: n)) } catch let e as StoreError { error = e }
        }
        guard case .diskFull(let waiting)? = error else { Issue.record("expected diskFull, got \(String(describing: error))"); return }
        #expect(waiting == 1)
        try FileManager.default.removeItem(at: filler)
        #expect(try store.flushPending() == 1)
        try store.recordScan(StressRecords.scan(number: n + 1))
        let back = try store.scans(from: 0, to: .infinity)
        #expect(back == (1...(n + 1)).map { StressRecords.scan(number: $0) })
        try store.close()
    }
}
