import ENProtocol
import HCIHost
import Synchronization

/// The counters and facts the node's status reports that the schedule's effects produce:
/// beacons made, scans and sightings recorded, the last scan's end, the store's last write
/// failure, whether the clock was usable at the last reading, a day whose key is retired,
/// the beacon last made, and the radio owner's last published state. Written by their one
/// writer (`NodeScheduleEffects`, and the node's subscription to the radio owner for `radio`), read by
/// the status snapshot without awaiting anyone (a lock).
package final class NodeStatusBoard: Sendable {
    struct Facts {
        var advertisements: UInt64 = 0
        var scans: UInt64 = 0
        var sightings: UInt64 = 0
        /// Unix seconds on the node clock; nil before the first scan.
        var lastScanEnd: Double?
        /// The store's last failure to store a scan or a day's key; nil once it works again.
        var storageProblem: String?
        var clockUsable = false
        /// Set while the clock says a day whose key is gone (it was stepped back): off air.
        var retiredDay: UTCDay?
        /// The last beacon made; its RPI is what is on air while its address is (trial mode).
        var lastBeacon: GAENBeacon?
        var radio = RadioOwner.Status()
    }

    private let facts: Mutex<Facts>

    init(clockUsable: Bool) { facts = Mutex(Facts(clockUsable: clockUsable)) }

    var current: Facts { facts.withLock { $0 } }

    /// Changes the facts; returns what `body` returns.
    @discardableResult
    func update<T>(_ body: (inout Facts) -> T) -> T { facts.withLock { body(&$0) } }
}
