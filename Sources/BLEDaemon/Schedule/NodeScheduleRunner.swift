import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import Logging
import NodeConfig
import PlatformSupport

/// Runs the node's schedule (`ScheduleDriver` on the node clock) and is its effects on the
/// radio owner: a rotation advertises a beacon made from the day's key in the store, a finished
/// scan is recorded in the store with the RSSI correction in use. It moves the clock mark with
/// every synchronised reading, and keeps the status board's counters and the watchdog's
/// heartbeat. Store writes run on a thread of their own; matching, exports and caller I/O
/// never run here.
package actor NodeScheduleRunner: ScheduleEffects {
    let settings: GaendSettings
    let clock: any NodeClock
    let sync: any ClockSyncSource
    let store: NodeStore
    let radio: RadioOwner
    let calibration: CalibrationInUse
    let clockMark: ClockMark
    let board: NodeStatusBoard
    /// Whether the schedule runs and acts, read by the watchdog without awaiting anyone.
    package nonisolated let heartbeat: ScheduleHeartbeat
    let events: NodeEvents
    let logger: Logger
    private var driverTask: Task<Void, Never>?

    init(settings: GaendSettings, clock: any NodeClock, sync: any ClockSyncSource, store: NodeStore, radio: RadioOwner,
         calibration: CalibrationInUse, clockMark: ClockMark, board: NodeStatusBoard, events: NodeEvents, logger: Logger) {
        self.settings = settings
        self.clock = clock
        self.sync = sync
        self.store = store
        self.radio = radio
        self.calibration = calibration
        self.clockMark = clockMark
        self.board = board
        self.events = events
        self.logger = logger
        heartbeat = ScheduleHeartbeat(rotationMaxMinutes: settings.advertising.rotationMaxMinutes)
    }

    var isRunning: Bool { driverTask != nil }

    /// Starts the schedule's driver (nothing if it runs).
    func start() {
        guard driverTask == nil else { return }
        // Wanted from here on, once the driver runs (or has failed to start), not from the
        // node's construction or the call to Start: until the schedule is started (the radio
        // service starts it once the radio owner runs, which takes seconds on a loaded board)
        // a driver that is not running yet is no fault, and the watchdog was told it was.
        defer { heartbeat.wanted(true) }
        let schedule: NodeSchedule
        do { schedule = try NodeSchedule(settings: settings) } catch {
            logger.error("invalid schedule settings", metadata: ["error": "\(error)"])
            return
        }
        let driver = ScheduleDriver(schedule: schedule, clock: clock, sync: sync, effects: self,
                                    syncCheckInterval: 5, logger: logger)
        heartbeat.driverStarted()
        let logger = self.logger, heartbeat = self.heartbeat
        driverTask = Task {
            do { try await driver.run() } catch {
                logger.error("schedule stopped", metadata: ["error": "\(error)"])
            }
            heartbeat.driverEnded()
        }
    }

    /// Stops the schedule: the scan in progress recorded, advertising off (through the radio
    /// owner, which the radio service stops next), the clock mark kept.
    func stop() async {
        if let task = driverTask {
            task.cancel()
            await task.value
            driverTask = nil
        }
        let clockMark = self.clockMark
        _ = try? await clockMark.save()
    }

    // MARK: Effects

    package func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        // How long after the schedule read the clock the node got to act (node seconds): work
        // that held the node up (it must not: matching, exports and caller I/O run beside it)
        // shows here. A second late is a fault worth a warning; every delay is at debug level.
        let now = clock.monotonicTime().seconds, delay = now - reading.monotonic
        heartbeat.acted(at: now, clockUsable: reading.synchronized)
        let late = CFormat.fixed(delay, decimals: 3)
        if delay > 1 {
            logger.warning("schedule action ran late", metadata: ["actions": "\(actions)", "late.seconds": "\(late)"])
        } else {
            logger.debug("schedule action", metadata: ["actions": "\(actions)", "late.seconds": "\(late)"])
        }
        let usableChanged = board.update { f in
            defer { f.clockUsable = reading.synchronized }
            return f.clockUsable != reading.synchronized
        }
        if usableChanged { await events.statusChanged() }
        if reading.synchronized { await observeClockMark(reading) }
        await radioEffects.perform(actions, at: reading)
        await events.statusChanged()
    }

    package func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        await perform([action], at: reading)
    }

    /// Follows the wall clock into the clock mark; says so when it becomes or stops being
    /// suspect.
    private func observeClockMark(_ reading: ClockReading) async {
        let (suspect, changed) = clockMark.observe(reading)
        guard changed else { return }
        if suspect {
            logger.warning("the clock jumped far ahead of the latest time that held: retention waits until the new time holds",
                           metadata: ["clock.wall": "\(reading.wall)", "clock.heldTime": "\(clockMark.highWater ?? 0)",
                                      "clock.confirmationMinutes": "\(settings.clock.stepConfirmationMinutes)"])
        } else {
            logger.notice("the clock's new time has held (or came back): retention follows it",
                          metadata: ["clock.heldTime": "\(clockMark.highWater ?? 0)"])
        }
        await events.statusChanged()
    }

    /// The radio effects gaend runs (the same as `gaenctl radio` and the benchmark): beacons
    /// from the day's key in the store, finished scans into the store.
    private nonisolated var radioEffects: RadioScheduleEffects {
        let calibration = self.calibration
        return RadioScheduleEffects(radio: radio,
                                    beacon: { [weak self] slot, reading in await self?.beacon(for: slot, now: reading.wall) },
                                    rssiCorrection: { calibration.current.rssiCorrection },
                                    scanned: { [weak self] scan in await self?.record(scan) })
    }

    /// The beacon of `slot`: the day's key from the store (created on first need), the RPI of
    /// the slot's interval, a fresh address. Nil keeps what is on air (or, for a day whose
    /// key is retired, takes it off air).
    private func beacon(for slot: AdvertisingSlot, now: Double) async -> GAENBeacon? {
        // Every store call is awaited: it runs on the store's thread (a FULL fsync can take
        // seconds on a busy disk), never on a cooperative one.
        do { try await clockMark.save() } catch {
            logger.warning("cannot store the clock mark", metadata: ["error": "\(error)"])
        }
        let store = self.store, trusted = clockMark.trustedNow(wall: now)
        _ = try? await store.retain(now: trusted)
        let tek: TemporaryExposureKey
        do {
            tek = try await store.keyStore.key(for: slot.day, now: now)
            board.update { $0.retiredDay = nil }
        } catch StoreError.keyDayRetired(let day) {
            // The clock went back into a day whose key is gone: advertising another day's RPI
            // would be wrong and a second key for the day is never made, so go off air.
            let first = board.update { f in
                defer { f.retiredDay = slot.day }
                return f.retiredDay == nil
            }
            if first { logger.error("\(StoreError.keyDayRetired(day: day))") }
            await radio.stopAdvertising()
            return nil
        } catch {
            // Keep what is on air: a node that cannot store a new day's key must not
            // advertise a key it could not report later.
            board.update { $0.storageProblem = "\(error)" }
            logger.error("cannot get the day's key; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
        do {
            var random = SecureRandom()
            let beacon = try GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: calibration.metadata, random: &random)
            board.update { f in
                f.advertisements += 1
                f.lastBeacon = beacon
            }
            logger.debug("rotating", metadata: ["slot": "\(slot)"])
            return beacon
        } catch {
            logger.error("cannot make the beacon; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Keeps a finished scan (already carrying the RSSI correction in use) in the store.
    private func record(_ record: Scan) async {
        board.update { f in
            f.scans += 1
            f.sightings += UInt64(record.sightings.count)
            f.lastScanEnd = record.end
        }
        do {
            try await store.scanStore.record(record)
            let resumed = board.update { f in
                defer { f.storageProblem = nil }
                return f.storageProblem != nil
            }
            if resumed { logger.info("storing resumed") }
        } catch {
            let first = board.update { f in
                defer { f.storageProblem = "\(error)" }
                return f.storageProblem == nil
            }
            if first { logger.error("cannot store the scan", metadata: ["error": "\(error)"]) }
        }
        await events.scanFinished(record)
    }
}
