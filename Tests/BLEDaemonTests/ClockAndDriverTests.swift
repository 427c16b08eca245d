import ENProtocol
import Foundation
@testable import HCIHost
import NodeConfig
import Testing
import Logging
import NodeTestSupport
import Synchronization
import TrialTime
@testable import BLEDaemon
@testable import GaenStore

@Suite("Clock sync")
struct ClockSyncTests {
    @Test("clock sync: waived, the systemd-timesyncd flag file, and a reason when unsynchronised")
    func clockSync() throws {
        #expect(LinuxClockSync(waived: true).status() == .waived(by: "configuration"))
        #expect(LinuxClockSync(waived: true).status().description == "not checked (waived by configuration)")
        let flag = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-sync-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: flag.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: flag) }
        #expect(LinuxClockSync(timesyncFlagPath: flag.path).status().isUsable)
        // Without the flag the answer is the kernel's; whichever it is, it is explained.
        let status = LinuxClockSync(timesyncFlagPath: flag.path + ".missing").status()
        switch status {
        case .synchronized(let source): #expect(source == "kernel NTP state")
        case .unsynchronized(let reason): #expect(reason.contains("STA_UNSYNC") || reason.contains("adjtimex"))
        case .waived: Issue.record("not waived")
        case .unknown(let reason): Issue.record("no timedated was given, so nothing can be pending: \(reason)")
        }
    }
}

/// Records what the driver asks for, doing what the Node will do with the store.
actor RecordingEffects: ScheduleEffects {
    let store: NodeStore
    let source: AdvertisementSource
    var rotations: [(mono: Double, slot: AdvertisingSlot, advertisement: ExposureNotificationAdvertisement)] = []
    var stops = 0

    init(store: NodeStore) {
        self.store = store
        source = AdvertisementSource(store: store, metadata: .v1_0(txPower: -30))
    }

    func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        do {
            switch action {
            case .rotate(let slot):
                rotations.append((reading.monotonic, slot, try source.advertisement(for: slot, now: reading.wall)))
            case .stopAdvertising: stops += 1
            case .startScan: break
            case .finishScan(let scan):
                try store.recordScan(Scan(start: scan.startWall, end: scan.endWall, sightings: []))
            }
        } catch {
            Issue.record("effect failed: \(error)")
        }
    }
}

@Suite("Schedule driver")
struct ScheduleDriverTests {
    @Test("two simulated days with a backward step across midnight: one TEK per day, every RPI from its day's key")
    func daysOnManualClock() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let start: Double = 1_795_734_000 + 1800 // 23:30 UTC
        let clock = ManualClock(wall: start)
        let effects = RecordingEffects(store: store)
        let driver = ScheduleDriver(schedule: NodeSchedule(), clock: clock, sync: FixedClockSync(.synchronized(source: "test")),
                                    effects: effects, random: SeededRandom(seed: 42), syncCheckInterval: nil)
        let task = Task { try await driver.run() }
        var stepped = false
        while clock.monotonicTime().seconds < 1000 + 2 * 86_400 {
            try await waitForSleepers(clock)
            if !stepped, clock.wallTime() > start + 3600 { // 00:30 of the next day: back to 23:10
                clock.stepWall(by: -4800)
                stepped = true
            }
            clock.advance(to: clock.nextDeadline!)
        }
        try await waitForSleepers(clock)
        task.cancel()
        try await task.value

        let rotations = await effects.rotations
        let gaps = zip(rotations.dropFirst(), rotations).map { $0.mono - $1.mono }
        #expect(gaps.count > 150 && gaps.allSatisfy { (600...1200).contains($0) })
        let days = Set(rotations.map(\.slot.day))
        #expect(days.count == 3)
        #expect(try store.counts().keys == 3)
        // Every advertisement was made from the stored key of its slot's day.
        let keys = Dictionary(uniqueKeysWithValues: try store.keys(in: days.min()!...days.max()!).map { ($0.day, $0.key) })
        let schedule = try GAENKeySchedule()
        for r in rotations {
            #expect(try schedule.rollingProximityIdentifier(for: keys[r.slot.day]!, interval: r.slot.interval) == r.advertisement.rpi)
        }
        // The first day's key was used again after the backward step, not replaced.
        let firstDay = UTCDay(unixSeconds: start)
        let firstDayUses = rotations.enumerated().filter { $0.element.slot.day == firstDay }.map(\.offset)
        #expect(firstDayUses.count > 3 && firstDayUses != Array(0..<firstDayUses.count))
        // Every scan was recorded, none with a negative duration, and stopping ended advertising.
        let scans = try store.scans(from: 0, to: .infinity)
        #expect(scans.count > 2 * 288 && scans.allSatisfy { $0.end >= $0.start })
        #expect(await effects.stops == 1)
    }
}

@Suite("Settings to node core")
struct SettingsBridgeTests {
    @Test("the default settings give the reference schedule and a 14-day store")
    func defaults() throws {
        let s = GaendSettings()
        let schedule = try NodeSchedule(settings: s)
        #expect(schedule.rotation == RotationPolicy())
        #expect(schedule.scan == .default)
        let store = StoreConfiguration(settings: s)
        #expect(store.path == "/var/lib/gaend/store.sqlite" && store.retentionDays == 14 && store.maximumBytes == 512 << 20)
        #expect(try s.makeClock() is SystemClock)
        var fast = s
        fast.timeScale = 60
        #expect(fast.makeClockSync().status() == .waived(by: "--time-scale 60"))
        fast.scanning.mode = .fixed
        fast.scanning.fixedPeriodSeconds = 60
        #expect(try NodeSchedule(settings: fast).scan.cadence == .fixedPeriod(60))
    }

