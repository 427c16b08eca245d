import HCIHost
import Synchronization

/// Whether the node's schedule runs and acts, for the watchdog's radio-path check. Written by
/// whoever runs the schedule, read without awaiting anything (a lock, no actor), so the
/// watchdog never waits behind the node or its long work.
package final class ScheduleHeartbeat: Sendable {
    struct State {
        /// The schedule was started (at the node's start or by Start) and not stopped by Stop.
        var wanted = false
        /// The schedule driver's loop is running.
        var running = false
        var clockUsable = false
        /// Monotonic node time of the last schedule action performed.
        var lastAction: Double?
    }

    private let state = Mutex(State())
    /// Node seconds without any action after which a running schedule is stuck: rotations
    /// come at most `rotationMaxMinutes` apart and scans more often, so twice that.
    let silenceLimit: Double

    package init(rotationMaxMinutes: Double) { silenceLimit = 2 * rotationMaxMinutes * 60 + 60 }

    func wanted(_ on: Bool) { state.withLock { $0.wanted = on } }
    func driverStarted() { state.withLock { $0.running = true } }
    func driverEnded() { state.withLock { $0.running = false } }
    func acted(at monotonic: Double, clockUsable: Bool) {
        state.withLock { $0.lastAction = monotonic; $0.clockUsable = clockUsable }
    }

    /// Live unless the schedule should run and its driver has stopped, or has performed
    /// nothing for longer than `silenceLimit` (node seconds, at `now` on the node clock).
    package func liveness(now: Double) -> RadioPathLiveness {
        let s = state.withLock { $0 }
        guard s.wanted else { return RadioPathLiveness(live: true, reason: "the schedule is not started (the node is starting, or stopped by the operator)") }
        guard s.running else { return RadioPathLiveness(live: false, reason: "the schedule driver is not running") }
        guard s.clockUsable, let last = s.lastAction else { return RadioPathLiveness(live: true, reason: "waiting for a usable clock") }
        let silent = now - last
        return silent > silenceLimit ? RadioPathLiveness(live: false, reason: "no schedule action for \(Int(silent)) s") : RadioPathLiveness(live: true, reason: "ok")
    }
}
