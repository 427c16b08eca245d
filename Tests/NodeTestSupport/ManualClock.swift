import HCIHost
import Synchronization

/// A clock tests drive by hand: `advance(by:)` moves wall and monotonic time together and
/// wakes the sleepers whose deadline has come; `stepWall(by:)` steps only the wall clock, as
/// an NTP correction does.
///
/// A class with a `Mutex` rather than an actor because `wallTime()` and `monotonicTime()` are
/// synchronous requirements of `NodeClock`.
package final class ManualClock: NodeClock, Sendable {
    private struct State {
        var wall: Double
        var monotonic: Double
        var sleepers: [UInt64: (deadline: Double, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextSleeper: UInt64 = 0
    }
    private let state: Mutex<State>

    package init(wall: Double, monotonic: Double = 1_000) {
        state = Mutex(State(wall: wall, monotonic: monotonic))
    }

    package func wallTime() -> Double { state.withLock { $0.wall } }
    package func monotonicTime() -> MonotonicInstant { state.withLock { MonotonicInstant(seconds: $0.monotonic) } }

    /// Number of tasks currently suspended in `sleep(until:)`.
    package var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline among sleepers, if any.
    package var nextDeadline: MonotonicInstant? {
        state.withLock { $0.sleepers.values.map(\.deadline).min().map { MonotonicInstant(seconds: $0) } }
    }

    package func sleep(until deadline: MonotonicInstant) async throws {
        let id: UInt64 = state.withLock { $0.nextSleeper += 1; return $0.nextSleeper }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = state.withLock {
                    if deadline.seconds <= $0.monotonic { return true }
                    $0.sleepers[id] = (deadline.seconds, c)
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { $0.sleepers.removeValue(forKey: id)?.continuation }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves both clocks forward by `seconds` (>= 0) and wakes every sleeper that is due.
    package func advance(by seconds: Double) {
        precondition(seconds >= 0, "monotonic time cannot go backwards")
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { s in
            s.monotonic += seconds
            s.wall += seconds
            let now = s.monotonic
            let ready = s.sleepers.filter { $0.value.deadline <= now }
            for key in ready.keys { s.sleepers.removeValue(forKey: key) }
            return ready.values.sorted { $0.deadline < $1.deadline }.map(\.continuation)
        }
        for c in due { c.resume() }
    }

    /// Advances to `deadline` (if it is in the future) and wakes the sleepers due by then.
    package func advance(to deadline: MonotonicInstant) {
        let delta = state.withLock { deadline.seconds - $0.monotonic }
        advance(by: max(0, delta))
    }

    /// Steps the wall clock alone (negative = backward), leaving monotonic time and timers.
    package func stepWall(by seconds: Double) {
        state.withLock { $0.wall += seconds }
    }
}
