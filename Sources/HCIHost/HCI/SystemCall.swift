#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: the function, errno and the C library's text for it.
package struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    package let function: String
    package let errno: Int32
    package init(function: String, errno: Int32) {
        self.function = function
        self.errno = errno
    }
    package var description: String { "\(function) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Runs a system call, retrying on EINTR, and throws `SystemCallError` naming the function
/// on failure (swift-nio's syscall wrapper does the same).
@discardableResult
func systemCall<T: FixedWidthInteger>(_ function: String, _ body: () -> T) throws -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let e = errno
        if e == EINTR { continue }
        throw SystemCallError(function: function, errno: e)
    }
}
