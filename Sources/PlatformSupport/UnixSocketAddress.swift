#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An AF_UNIX socket address: the one place a path is put into a `sockaddr_un`, refused when it
/// does not fit (never cut short, which would name another socket).
public struct UnixSocketAddress: Sendable {
    private var address = sockaddr_un()
    /// The address's length as connect/sendto take it: the family, the path and its NUL byte
    /// (an abstract name has none).
    public let length: socklen_t

    /// Nil when `path` does not fit. With `abstractAt`, a leading '@' names an abstract socket
    /// (systemd's NOTIFY_SOCKET convention): the kernel wants a NUL byte there instead.
    public init?(path: String, abstractAt: Bool = false) {
        var bytes = Array(path.utf8)
        let abstract = abstractAt && bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
    }

    /// Runs `body` with the address as the socket calls take it.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        try withUnsafePointer(to: address) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }
}
