import ENProtocol
import HCIHost
import Synchronization

/// Callbacks from the node to whoever publishes its state (the D-Bus edge).
package protocol NodeObserver: Sendable {
    func statusChanged() async
    func scanFinished(_ scan: Scan) async
    func exposureStateUpdated(token: String, matchedKeys: Int, windows: Int, error: String) async
}

/// Where the node's parts say that something changed: to the observer once the D-Bus edge has
/// set one (nothing before).
package final class NodeEvents: Sendable {
    private let observer = Mutex<(any NodeObserver)?>(nil)

    package init() {}

    package func setObserver(_ o: any NodeObserver) { observer.withLock { $0 = o } }

    func statusChanged() async { await observer.withLock { $0 }?.statusChanged() }
    func scanFinished(_ scan: Scan) async { await observer.withLock { $0 }?.scanFinished(scan) }
}
