#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension SystemCallError {
    /// Why a file operation of Foundation's failed, in the C library's words ("No such file or
    /// directory"), the same in every command: its errors name a Cocoa code and a number, the
    /// system's reason is underneath. Read from the error itself, not from Foundation's
    /// rendering of it, which differs between a process that links full Foundation and one
    /// on FoundationEssentials alone. Any other error as it describes itself.
    public static func reason(of error: any Error) -> String {
        if let cocoa = error as? CocoaError {
            if let posix = cocoa.underlying as? POSIXError { return reason(code: posix.code.rawValue) }
            switch cocoa.code {
            case .fileReadNoSuchFile, .fileNoSuchFile: return reason(code: ENOENT)
            case .fileReadNoPermission, .fileWriteNoPermission: return reason(code: EACCES)
            default: break
            }
        }
        if let posix = error as? POSIXError { return reason(code: posix.code.rawValue) }
        return "\(error)"
    }
}
