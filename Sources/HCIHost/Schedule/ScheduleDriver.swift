import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// What the node does when the schedule says so. The Node wires this to the radio (rotate,
/// stop advertising, scan) and the store (record the finished scan).
package protocol ScheduleEffects: Sendable {
    func perform(_ action: ScheduleAction, at reading: ClockReading) async
    /// The actions due at one reading, in order. The default performs them one by one; the
    /// radio effects look at them together (a scan that ends as the next starts keeps the
    /// controller scanning).
    func perform(_ actions: [ScheduleAction], at reading: ClockReading) async
}

extension ScheduleEffects {
    package func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        for action in actions { await perform(action, at: reading) }
    }
}

/// Runs the pure `NodeSchedule` on an injected clock: reads the clock and the sync state,
/// performs the actions due, sleeps until the next deadline. The same policy runs in
/// `gaenctl simulate` without this driver.
package actor ScheduleDriver {
    private var schedule: NodeSchedule
    private var random: AnyRandomBytes
    private let clock: any NodeClock
    private let sync: any ClockSyncSource
    private let effects: any ScheduleEffects
    private let logger: Logger
    /// Longest sleep between looks at the clock-sync state, so losing or gaining sync is
    /// noticed within this many (clock) seconds even when no timer is due.
    private let syncCheckInterval: Double?

    package init(schedule: NodeSchedule, clock: any NodeClock, sync: any ClockSyncSource, effects: any ScheduleEffects,
                random: any RandomBytesGenerator = SecureRandom(), syncCheckInterval: Double? = 30,
                logger: Logger = Logger(label: "gaend.schedule")) {
        self.schedule = schedule
        self.clock = clock
        self.sync = sync
        self.effects = effects
        self.random = AnyRandomBytes(random)
        self.syncCheckInterval = syncCheckInterval
        self.logger = logger
    }

    /// How long the clock-sync state may stay unknown (timedated has not answered) before it is
    /// a warning; a cold bus activation on a loaded board takes seconds, not minutes.
    static let unknownSyncGrace: Double = 60

    /// The schedule's state, for status properties and tests.
    package var state: NodeSchedule { schedule }

    /// Runs until the task is cancelled, then stops (records the scan in progress, stops
    /// advertising).
    package func run() async throws {
        var lastSync: ClockSyncStatus?
        var warnedUnknown = false
        await sync.prepare()
        let started = clock.reading(synchronized: false).monotonic
        while !Task.isCancelled {
            let status = sync.status()
            let waited = clock.reading(synchronized: false).monotonic - started
            if case .unknown = status {
                // Not known is not wrong: said at once, a warning only if it lasts.
                if status != lastSync, !warnedUnknown {
                    logger.notice("clock synchronization not known yet: not advertising or scanning until it is", metadata: ["clock.sync": "\(status)"])
                }
                if !warnedUnknown, waited >= Self.unknownSyncGrace {
                    logger.warning("clock synchronization still not known after \(Int(Self.unknownSyncGrace)) s: not advertising or scanning", metadata: ["clock.sync": "\(status)"])
                    warnedUnknown = true
                }
                lastSync = status
            } else if status != lastSync {
                if status.isUsable { logger.info("clock usable", metadata: ["clock.sync": "\(status)"]) }
                else { logger.warning("clock not synchronized: not advertising or scanning", metadata: ["clock.sync": "\(status)"]) }
                lastSync = status
            }
            let reading = clock.reading(synchronized: status.isUsable)
            let actions = try schedule.advance(to: reading, random: &random)
            if !actions.isEmpty { await effects.perform(actions, at: reading) }
            var deadline = schedule.nextDeadline
            if let cap = syncCheckInterval { deadline = min(deadline, reading.monotonic + cap) }
            // An unknown state turns into an answer in the background: look again soon.
            if case .unknown = status { deadline = min(deadline, reading.monotonic + 1) }
            do { try await clock.sleep(until: MonotonicInstant(seconds: deadline)) } catch is CancellationError { break }
        }
        let reading = clock.reading(synchronized: sync.status().isUsable)
        await effects.perform(schedule.stop(at: reading), at: reading)
    }
}

/// A concrete wrapper so a stored existential generator can be passed `inout` to generic code.
struct AnyRandomBytes: RandomBytesGenerator {
    var base: any RandomBytesGenerator
    init(_ base: any RandomBytesGenerator) { self.base = base }
    mutating func bytes(_ count: Int) throws -> Data { try base.bytes(count) }
}