    @Test("trial_clock: the node's clock is the file's trial clock, read as the node starts; not with a time scale; a bad file stops it with the reason")
    func trialClock() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("node-trial-clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("clock").path
        let real = ManualClock(wall: TrialClock.isoTime("2026-11-28T18:40:00Z")! + 30)
        try Data(TrialClock(scale: 480, realEpoch: real.wallTime() - 30, trialEpoch: TrialClock.isoTime("2026-03-02T00:00:00Z")!, now: real.wallTime()).text.utf8)
            .write(to: URL(fileURLWithPath: file))
        var s = try ConfigLoader.parse("trial_clock: \(file)\n")
        #expect(s.trialClockFile == file)
        let clock = try #require(try s.makeClock(base: real) as? ScaledClock)
        #expect(clock.factor == 480 && TrialClock.isoTime(clock.wallTime()) == "2026-03-02T04:00:00Z")
        #expect(s.makeClockSync().status() == .waived(by: "trial clock \(file)"))
        s.timeScale = 20
        #expect(throws: ConfigError.self) { try s.makeClock(base: real) }
        s.timeScale = 1
        // Ten seconds before its real epoch: the trial has not started.
        let early = ManualClock(wall: real.wallTime() - 40)
        #expect { try s.makeClock(base: early) } throws: { "\($0)".contains("real_epoch 2026-11-28T18:40:00Z is in the future") }
    }
}

/// A sync source a test flips.
final class SwitchableSync: ClockSyncSource, Sendable {
    private let synced = Mutex(false)
    func set(_ v: Bool) { synced.withLock { $0 = v } }
    func status() -> ClockSyncStatus { synced.withLock { $0 } ? .synchronized(source: "test") : .unsynchronized(reason: "test") }
}

@Suite("Schedule driver and clock sync")
struct DriverSyncTests {
    @Test("nothing is advertised or scanned until the clock is synchronised; losing sync stops advertising")
    func waitsForSync() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let clock = ManualClock(wall: 1_795_734_000)
        let sync = SwitchableSync()
        let effects = RecordingEffects(store: store)
        let driver = ScheduleDriver(schedule: NodeSchedule(), clock: clock, sync: sync, effects: effects,
                                    random: SeededRandom(seed: 1), syncCheckInterval: 30)
        let task = Task { try await driver.run() }
        try await clock.run(for: 3600)
        #expect(await effects.rotations.isEmpty)
        #expect(try store.counts().scans == 0 && store.counts().keys == 0)
        sync.set(true)
        try await clock.run(for: 3600)
        let rotations = await effects.rotations.count
        #expect((3...7).contains(rotations))
        #expect(try store.counts().scans >= 10)
        sync.set(false)
        try await clock.run(for: 60) // noticed within the 30 s sync check
        #expect(await effects.stops == 1)
        let scans = try store.counts().scans
        try await clock.run(for: 3600)
        #expect(await effects.rotations.count == rotations)
        #expect(try store.counts().scans <= scans + 1)
        task.cancel()
        try await task.value
    }
}

/// A sync source whose answer is not known until a test gives it one.
final class PendingSync: ClockSyncSource, Sendable {
    private let known = Mutex(false)
    func answer() { known.withLock { $0 = true } }
    func status() -> ClockSyncStatus {
        known.withLock { $0 } ? .synchronized(source: "test") : .unknown(reason: "systemd-timedated: not asked yet")
    }
}

@Suite("Schedule driver while the clock-sync state is not known")
struct DriverUnknownSyncTests {
    @Test("an unknown sync state is a notice at once, a warning only after the grace, and its answer starts the node within a second")
    func unknownIsNotAWarningAtFirst() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let clock = ManualClock(wall: 1_795_734_000)
        let sync = PendingSync()
        let effects = RecordingEffects(store: store)
        let log = CapturedLog()
        let driver = ScheduleDriver(schedule: NodeSchedule(), clock: clock, sync: sync, effects: effects,
                                    random: SeededRandom(seed: 1), syncCheckInterval: 30, logger: log.logger)
        let task = Task { try await driver.run() }
        try await clock.run(for: 30)
        #expect(log.all.filter { $0.0 >= .warning }.isEmpty, "\(log.all)")
        #expect(log.all.contains { $0.0 == .notice && $0.1.contains("not known yet") })
        #expect(await effects.rotations.isEmpty)
        try await clock.run(for: 40)
        let warnings = log.all.filter { $0.0 >= .warning }.map(\.1)
        #expect(warnings.count == 1 && warnings[0].contains("still not known after 60 s"), "\(warnings)")
        sync.answer()
        try await clock.run(for: 1.5)
        #expect(await effects.rotations.count == 1)
        #expect(log.all.contains { $0.1 == "clock usable" })
        task.cancel()
        try await task.value
    }
}
