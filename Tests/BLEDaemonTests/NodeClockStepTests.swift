import DBusCore
import GaendAPI
import ENProtocol
import Foundation
@testable import HCIHost
import Logging
import NodeConfig
import NodeTestSupport
import Testing
@testable import BLEDaemon
@testable import GaenStore

/// The node under a synchronised but wrong clock: +40 days and back keeps today's key and the
/// scans; a jump that holds is genuine and retention follows it; a day whose key is gone gets
/// no second key.
@Suite("Node under clock steps", .serialized)
struct NodeClockStepTests {
    static let w0 = 1_700_000_000.0  // 2023-11-14T22:13:20Z
    static let day0 = UTCDay(unixSeconds: w0)

    func makeNode(_ dir: TempStoreDir) throws -> GaenNode {
        var s = GaendSettings()
        s.controller = .unix(path: dir.url.appendingPathComponent("no-controller").path)
        s.stateDirectory = dir.url.path
        s.storeKeyFile = dir.keyPath
        s.clock.stepConfirmationMinutes = 60
        let clock = ManualClock(wall: Self.w0, monotonic: 100)
        return try GaenNode(settings: s, logger: Logger(label: "test"), clock: clock, sync: FixedClockSync(.synchronized(source: "test")),
                            radio: RadioService.makeRadio(settings: s, clock: clock, logger: Logger(label: "test")))
    }

    func rotate(_ node: GaenNode, wall: Double, monotonic: Double) async {
        await node.schedule.perform(.rotate(AdvertisingSlot(wall: wall)), at: ClockReading(wall: wall, monotonic: monotonic))
    }

    /// Ten scans in the hour before w0.
    func recordScans(_ store: NodeStore) throws {
        for n in 0..<10 {
            let start = Self.w0 - 3_600 + Double(n) * 300
            try store.recordScan(Scan(start: start, end: start + 4, sightings: []))
        }
    }

    @Test("+40 days and back: today's TEK and every scan are kept; the node says clock-suspect meanwhile")
    func fortyDaysAndBack() async throws {
        let dir = try TempStoreDir()
        let node = try makeNode(dir)
        await rotate(node, wall: Self.w0, monotonic: 100)
        let tek = try node.store.key(for: Self.day0)
        try recordScans(node.store)
        await rotate(node, wall: Self.w0 + 40 * 86_400, monotonic: 110)
        #expect(await node.snapshot.status.contains(.clockSuspect))
        #expect(try node.store.counts().scans == 10)
        #expect(try node.store.keys(in: Self.day0...Self.day0).map(\.key) == [tek])
        await rotate(node, wall: Self.w0 + 40 * 86_400 + 700, monotonic: 810)  // still suspect: nothing deleted
        #expect(try node.store.counts().scans == 10)
        // Back to the true time.
        await rotate(node, wall: Self.w0 + 1_000, monotonic: 1_100)
        #expect(!(await node.snapshot.status.contains(.clockSuspect)))
        #expect(try node.store.key(for: Self.day0) == tek)
        #expect(try node.store.counts().scans == 10)
        await node.shutdown()
        // The mark persisted is the true time, not the stepped one.
        #expect(try dir.open().highWaterMark()! < Self.w0 + 86_400)
    }

    @Test("a genuine 40-day gap that holds past the confirmation deletes what retention says; back again, no second key")
    func genuineGap() async throws {
        let dir = try TempStoreDir()
        let node = try makeNode(dir)
        await rotate(node, wall: Self.w0, monotonic: 100)
        let tek = try node.store.key(for: Self.day0)
        try recordScans(node.store)
        let ahead = Self.w0 + 40 * 86_400
        await rotate(node, wall: ahead, monotonic: 200)
        await rotate(node, wall: ahead + 3_600, monotonic: 3_800)  // held for an hour
        #expect(!(await node.snapshot.status.contains(.clockSuspect)))
        #expect(try node.store.counts().scans == 0)
        #expect(try node.store.keys(in: Self.day0...Self.day0).isEmpty)
        // The clock goes back into day 0: its key is gone and no second one is made.
        await rotate(node, wall: Self.w0 + 600, monotonic: 3_900)
        #expect(await node.snapshot.status.contains(.clockSuspect))
        #expect(throws: StoreError.keyDayRetired(day: Self.day0.rawValue)) { try node.store.key(for: Self.day0) }
        #expect(try node.store.keys(in: Self.day0...Self.day0).isEmpty)
        _ = tek
        await node.shutdown()
    }

    @Test("-1 day and +1 day: no second key for either day, nothing deleted early")
    func oneDaySteps() async throws {
        let dir = try TempStoreDir()
        let node = try makeNode(dir)
        await rotate(node, wall: Self.w0, monotonic: 100)
        let k0 = try node.store.key(for: Self.day0)
        await rotate(node, wall: Self.w0 - 86_400, monotonic: 200)
        let kPrev = try node.store.key(for: Self.day0.advanced(by: -1))
        await rotate(node, wall: Self.w0 + 300, monotonic: 300)
        #expect(try node.store.key(for: Self.day0) == k0)
        await rotate(node, wall: Self.w0 + 86_400, monotonic: 400)
        await rotate(node, wall: Self.w0 + 500, monotonic: 500)
        #expect(try node.store.key(for: Self.day0) == k0)
        #expect(try node.store.key(for: Self.day0.advanced(by: -1)) == kPrev)
        #expect(try node.store.keys(in: Self.day0.advanced(by: -1)...Self.day0.advanced(by: 1)).count == 3)
        await node.shutdown()
    }
}
