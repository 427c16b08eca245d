/// Whether the system clock can be trusted for protocol time. Until it can, a board without
/// a real-time clock may believe it is 1970 or last week, and every RPI or sighting time it
/// produced would be useless or harmful, so the node neither advertises nor scans.
package enum ClockSyncStatus: Equatable, Sendable, CustomStringConvertible {
    /// The kernel or systemd-timesyncd says the clock is synchronised (the source says which).
    case synchronized(source: String)
    /// Something says the clock is not synchronised, or nothing could say it is.
    case unsynchronized(reason: String)
    /// The only source that could tell (systemd-timedated, when the service's sandbox refuses
    /// adjtimex) has not answered yet: a slow bus activation on a loaded board, not a bad clock.
    case unknown(reason: String)
    /// The check is waived (`--ignore-clock-sync`, a trial without network, or a scaled clock,
    /// which is never the system time); `by` says which, as the user would recognise it.
    case waived(by: String)

    package var isUsable: Bool {
        switch self {
        case .synchronized, .waived: return true
        case .unsynchronized, .unknown: return false
        }
    }

    package var description: String {
        switch self {
        case .synchronized(let s): return "synchronized (\(s))"
        case .unsynchronized(let r): return "unsynchronized: \(r)"
        case .unknown(let r): return "not known yet: \(r)"
        case .waived(let by): return "not checked (waived by \(by))"
        }
    }
}

/// Something that can tell whether the clock is synchronised; tests inject their own.
package protocol ClockSyncSource: Sendable {
    func status() -> ClockSyncStatus
    /// Called once before the first `status()`: a source whose answer comes in the background
    /// gets its first one, so the first check does not report a clock it has not asked about.
    func prepare() async
}

extension ClockSyncSource {
    package func prepare() async {}
}

/// A fixed answer, for tests and simulations.
package struct FixedClockSync: ClockSyncSource {
    package var value: ClockSyncStatus
    package init(_ value: ClockSyncStatus) { self.value = value }
    package func status() -> ClockSyncStatus { value }
}
