import ENProtocol
import Foundation
@testable import HCIHost
import NodeTestSupport
import HCIProtocol
import Logging
import Testing

/// The radio owner against a scripted controller that refuses LE Set Random Address while
/// scanning or advertising (Core Vol 4 Part E 7.8.4, as the Pi's controllers do).
@Suite("Radio owner")
struct RadioOwnerTests {
    let logger = Logger(label: "test.radio")

    func start(_ clock: ManualClock, configure: @escaping @Sendable (ScriptedController) -> Void = { _ in },
               owner configuration: RadioOwner.Configuration = .init()) async throws -> (RadioOwner, ScriptedConnector, HCIControllerSession) {
        let connector = ScriptedConnector(configure: configure)
        var config = HCISessionConfiguration()
        config.reconnectInitialDelay = .milliseconds(100)
        let session = HCIControllerSession(connector: connector, configuration: config, clock: ScaledSleeper(scale: 0.01), logger: logger)
        try await session.start()
        let owner = RadioOwner(clock: clock, configuration: configuration, logger: logger)
        await owner.attach(session)
        return (owner, connector, session)
    }

    /// A connector whose connect takes a while (a UART controller's bring-up, a slow USB reset).
    struct SlowConnector: HCITransportConnector {
        let inner: ScriptedConnector
        let delay: Duration
        var description: String { "slow scripted" }
        func connect() async throws -> any HCITransport {
            try? await Task.sleep(for: delay)
            return try await inner.connect()
        }
    }

