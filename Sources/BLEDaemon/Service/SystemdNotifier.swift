#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// The systemd notify protocol (sd_notify(3)) spoken directly: one datagram per message to the
/// AF_UNIX socket named by $NOTIFY_SOCKET. Written here rather than linking libsystemd because
/// the protocol is a few lines and the daemon's dependencies stay what the design card lists.
package struct SystemdNotifier: Sendable {
    /// The socket path; nil when not started by systemd with Type=notify (all calls are no-ops).
    package let socketPath: String?
    /// How often to send WATCHDOG=1 (half of WatchdogSec, as sd_watchdog_enabled advises);
    /// nil when the watchdog is off or meant for another process.
    package let watchdogInterval: Duration?

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
           environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    package enum NotifyError: Error, CustomStringConvertible {
        case pathTooLong(String)
        case system(function: String, errno: Int32)
        package var description: String {
            switch self {
            case .pathTooLong(let p): return "NOTIFY_SOCKET path too long: \(p)"
            case .system(let f, let e): return "\(f) failed: \(SystemCallError.reason(code: e))"
            }
        }
    }

    /// Sends newline-separated assignments, e.g. "READY=1\nSTATUS=advertising".
    package func notify(_ state: String) throws {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyError.system(function: "socket", errno: errno) }
        defer { close(fd) }
        guard let address = UnixSocketAddress(path: socketPath, abstractAt: true) else { throw NotifyError.pathTooLong(socketPath) }
        let message = Array(state.utf8)
        let sent = address.withSockaddr { sendto(fd, message, message.count, Int32(MSG_NOSIGNAL), $0, $1) }
        guard sent == message.count else { throw NotifyError.system(function: "sendto", errno: errno) }
    }

    package func ready(status: String) throws { try notify("READY=1\nSTATUS=\(status)") }
    package func status(_ status: String) throws { try notify("STATUS=\(status)") }
    package func stopping() throws { try notify("STOPPING=1") }
    package func watchdog() throws { try notify("WATCHDOG=1") }
}
