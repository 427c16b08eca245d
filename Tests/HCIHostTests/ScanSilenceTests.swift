import ENProtocol
import Foundation
@testable import HCIHost
import NodeTestSupport
import HCIProtocol
import Logging
import Testing

/// The empty-scan detector against a scripted controller on the manual clock: periodic 4 s
/// scans every 250 s, first a history of scans that heard advertisers, then scans that hear
/// nothing. A starved host (scans on air late, ended late, reports reaching the owner after
/// the scan) must not restart the controller; a deaf controller must, and a restart after
/// which it is still deaf is retried with backoff and reported until a report arrives.
@Suite("Scan silence")
struct ScanSilenceTests {
    let log = CapturedLog(level: .info)

    /// The stall watch never wakes in these tests (periodic scans; its own tests are apart),
    /// so the only timers are the ones the test moves.
    func start(_ clock: ManualClock, backoff: RestartBackoff = RestartBackoff()) async throws -> (RadioOwner, ScriptedConnector) {
        let connector = ScriptedConnector()
        var config = HCISessionConfiguration()
        config.reconnectInitialDelay = .milliseconds(100)
        let session = HCIControllerSession(connector: connector, configuration: config, clock: ScaledSleeper(scale: 0.01), logger: log.logger)
        try await session.start()
        var owner = RadioOwner.Configuration()
        owner.scanStallSeconds = 10_000_000
        owner.restartBackoff = backoff
        let radio = RadioOwner(clock: clock, configuration: owner, logger: log.logger)
        await radio.attach(session)
        return (radio, connector)
    }

    static let gaen: [UInt8] = {
        let rpi = try! RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
        let aem = try! AssociatedEncryptedMetadata(hex: "01020304")
        return [UInt8](ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData)
    }()

    /// An advertiser on air, as the controller reports it.
    func report(_ c: ScriptedController) {
        let sender = try! BDAddress(string: "12:34:56:78:9A:BC")
        c.inject(HCIEvent.leMeta(.advertisingReport(HCILEAdvertisingReportEvent(reports: [
            .init(eventType: .advNonconnInd, addressType: .random, address: sender, data: Self.gaen, rssi: -60)]))).packet)
    }