    @Test("stop() during the controller's bring-up stops that session too (it was never attached): stop returns")
    func stopDuringBringUp() async throws {
        let inner = ScriptedConnector()
        let owner = RadioOwner(clock: ManualClock(wall: 1_795_000_000), configuration: .init(), logger: logger)
        await owner.start(connector: SlowConnector(inner: inner, delay: .milliseconds(300)), configuration: HCISessionConfiguration())
        try await Task.sleep(for: .milliseconds(50))
        actor Flag { var set = false; func raise() { set = true } }
        let stopped = Flag()
        Task { await owner.stop(); await stopped.raise() }
        // Bounded: a stop() that hangs fails here instead of hanging the test run.
        let deadline = ContinuousClock.now + .seconds(10)
        while !(await stopped.set), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await stopped.set, "stop() did not return within 10 s")
        // The session brought up after stop() was asked for is closed, not left reading.
        try await waitUntil { inner.controllers.count == 1 && inner.current.isClosed }
        #expect(await owner.snapshot.controller == RadioOwner.ControllerState.missing)
    }

    /// A connector with no controller behind it (unplugged, or taken by another host).
    struct MissingConnector: HCITransportConnector {
        var description: String { "missing" }
        func connect() async throws -> any HCITransport { throw HCISessionError.notRunning(state: "no controller") }
    }

    @Test("the first bring-up ends only once the controller is held, or found missing (readiness waits for it)")
    func firstBringUpEnds() async throws {
        let inner = ScriptedConnector()
        let owner = RadioOwner(clock: ManualClock(wall: 1_795_000_000), configuration: .init(), logger: logger)
        #expect(await owner.firstBringUpEnded == false)
        await owner.start(connector: SlowConnector(inner: inner, delay: .milliseconds(300)), configuration: HCISessionConfiguration())
        try await Task.sleep(for: .milliseconds(50))
        #expect(await owner.firstBringUpEnded == false, "ended while the controller was still being opened")
        try await waitUntil { await owner.firstBringUpEnded }
        #expect(await owner.snapshot.controller == .active)
        await owner.stop()

        let missing = RadioOwner(clock: ManualClock(wall: 1_795_000_000), configuration: .init(), logger: logger)
        await missing.start(connector: MissingConnector(), configuration: HCISessionConfiguration(), retry: .seconds(60))
        try await waitUntil { await missing.firstBringUpEnded }
        #expect(await missing.snapshot.controller == .missing)
        await missing.stop()
    }

    func beacon(_ n: UInt8) -> Beacon {
        Beacon(address: BDAddress(littleEndian: [n, 2, 3, 4, 5, 0x3F & n]), advertisingData: [2, 1, 0x1A, n])
    }

    static let rotationWhileScanning: [HCIOpcode] = [
        HCILESetScanEnable.opcode,              // pause scanning (7.8.4)
        HCILESetAdvertisingEnable.opcode,       // advertising off
        HCILESetRandomAddress.opcode,
        HCILESetAdvertisingParameters.opcode,
        HCILESetAdvertisingData.opcode,
        HCILESetAdvertisingEnable.opcode,       // advertising on
        HCILESetScanParameters.opcode,
        HCILESetScanEnable.opcode,              // scanning resumed
    ]

    @Test("a rotation while scanning pauses scanning, changes address and data, and resumes, in the order 7.8.4 allows")
    func rotationOrder() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (owner, connector, session) = try await start(clock)
        let c = connector.current
        await owner.startScan(ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 300))
        await owner.advertise(beacon(1))
        #expect(c.advertising && c.scanning)
        for n in 2...5 as ClosedRange<UInt8> {
            let before = c.sent.count
            await owner.advertise(beacon(n))
            let sent = Array(c.sent[before...])
            #expect(sent.compactMap { try? HCICommandPacket($0).opcode } == Self.rotationWhileScanning)
            let address = try HCILESetRandomAddress(parameters: HCICommandPacket(sent[2]).parameters[...]).address
            #expect(address == beacon(n).address)
        }
        let status = await owner.snapshot
        #expect(status.advertisingOnAir && status.scanningOnAir && status.advertisingAddress == beacon(5).address)
        #expect(status.rotations == 5 && status.failedOperations == 0 && !status.retrying)
        #expect(c.advertising && c.scanning)
        await owner.stop()
        #expect(await session.state == .stopped)
    }

    @Test("a rotation that fails anyway is retried at once with backoff, with the same beacon, until on air")
    func retry() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (owner, connector, _) = try await start(clock)
        let c = connector.current
        await owner.advertise(beacon(1))
        c.failNext(HCILESetAdvertisingEnable.opcode, status: .controllerBusy, count: 3) // the first three attempts
        await owner.advertise(beacon(2))
        var status = await owner.snapshot
        #expect(!status.advertisingOnAir && status.retrying && status.failedOperations == 1)
        // Backoff 0.25 s, then 0.5 s, then 1 s of node time: the fourth attempt succeeds.
        for (step, failures) in [(0.25, 2), (0.5, 3), (1.0, 3)] {
            try await waitForSleepers(clock, 2) // the retry and the stall watch
            clock.advance(by: step)
            try await waitUntil { await owner.snapshot.failedOperations == UInt64(failures) }
        }
        try await waitUntil { await owner.snapshot.advertisingOnAir }
        status = await owner.snapshot
        #expect(status.advertisingAddress == beacon(2).address && !status.retrying && status.failedOperations == 3)
        #expect(status.rotations == 2, "retries of one beacon are one rotation")
        #expect(status.failedRotations == 3, "each failed attempt left the wanted beacon off air")
        // Off air from the first failure to the fourth attempt (0.25 + 0.5 + 1 s), then on air.
        clock.advance(by: 10)
        let air = await owner.snapshot.airTime.totals(at: clock.monotonicTime().seconds)
        #expect(air.offAir == 1.75 && air.onAir == 10, "\(air)")
        let addresses = c.sent.filter { (try? HCICommandPacket($0).opcode) == HCILESetRandomAddress.opcode }
            .map { try! HCILESetRandomAddress(parameters: HCICommandPacket($0).parameters[...]).address }
        #expect(addresses == [beacon(1).address, beacon(2).address], "the retry reuses the address already set")
        #expect(c.advertising)
        await owner.stop()
    }

    @Test("air time: each interval counts for the state recorded at its start; idle counts for neither; a reading adds the open interval")
    func airTimeLedger() {
        var ledger = AirTimeLedger()
        #expect(ledger.totals(at: 50) == (0, 0))
        ledger.advance(to: 100, state: .onAir)
        ledger.advance(to: 160, state: .offAir)
        #expect(ledger.totals(at: 175) == (60, 15))
        ledger.advance(to: 190, state: .idle)
        ledger.advance(to: 500, state: .onAir)
        #expect(ledger.totals(at: 510) == (70, 30))
        // A reading before the last advance (never on a monotonic clock) adds nothing.
        #expect(ledger.totals(at: 400) == (60, 30))
    }

    @Test("after a controller reset both roles are restored with the same beacon")
    func restoreAfterReset() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (owner, connector, _) = try await start(clock)
        await owner.startScan(ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 300))
        await owner.advertise(beacon(7))
        connector.current.endOfStream()
        try await waitUntil { connector.controllers.count == 2 && connector.current.advertising && connector.current.scanning }
        let restored = connector.current.sent.compactMap { try? HCICommandPacket($0) }
        let address = try #require(restored.first { $0.opcode == HCILESetRandomAddress.opcode })
        #expect(try HCILESetRandomAddress(parameters: address.parameters[...]).address == beacon(7).address)
        try await waitUntil { let s = await owner.snapshot; return s.advertisingOnAir && s.scanningOnAir }
        #expect(await owner.snapshot.rotations == 1)
        await owner.stop()
    }

    @Test("after a wall-clock step backwards mid-scan every report time lies inside its scan; only GAEN reports are kept, the rest counted; the buffer is bounded")
    func stampingAndFilter() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        var configuration = RadioOwner.Configuration()
        configuration.maximumSightingsPerScan = 4
        let (owner, connector, _) = try await start(clock, owner: configuration)
        let c = connector.current
        let window = ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 60)
        await owner.startScan(window)
        let rpi = try RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
        let aem = try AssociatedEncryptedMetadata(hex: "01020304")
        let gaen = [UInt8](ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData)
        let sender = try BDAddress(string: "12:34:56:78:9A:BC")
        func inject(_ data: [UInt8]) {
            let event = HCIEvent.leMeta(.advertisingReport(HCILEAdvertisingReportEvent(reports: [
                .init(eventType: .advNonconnInd, addressType: .random, address: sender, data: data, rssi: -60)])))
            c.inject(event.packet)
        }
        var expected = 0
        for i in 0..<6 {
            clock.advance(by: 5)
            if i == 2 { clock.stepWall(by: -3600) } // NTP steps the clock back an hour mid-scan
            inject(gaen)
            inject([2, 1, 6]) // not GAEN
            expected += 2
            let target = UInt64(expected)
            try await waitUntil { await owner.snapshot.reportsReceived == target }
        }
        clock.advance(by: 5)
        let record = try #require(await owner.finishScan(window.completed(atMonotonic: clock.monotonicTime().seconds)))
        #expect(record.start == window.startWall && record.end == window.startWall + 35)
        #expect(record.sightings.count == 4)
        #expect(record.sightings.allSatisfy { $0.time >= record.start && $0.time <= record.end })
        #expect(record.sightings.map(\.time) == [5, 10, 15, 20].map { window.startWall + $0 })
        #expect(record.sightings.allSatisfy { $0.advertiser == sender && $0.rpi == rpi && $0.aem == aem && $0.rssi == -60 })
        let status = await owner.snapshot
        #expect(status.reportsIgnored == 6 && status.reportsDropped == 2 && status.scansCompleted == 1)
        try await waitUntil { !c.scanning } // scanning goes off after a scan that is not followed by another
        await owner.stop()
    }
}

