import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import TrialTime
#if canImport(Glibc)
import Glibc
#endif

/// A point on a monotonic time line, in seconds since an arbitrary origin. Durations and
/// timers use it because it never steps; protocol times use wall time instead. It is the
/// `Instant` of every `NodeClock` as a standard `Clock`.
package struct MonotonicInstant: InstantProtocol, CustomStringConvertible {
    package var seconds: Double
    package init(seconds: Double) { self.seconds = seconds }
    package func advanced(by s: Double) -> MonotonicInstant { MonotonicInstant(seconds: seconds + s) }
    package func duration(since earlier: MonotonicInstant) -> Double { seconds - earlier.seconds }
    package static func < (a: Self, b: Self) -> Bool { a.seconds < b.seconds }
    package var description: String { "mono+\(seconds)s" }

    // InstantProtocol, in Swift's Duration.
    package func advanced(by d: Duration) -> MonotonicInstant { advanced(by: d.seconds) }
    package func duration(to other: MonotonicInstant) -> Duration { .seconds(other.seconds - seconds) }
}

extension Duration {
    /// The duration in seconds, as a Double.
    package var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// Everything time-driven in the node reads time through this, so that tests run days of
/// schedule in milliseconds and `--time-scale N` runs the whole node faster.
///
/// - `wallTime()`: UTC Unix seconds, for protocol time (ENIN, UTC days, record times). It
///   may step forward or backward when the system clock is corrected.
/// - `monotonicTime()`: never steps, for durations and timers.
/// - `sleep(until:)`: suspends until the monotonic deadline; throws `CancellationError` when
///   the task is cancelled.
///
/// A node clock is also a standard `Clock` (its `now` is the monotonic time, its `sleep` the
/// node's), so the one node clock is the sleeper of whatever takes a `Clock`: `--time-scale`
/// and tests' manual time reach it too. Wall time is the one thing `Clock` has no word for
/// (its instants never step), hence `wallTime()` beside it.
package protocol NodeClock: Clock where Instant == MonotonicInstant, Duration == Swift.Duration {
    func wallTime() -> Double
    func monotonicTime() -> MonotonicInstant
    func sleep(until deadline: MonotonicInstant) async throws
}

extension NodeClock {
    // Clock.
    package var now: MonotonicInstant { monotonicTime() }
    package var minimumResolution: Duration { .nanoseconds(1) }
    package func sleep(until deadline: MonotonicInstant, tolerance: Duration?) async throws {
        try await sleep(until: deadline)
    }

    /// Both readings at once, plus whether the wall clock can be trusted, for the schedule.
    package func reading(synchronized: Bool) -> ClockReading {
        ClockReading(wall: wallTime(), monotonic: monotonicTime().seconds, synchronized: synchronized)
    }

    package func sleep(for seconds: Double) async throws {
        try await sleep(until: monotonicTime().advanced(by: seconds))
    }
}

/// The system clocks: CLOCK_REALTIME for wall time, CLOCK_MONOTONIC for timers.
package struct SystemClock: NodeClock {
    package init() {}

    package func wallTime() -> Double { Self.read(CLOCK_REALTIME) }
    package func monotonicTime() -> MonotonicInstant { MonotonicInstant(seconds: Self.read(CLOCK_MONOTONIC)) }

    package func sleep(until deadline: MonotonicInstant) async throws {
        let remaining = deadline.seconds - monotonicTime().seconds
        if remaining > 0 {
            try await Task.sleep(nanoseconds: UInt64((remaining * 1e9).rounded(.up)))
        } else {
            try Task.checkCancellation()
        }
    }

    static func read(_ id: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(id, &ts) // cannot fail for these two clock ids
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// Runs time `factor` times faster than the underlying clock from the moment it is made
/// (`--time-scale N`): wall time starts at the real wall time and then advances N seconds per
/// real second, so key days, intervals, rotations and scan cadence all run N times faster.
/// A step of the real wall clock shows through as the same step (an NTP correction, or a
/// fault test's faketime), so a scaled node meets clock steps as a real one does; timers run
/// on the scaled monotonic time, which never steps.
///
/// With a trial clock (`ScaledClock(trialClock:)`, a rehearsal) wall time is the trial clock's
/// reading of the real wall time instead, anchored at the trial's epoch rather than at this
/// process's start: every process of the trial, and this node after a restart, reads the same
/// trial time. A real step of s seconds is then a trial step of s x scale, the same in every
/// process. Timers run on the scaled monotonic time as above.
package struct ScaledClock: NodeClock {
    package let factor: Double
    let base: any NodeClock
    let monotonicOrigin: MonotonicInstant
    package let trialClock: TrialClock?

    package init(factor: Double, base: any NodeClock = SystemClock()) throws {
        guard factor.isFinite, factor > 0 else { throw ClockError.invalidTimeScale(factor) }
        self.factor = factor
        self.base = base
        monotonicOrigin = base.monotonicTime()
        trialClock = nil
    }

    package init(trialClock: TrialClock, base: any NodeClock = SystemClock()) {
        factor = trialClock.scale
        self.base = base
        monotonicOrigin = base.monotonicTime()
        self.trialClock = trialClock
    }

    private func elapsedReal() -> Double { base.monotonicTime().duration(since: monotonicOrigin) }

    /// The trial clock's reading of the real wall time; without one, the real wall time plus
    /// the extra (factor - 1) seconds per real second elapsed.
    package func wallTime() -> Double {
        if let trialClock { return trialClock.trialTime(real: base.wallTime()) }
        return base.wallTime() + elapsedReal() * (factor - 1)
    }
    package func monotonicTime() -> MonotonicInstant { monotonicOrigin.advanced(by: elapsedReal() * factor) }

    package func sleep(until deadline: MonotonicInstant) async throws {
        let realDeadline = monotonicOrigin.advanced(by: deadline.duration(since: monotonicOrigin) / factor)
        try await base.sleep(until: realDeadline)
    }
}

package enum ClockError: Error, Equatable, CustomStringConvertible {
    case invalidTimeScale(Double)
    package var description: String {
        switch self {
        case .invalidTimeScale(let f): return "time scale must be a finite number greater than 0, got \(f)"
        }
    }
}
