/// Seconds the beacon was on air, and seconds it was wanted but not on air (a fault: a
/// rotation being retried, no controller), on the node's monotonic clock. Advanced at each
/// published change of the radio's state; the interval since the last change belongs to the
/// state then recorded, so a reading between changes adds it (`totals(at:)`).
package struct AirTimeLedger: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        /// Nothing wanted on air (stopped, clock not usable).
        case idle
        case onAir
        case offAir
    }

    package private(set) var onAirSeconds: Double = 0
    package private(set) var offAirSeconds: Double = 0
    package private(set) var state: State = .idle
    /// Monotonic seconds of the last advance; nil before the first.
    package private(set) var since: Double?

    package init() {}

    /// Credits the time since the last advance to the state recorded then, and records `state`.
    package mutating func advance(to now: Double, state newState: State) {
        let t = totals(at: now)
        onAirSeconds = t.onAir
        offAirSeconds = t.offAir
        since = since.map { max($0, now) } ?? now
        state = newState
    }

    /// The totals as of `now` (monotonic seconds, not before the last advance).
    package func totals(at now: Double) -> (onAir: Double, offAir: Double) {
        guard let since else { return (onAirSeconds, offAirSeconds) }
        let elapsed = max(0, now - since)
        switch state {
        case .idle: return (onAirSeconds, offAirSeconds)
        case .onAir: return (onAirSeconds + elapsed, offAirSeconds)
        case .offAir: return (onAirSeconds, offAirSeconds + elapsed)
        }
    }

    package static func state(wanted: Bool, onAir: Bool) -> State {
        guard wanted else { return .idle }
        return onAir ? .onAir : .offAir
    }
}
