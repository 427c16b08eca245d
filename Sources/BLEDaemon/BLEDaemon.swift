/// BLEDaemon: the node (HCI host, radio, store, D-Bus boundary).
package enum BLEDaemon {}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

extension BLEDaemon {
    /// A file error as "path: reason" (the system's words for the errno). Full Foundation's
    /// localizedDescription said only "The operation could not be completed. The file doesn't
    /// exist." and needs its localized tables, which FoundationEssentials (all gaend links) has not.
    static func fileErrorText(_ error: any Error) -> String {
        guard let e = error as? CocoaError else { return "\(error)" }
        let reason: String
        if let posix = e.underlying as? POSIXError {
            reason = SystemCallError.reason(code: posix.code.rawValue)
        } else if let underlying = e.underlying {
            reason = "\(underlying)"
        } else {
            reason = "error \(e.code.rawValue)"
        }
        return e.filePath.map { "\($0): \(reason)" } ?? reason
    }
}
