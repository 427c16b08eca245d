import ENProtocol
import HCIHost
import Synchronization

/// The end of a matching run: the keys matched and windows found for the call's own files.
package typealias MatchingResult = Result<(matchedKeys: Int, windows: Int), Error>

/// Callbacks from the node to whoever publishes its state (the D-Bus edge).
package protocol NodeObserver: Sendable {
    func statusChanged() async
    func scanFinished(_ scan: Scan) async
    /// The matching of the files `token`'s call provided ended.
    func matchingFinished(token: String, _ result: MatchingResult) async
}

/// Where the node's parts say that something changed: to the observer once the D-Bus edge has
/// set one (nothing before). The one route from the node to the edge: radio owner -> node ->
/// here -> observer.
package final class NodeEvents: Sendable {
    private let observer = Mutex<(any NodeObserver)?>(nil)

    package init() {}

    package func setObserver(_ o: any NodeObserver) { observer.withLock { $0 = o } }

    func statusChanged() async { await observer.withLock { $0 }?.statusChanged() }
    func scanFinished(_ scan: Scan) async { await observer.withLock { $0 }?.scanFinished(scan) }
    func matchingFinished(token: String, _ result: MatchingResult) async {
        await observer.withLock { $0 }?.matchingFinished(token: token, result)
    }
}
