/// Failures of node operations (domain errors). The D-Bus edge (`NodeBus.wireError`) maps
/// each to its error name (docs/dbus.md); the node itself knows no wire names.
package enum NodeError: Error, CustomStringConvertible, Equatable {
    case notAuthorized(String)
    case rateLimited(String)
    case invalidKeyFile(String)
    case untrustedKeyFile(String)
    case limitExceeded(String)
    case busy(String)
    case controllerMissing(String)
    case clockUnsynchronised(String)
    case storage(String)
    case writeFailed(String)
    /// A caller's descriptor moved no data within the limit (docs/dbus.md, "Descriptors").
    case timeout(String)
    case invalidArgs(String)
    case internalFailure(String)

    package var message: String {
        switch self {
        case .notAuthorized(let m), .rateLimited(let m), .invalidKeyFile(let m), .untrustedKeyFile(let m), .limitExceeded(let m),
             .busy(let m), .controllerMissing(let m), .clockUnsynchronised(let m), .storage(let m), .writeFailed(let m),
             .timeout(let m), .invalidArgs(let m), .internalFailure(let m):
            return m
        }
    }

    package var description: String { message }
}
