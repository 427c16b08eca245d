import ENProtocol
import HCIHost
import Logging
import PlatformSupport

/// Runs the node's schedule: its driver (`ScheduleDriver` on the node clock and the clock-sync
/// check), started by the radio service once the radio owner runs and by Start, stopped by Stop
/// and at shutdown, with the watchdog's heartbeat. What an action does is `effects`'s; the
/// runner only times it (every action feeds the heartbeat, a late one is logged) and passes it
/// on.
package actor NodeScheduleRunner: ScheduleEffects {
    let schedule: NodeSchedule
    let clock: any NodeClock
    let sync: any ClockSyncSource
    package let effects: NodeScheduleEffects
    /// Whether the schedule runs and acts, read by the watchdog without awaiting anyone.
    package nonisolated let heartbeat: ScheduleHeartbeat
    let logger: Logger
    private var driverTask: Task<Void, Never>?

    init(schedule: NodeSchedule, clock: any NodeClock, sync: any ClockSyncSource, effects: NodeScheduleEffects, logger: Logger) {
        self.schedule = schedule
        self.clock = clock
        self.sync = sync
        self.effects = effects
        self.logger = logger
        heartbeat = ScheduleHeartbeat(rotationMaxMinutes: schedule.rotation.maximumSeconds / 60)
    }

    var isRunning: Bool { driverTask != nil }

    /// Starts the schedule's driver (nothing if it runs).
    func start() {
        guard driverTask == nil else { return }
        // Wanted from here on, once the driver runs, not from the node's construction or the
        // call to Start: until the schedule is started (the radio service starts it once the
        // radio owner runs, which takes seconds on a loaded board) a driver that is not running
        // yet is no fault, and the watchdog was told it was.
        defer { heartbeat.wanted(true) }
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
        await effects.stopped()
    }

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
        await effects.perform(actions, at: reading)
    }

    package func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        await perform([action], at: reading)
    }
}
