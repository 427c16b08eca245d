/// Seconds the beacon was on air, and seconds it was wanted but not on air (a fault: a
/// rotation being retried, no controller), on the node's monotonic clock. Advanced at each
/// published change of the radio's state; the interval since the last change belongs to the
/// state then recorded, so a reading between changes adds it (`totals(at:)`).
public struct AirTimeLedger: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Nothing wanted on air (stopped, clock not usable).
        case idle
        case onAir
        case offAir
    }

    public private(set) var onAirSeconds: Double = 0
    public private(set) var offAirSeconds: Double = 0
    public private(set) var state: State = .idle
    /// Monotonic seconds of the last advance; nil before the first.
    public private(set) var since: Double?

    public init() {}

    /// Credits the time since the last advance to the state recorded then, and records `state`.
    public mutating func advance(to now: Double, state newState: State) {
        let t = totals(at: now)
        onAirSeconds = t.onAir
        offAirSeconds = t.offAir
        since = since.map { max($0, now) } ?? now
        state = newState
    }

    /// The totals as of `now` (monotonic seconds, not before the last advance).
    public func totals(at now: Double) -> (onAir: Double, offAir: Double) {
        guard let since else { return (onAirSeconds, offAirSeconds) }
        let elapsed = max(0, now - since)
        switch state {
        case .idle: return (onAirSeconds, offAirSeconds)
        case .onAir: return (onAirSeconds + elapsed, offAirSeconds)
        case .offAir: return (onAirSeconds, offAirSeconds + elapsed)
        }
    }

    public static func state(wanted: Bool, onAir: Bool) -> State {
        guard wanted else { return .idle }
        return onAir ? .onAir : .offAir
    }
}
