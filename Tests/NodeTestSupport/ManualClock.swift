import HCIHost
import PlatformSupport

/// A clock tests drive by hand: `advance(by:)` moves wall and monotonic time together and
/// wakes the sleepers whose deadline has come; `stepWall(by:)` steps only the wall clock, as
/// an NTP correction does.
///
/// A class with a lock rather than an actor because `wallTime()` and `monotonicTime()` are
/// synchronous requirements of `NodeClock`; every mutable field is touched only under `lock`.
package final class ManualClock: NodeClock, @unchecked Sendable {
    private let lock = Lock()
    private var wall: Double
    private var monotonic: Double
    private var sleepers: [UInt64: (deadline: Double, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var nextSleeper: UInt64 = 0

    package init(wall: Double, monotonic: Double = 1_000) {
        self.wall = wall
        self.monotonic = monotonic
    }

    package func wallTime() -> Double { lock.withLock { wall } }
    package func monotonicTime() -> MonotonicInstant { lock.withLock { MonotonicInstant(seconds: monotonic) } }

    /// Number of tasks currently suspended in `sleep(until:)`.
    package var sleeperCount: Int { lock.withLock { sleepers.count } }

    /// The earliest deadline among sleepers, if any.
    package var nextDeadline: MonotonicInstant? {
        lock.withLock { sleepers.values.map(\.deadline).min().map { MonotonicInstant(seconds: $0) } }
    }

    package func sleep(until deadline: MonotonicInstant) async throws {
        let id: UInt64 = lock.withLock { nextSleeper += 1; return nextSleeper }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = lock.withLock {
                    if deadline.seconds <= monotonic { return true }
                    sleepers[id] = (deadline.seconds, c)
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let c = lock.withLock { sleepers.removeValue(forKey: id)?.continuation }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves both clocks forward by `seconds` (>= 0) and wakes every sleeper that is due.
    package func advance(by seconds: Double) {
        precondition(seconds >= 0, "monotonic time cannot go backwards")
        let due: [CheckedContinuation<Void, any Error>] = lock.withLock {
            monotonic += seconds
            wall += seconds
            let ready = sleepers.filter { $0.value.deadline <= monotonic }
            for key in ready.keys { sleepers.removeValue(forKey: key) }
            return ready.values.sorted { $0.deadline < $1.deadline }.map(\.continuation)
        }
        for c in due { c.resume() }
    }

    /// Advances to `deadline` (if it is in the future) and wakes the sleepers due by then.
    package func advance(to deadline: MonotonicInstant) {
        let delta = lock.withLock { deadline.seconds - monotonic }
        advance(by: max(0, delta))
    }

    /// Steps the wall clock alone (negative = backward), leaving monotonic time and timers.
    package func stepWall(by seconds: Double) {
        lock.withLock { wall += seconds }
    }
}
