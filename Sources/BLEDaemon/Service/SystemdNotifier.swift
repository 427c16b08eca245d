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

    package enum NotifyError: Error, CustomStringConvertible, Equatable {
        case pathTooLong(String)
        case system(function: String, errno: Int32)
        /// The receiver's queue is full (it is not reading): the message was not sent.
        case receiverNotReading
        package var description: String {
            switch self {
            case .pathTooLong(let p): return "NOTIFY_SOCKET path too long: \(p)"
            case .system(let f, let e): return "\(f) failed: \(SystemCallError.reason(code: e))"
            case .receiverNotReading: return "the notify socket's receiver is not reading (its queue is full)"
            }
        }
    }

    /// Sends newline-separated assignments, e.g. "READY=1\nSTATUS=advertising". Never waits:
    /// callers run on the cooperative pool, and a datagram to a receiver that has stopped
    /// reading (a stalled or busy service manager: the queue holds net.unix.max_dgram_qlen
    /// messages, 10 by default) blocked the thread until it read again; with the pool's threads
    /// blocked there, the radio owner stopped answering and gaend could not even stop.
    package func notify(_ state: String) throws {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyError.system(function: "socket", errno: errno) }
        defer { close(fd) }
        guard let address = UnixSocketAddress(path: socketPath, abstractAt: true) else { throw NotifyError.pathTooLong(socketPath) }
        let message = Array(state.utf8)
        let sent = address.withSockaddr { sendto(fd, message, message.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), $0, $1) }
        if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { throw NotifyError.receiverNotReading }
        guard sent == message.count else { throw NotifyError.system(function: "sendto", errno: errno) }
    }

    /// `notify`, tried again every 50 ms while the receiver is not reading, for at most
    /// `patience`: for the messages that must arrive (READY=1, STOPPING=1), without blocking.
    package func notify(_ state: String, patience: Duration) async throws {
        let end = ContinuousClock.now + patience
        while true {
            do { return try notify(state) } catch NotifyError.receiverNotReading where ContinuousClock.now < end {
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    package func ready(status: String) async throws { try await notify("READY=1\nSTATUS=\(status)", patience: .seconds(10)) }
    package func status(_ status: String) throws { try notify("STATUS=\(status)") }
    package func stopping() async throws { try await notify("STOPPING=1", patience: .seconds(1)) }
    /// One try: a feed the receiver cannot take now is a late feed; the next comes one interval on.
    package func watchdog() throws { try notify("WATCHDOG=1") }
}
