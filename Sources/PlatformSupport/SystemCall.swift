#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: the function, errno and the C library's text for it.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    public let function: String
    public let errno: Int32
    public init(function: String, errno: Int32) {
        self.function = function
        self.errno = errno
    }
    /// The C library's text for `errno` ("No such file or directory").
    public var reason: String { Self.reason(code: errno) }
    /// The C library's text for an errno value: the one place strerror's text is read, for the
    /// callers that put it in errors of their own ("cannot open PATH: REASON").
    public static func reason(code: Int32) -> String { String(cString: strerror(code)) }
    /// The text for the calling thread's errno now (read it before any other call that may set it).
    public static var lastReason: String { reason(code: currentErrno()) }
    public var description: String { "\(function) failed: \(reason) (errno \(errno))" }
}

/// errno, by a name `SystemCallError.errno` does not hide.
private func currentErrno() -> Int32 { errno }

/// Runs a system call, retrying on EINTR, and throws `SystemCallError` naming the function
/// on failure (swift-nio's syscall wrapper does the same): the one place that retries EINTR.
@discardableResult
public func systemCall<T: FixedWidthInteger>(_ function: String, _ body: () -> T) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let e = errno
        if e == EINTR { continue }
        throw SystemCallError(function: function, errno: e)
    }
}