    /// One periodic scan of 4 s: `onAirLate` node seconds pass between its planned start and
    /// the owner turning scanning on, `endLate` between its planned end and the owner ending
    /// it; `reports` reach the owner during it, `lateReports` only after it ended (a host
    /// behind). Then the 246 s to the next scan pass.
    func scan(_ radio: RadioOwner, _ connector: ScriptedConnector, _ clock: ManualClock,
              reports: Int = 0, onAirLate: Double = 0, endLate: Double = 0, lateReports: Int = 0) async throws {
        let window = ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 4)
        clock.advance(by: onAirLate)
        await radio.startScan(window)
        let c = connector.current
        let received = await radio.snapshot.reportsReceived
        for _ in 0..<reports { report(c) }
        try await waitUntil { await radio.snapshot.reportsReceived == received + UInt64(reports) }
        clock.advance(by: 4 - onAirLate + endLate)
        _ = await radio.finishScan(window.completed(atMonotonic: clock.monotonicTime().seconds))
        for _ in 0..<lateReports { report(c) }
        try await waitUntil { await radio.snapshot.reportsReceived == received + UInt64(reports + lateReports) }
        clock.advance(by: 246 - endLate)
    }

    /// Waits until the owner has taken the controller back after restart number `restarts`
    /// (the next scan must find it running, or it never reaches the air).
    func restored(_ restarts: Int) async throws {
        try await waitUntil { log.all.filter { $0.1 == "controller reset; restoring advertising and scanning" }.count == restarts }
    }

    /// Six scans that heard advertisers: the history that makes later silence suspicious.
    func busyHistory(_ radio: RadioOwner, _ connector: ScriptedConnector, _ clock: ManualClock) async throws {
        for n in 1...6 { try await scan(radio, connector, clock, reports: n) }
    }

    @Test("a starved host (scans on air late, ended late, reports reaching the owner after the scan) with advertisers on air does not restart the controller")
    func starvedHostIsNotDeaf() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await start(clock)
        try await busyHistory(radio, connector, clock)
        // Ten scans on a host at load 8: none saw its reports in time.
        for i in 0..<10 {
            switch i % 3 {
            case 0: try await scan(radio, connector, clock, onAirLate: 2.5)                 // on air for 1.5 of 4 s
            case 1: try await scan(radio, connector, clock, endLate: 3, lateReports: 2)    // reports arrived after its end
            default: try await scan(radio, connector, clock, onAirLate: 1.5, endLate: 2, lateReports: 1)
            }
        }
        let status = await radio.snapshot
        #expect(status.scansCompleted == 16)
        #expect(connector.controllers.count == 1, "the controller was restarted for a starved host")
        #expect(status.stallRecoveries == 0)
        #expect(status.scanRecovery == nil)
        #expect(!log.all.contains { $0.1.contains("restarting the controller") }, "\(log.all)")
        await radio.stop()
    }

    @Test("on-time scans with reports arriving only after each one ended are heard, not empty")
    func lateReportsCountForTheirScan() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await start(clock)
        try await busyHistory(radio, connector, clock)
        for _ in 0..<6 { try await scan(radio, connector, clock, lateReports: 1) }
        #expect(connector.controllers.count == 1)
        #expect(await radio.snapshot.scanRecovery == nil)
        await radio.stop()
    }

    @Test("a deaf controller (three on-time scans empty after a busy history) is restarted; so after a few late scans, with more evidence")
    func deafControllerIsRestarted() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await start(clock)
        try await busyHistory(radio, connector, clock)
        try await scan(radio, connector, clock)
        try await scan(radio, connector, clock)
        #expect(connector.controllers.count == 1, "two empty scans are not yet evidence")
        try await scan(radio, connector, clock)
        try await waitUntil { connector.controllers.count == 2 }
        let status = await radio.snapshot
        #expect(status.stallRecoveries == 1)
        let recovery = try #require(status.scanRecovery)
        #expect(recovery.attempts == 1 && recovery.failures == 0 && recovery.reason == "scans empty")
        #expect(log.all.contains { $0 == (.error, "scans keep coming back empty where they used to see advertisers; restarting the controller") })

        // Another node: the host was late for two scans among the empty ones, so five
        // on-time empty scans are needed (three, plus one per late scan).
        let clock2 = ManualClock(wall: 1_795_000_000)
        let (radio2, connector2) = try await start(clock2)
        try await busyHistory(radio2, connector2, clock2)
        try await scan(radio2, connector2, clock2)
        try await scan(radio2, connector2, clock2, endLate: 3)
        try await scan(radio2, connector2, clock2)
        try await scan(radio2, connector2, clock2, onAirLate: 2)
        for _ in 0..<2 { try await scan(radio2, connector2, clock2) }
        #expect(connector2.controllers.count == 1, "four on-time empty scans with two late ones among them are not yet evidence")
        try await scan(radio2, connector2, clock2)
        try await waitUntil { connector2.controllers.count == 2 }
        await radio.stop()
        await radio2.stop()
    }

    @Test("a restart that leaves the controller deaf is reported and retried with doubling backoff; the first report clears it")
    func failedRecoveryIsRetriedWithBackoff() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await start(clock, backoff: RestartBackoff(initial: 1000, maximum: 1500))
        try await busyHistory(radio, connector, clock)
        for _ in 0..<3 { try await scan(radio, connector, clock) }
        try await waitUntil { connector.controllers.count == 2 }
        let first = try #require(await radio.snapshot.scanRecovery)
        try await restored(1)

        // Still deaf: three scans (750 s) show the restart failed; the backoff (1000 s) holds
        // the next restart back until the fourth.
        for _ in 0..<3 { try await scan(radio, connector, clock) }
        var recovery = try #require(await radio.snapshot.scanRecovery)
        #expect(recovery.attempts == 1 && recovery.failures == 1)
        #expect(connector.controllers.count == 2, "restarted again before the backoff passed")
        #expect(log.all.contains { $0 == (.error, "the controller restart did not bring reports back; restarting it again with backoff") })
        try await scan(radio, connector, clock)
        try await waitUntil { connector.controllers.count == 3 }
        recovery = try #require(await radio.snapshot.scanRecovery)
        #expect(recovery.attempts == 2 && recovery.since == first.since)
        #expect(recovery.nextAttempt - (clock.monotonicTime().seconds - 246) == 1500, "the backoff doubled to its maximum")
        #expect(log.all.contains { $0 == (.error, "scanning still hears nothing; restarting the controller again") })
        try await restored(2)

        // Deaf through the next 1500 s: restarted once more, not at every empty scan.
        for _ in 0..<6 { try await scan(radio, connector, clock) }
        try await waitUntil { connector.controllers.count == 4 }
        #expect(await radio.snapshot.scanRecovery?.attempts == 3)
        try await restored(3)

        // The controller hears again: the episode ends at its first report.
        try await scan(radio, connector, clock, reports: 2)
        #expect(await radio.snapshot.scanRecovery == nil)
        #expect(log.all.contains { $0 == (.notice, "scanning hears advertisers again") })
        #expect(connector.controllers.count == 4)
        await radio.stop()
    }

    // MARK: Continuous scanning (the stall detector)

    /// An owner scanning continuously whose stall watch looks every 2 node seconds (a stall:
    /// at least 8 s without a report), after ten reports half a second apart.
    func continuous(_ clock: ManualClock, backoff: RestartBackoff) async throws -> (RadioOwner, ScriptedConnector) {
        let connector = ScriptedConnector()
        var config = HCISessionConfiguration()
        config.reconnectInitialDelay = .milliseconds(100)
        let session = HCIControllerSession(connector: connector, configuration: config, clock: ScaledSleeper(scale: 0.01), logger: log.logger)
        try await session.start()
        var owner = RadioOwner.Configuration()
        owner.scanStallSeconds = 8
        owner.restartBackoff = backoff
        let radio = RadioOwner(clock: clock, configuration: owner, logger: log.logger)
        await radio.attach(session)
        await radio.startScan(ScanWindow(startWall: clock.wallTime(), startMonotonic: clock.monotonicTime().seconds, duration: 300))
        for n in 1...10 {
            clock.advance(by: 0.5)
            report(connector.current)
            try await waitUntil { await radio.snapshot.reportsReceived == UInt64(n) }
        }
        return (radio, connector)
    }

    /// Moves the clock from one sleeper's deadline to the next (each timer wakes on time) until
    /// `condition` holds; false after `limit` node seconds.
    func advance(_ clock: ManualClock, limit: Double, until condition: @Sendable () async -> Bool) async throws -> Bool {
        let end = clock.monotonicTime().seconds + limit
        while clock.monotonicTime().seconds < end {
            if await condition() { return true }
            try await waitForSleepers(clock)
            clock.advance(to: clock.nextDeadline!)
            try await waitForSleepers(clock)
        }
        return await condition()
    }

    @Test("continuous scanning: a stall timer that woke late judges nothing; a silence seen on time re-enables scanning, then restarts the controller")
    func lateStallTimerJudgesNothing() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await continuous(clock, backoff: RestartBackoff())
        // The host stalls for 30 s: the watch wakes 28 s late, with the silence well past 8 s.
        try await waitForSleepers(clock)
        clock.advance(by: 30)
        try await waitForSleepers(clock)
        #expect(!log.all.contains { $0.1 == "scanning went silent; enabling it again" }, "judged on a late timer")
        #expect(await radio.snapshot.stallRecoveries == 0)
        // Timers on time again, still silent: re-enabled, then the controller restarted.
        #expect(try await advance(clock, limit: 10) { log.all.contains { $0.1 == "scanning went silent; enabling it again" } })
        // The owner's decision (the reconnect itself runs in real time).
        #expect(try await advance(clock, limit: 20) { await radio.snapshot.scanRecovery != nil })
        try await waitUntil { connector.controllers.count == 2 }
        #expect(await radio.snapshot.scanRecovery?.reason == "scanning silent")
        await radio.stop()
    }

    @Test("continuous scanning: a restart after which scanning stays silent is reported and retried after the backoff, not at every stall")
    func continuousRestartBackoff() async throws {
        let clock = ManualClock(wall: 1_795_000_000)
        let (radio, connector) = try await continuous(clock, backoff: RestartBackoff(initial: 100, maximum: 400))
        #expect(try await advance(clock, limit: 40) { await radio.snapshot.scanRecovery?.attempts == 1 })
        try await waitUntil { connector.controllers.count == 2 }
        try await restored(1)
        let first = try #require(await radio.snapshot.scanRecovery)
        // Silent again: re-enabled, then the restart is found to have failed; the next waits.
        #expect(try await advance(clock, limit: 60) {
            log.all.contains { $0.1 == "the controller restart did not bring reports back; restarting it again with backoff" } })
        #expect(connector.controllers.count == 2 && clock.monotonicTime().seconds < first.nextAttempt)
        #expect(await radio.snapshot.scanRecovery?.failures == 1)
        #expect(try await advance(clock, limit: 200) { await radio.snapshot.scanRecovery?.attempts == 2 })
        try await waitUntil { connector.controllers.count == 3 }
        #expect(clock.monotonicTime().seconds >= first.since + 100, "restarted again before the backoff passed")
        let second = try #require(await radio.snapshot.scanRecovery)
        #expect(second.attempts == 2 && second.since == first.since)
        #expect(second.nextAttempt - clock.monotonicTime().seconds <= 200 && second.nextAttempt - clock.monotonicTime().seconds > 100,
                "the backoff doubled: \(second)")
        try await restored(2)
        // The controller hears again.
        report(connector.current)
        try await waitUntil { await radio.snapshot.scanRecovery == nil }
        await radio.stop()
    }
}