extension RadioOwnerTests {
    @Test("continuous scanning: a record boundary that coincides with a rotation keeps scanning on, and the rotation pauses it as any other")
    func boundaryWithRotation() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (owner, connector, _) = try await start(clock)
        let c = connector.current
        let tek = try TemporaryExposureKey(hex: "75c734c6dd1a782de7a965da5eb93125")
        let effects = RadioScheduleEffects(radio: owner, beacon: { slot, _ in
            var random = SeededRandom(seed: UInt64(slot.interval.rawValue))
            return try? GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: .v1_0(txPower: -20), random: &random)
        })
        func reading() -> ClockReading { clock.reading(synchronized: true) }
        let first = ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 4)
        await effects.perform([.rotate(AdvertisingSlot(wall: clock.wallTime())), .startScan(first)], at: reading())
        clock.advance(by: 4)
        let next = ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 4)
        let before = c.sent.count
        // What NodeSchedule.advance returns when a scan's end and a rotation fall due together.
        await effects.perform([.finishScan(first.completed(atMonotonic: clock.monotonicTime().seconds)),
                               .rotate(AdvertisingSlot(wall: clock.wallTime() + 600)), .startScan(next)], at: reading())
        let sent = Array(c.sent[before...]).compactMap { try? HCICommandPacket($0).opcode }
        #expect(sent == Self.rotationWhileScanning)
        let status = await owner.snapshot
        #expect(status.scanningOnAir && status.advertisingOnAir && status.rotations == 2 && status.scansCompleted == 1)
        await owner.stop()
    }
}

/// Polls `condition` (the owner works on its own tasks) for up to 30 s.
func waitUntil(_ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(2))
    }
    #expect(try await condition(), "condition not met within 30 s")
}
