import Synchronization

/// Counters of the node's services that no other part keeps: watchdog feeds, matching runs and
/// their time, the last run's windows and key files. Written by their one writer each (the
/// watchdog service, the exposure service), read by the status snapshot without awaiting anyone.
package final class NodeCounters: Sendable {
    package struct Values: Sendable, Equatable {
        /// Watchdog notifications sent to systemd.
        package var watchdogFeeds: UInt64 = 0
        /// Matching runs ended (finished, failed or cancelled), and their total time in seconds
        /// on the node's monotonic clock.
        package var matchingRuns: UInt64 = 0
        package var matchingSeconds: Double = 0
        /// What the last finished run matched: the provided key files, the windows stored.
        package var keyFiles: Int?
        package var windows: Int?
        package init() {}
    }

    private let values = Mutex(Values())

    package init() {}

    package var current: Values { values.withLock { $0 } }

    func watchdogFed() { values.withLock { $0.watchdogFeeds += 1 } }

    func matchingEnded(seconds: Double, keyFiles: Int?, windows: Int?) {
        values.withLock {
            $0.matchingRuns += 1
            $0.matchingSeconds += max(0, seconds)
            if let keyFiles { $0.keyFiles = keyFiles }
            if let windows { $0.windows = windows }
        }
    }
}
