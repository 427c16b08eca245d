#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import HCIProtocol
import HCIShim
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A byte link to a controller that delivers whole H4 packets. Transports know nothing about
/// HCI semantics or GAEN; the session (`HCIControllerSession`) does.
package protocol HCITransport: AnyObject, Sendable {
    /// Whole packets from the controller, in order. Finishes at end of stream; throws on a
    /// read error or when the byte stream is out of step (unknown H4 indicator). One consumer.
    var packets: AsyncThrowingStream<H4Packet, any Error> { get }
    /// Writes one packet. Throws `HCITransportError.closed` after `close()`.
    func send(_ packet: H4Packet) throws
    /// Closes the link; `packets` finishes. Safe to call more than once.
    func close()
}

/// Opens transports to one controller; the session calls it again to reconnect.
package protocol HCITransportConnector: Sendable, CustomStringConvertible {
    func connect() async throws -> any HCITransport
}

/// Why a transport could not be opened or stopped working, with the cause named.
package enum HCITransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// socket(AF_BLUETOOTH) gave EAFNOSUPPORT: the kernel has no Bluetooth support.
    case bluetoothUnsupported(address: String)
    /// EPERM/EACCES: the HCI user channel needs CAP_NET_ADMIN (root), a device node needs access.
    case permissionDenied(address: String, call: String)
    /// ERFKILL (132): the controller is blocked by rfkill (soft: `rfkill unblock bluetooth`).
    case rfkillBlocked(address: String, call: String)
    /// EBUSY: another owner (bluetoothd, another gaend) holds the device or it is still up.
    case busy(address: String, call: String)
    /// ENODEV/ENOENT: no such controller.
    case noSuchDevice(address: String, call: String)
    /// The peer refused or is not listening (virtual controller not started).
    case connectionRefused(address: String)
    case closed
    case system(address: String, SystemCallError)

    package var description: String {
        switch self {
        case let .bluetoothUnsupported(a):
            return "\(a): this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed with EAFNOSUPPORT); use a kernel with CONFIG_BT, or a serial/tcp/unix controller"
        case let .permissionDenied(a, call) where call.contains("HCIDEVDOWN") || call.contains("HCI_CHANNEL_USER"):
            return "\(a): permission denied in \(call): the HCI user channel needs the capability CAP_NET_ADMIN; run as root, "
                + "through gaend@\(a).service (which grants it), or with `sudo setpriv --inh-caps=+net_admin --ambient-caps=+net_admin ...`"
        case let .permissionDenied(a, call):
            return "\(a): permission denied in \(call); a serial device needs read/write access (group dialout), a socket its file mode"
        case let .rfkillBlocked(a, call):
            return "\(a): blocked by rfkill (\(call) failed with ERFKILL, errno 132); run `rfkill unblock bluetooth` "
                + "(a hard block is a switch or the firmware: `rfkill list` shows which)"
        case let .busy(a, call):
            return "\(a): device busy in \(call); stop bluetoothd or any other user of the controller (the user channel needs exclusive access)"
        case let .noSuchDevice(a, call):
            return "\(a): no such device (\(call))"
        case let .connectionRefused(a):
            return "\(a): connection refused; is the controller (or virtual controller) listening?"
        case .closed:
            return "transport closed"
        case let .system(a, e):
            return "\(a): \(e)"
        }
    }

    /// Linux's ERFKILL ("Operation not possible due to RF-kill"), not exported by every libc module.
    static let erfkill: Int32 = 132

    /// Maps errno of a failed open step to the case that names the cause.
    static func classify(_ e: SystemCallError, address: String) -> HCITransportError {
        switch e.errno {
        case EAFNOSUPPORT where e.function.hasPrefix("socket(AF_BLUETOOTH"): return .bluetoothUnsupported(address: address)
        case EPERM, EACCES: return .permissionDenied(address: address, call: e.function)
        case EBUSY: return .busy(address: address, call: e.function)
        case Self.erfkill: return .rfkillBlocked(address: address, call: e.function)
        case ENODEV, ENOENT, ENXIO: return .noSuchDevice(address: address, call: e.function)
        case ECONNREFUSED: return .connectionRefused(address: address)
        default: return .system(address: address, e)
        }
    }
}

/// H4 over a file descriptor (socket, tty, HCI user channel). A dedicated thread reads with
/// poll() so that close() is noticed within `pollInterval`; the thread owns closing the
/// descriptor, so a number is never closed while a read might still use it.
final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    let packets: AsyncThrowingStream<H4Packet, any Error>
    private let continuation: AsyncThrowingStream<H4Packet, any Error>.Continuation
    private let fd: Int32
    private let isSocket: Bool
    private let name: String
    /// `closed`: no more sends; `released`: the descriptor is closed, its number may be reused.
    private let state = Mutex((closed: false, released: false))

    init(fd: Int32, isSocket: Bool, name: String) {
        // Non-blocking, so that a stalled link makes send() time out instead of blocking the
        // session; reads wait in poll().
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        self.isSocket = isSocket
        self.name = name
        (packets, continuation) = AsyncThrowingStream.makeStream(of: H4Packet.self, throwing: (any Error).self)
        NamedThread.start("hci-read \(name)") { [self] in self.readLoop() }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    private func readLoop() {
        var framer = H4Framer()
        var buffer = [UInt8](repeating: 0, count: 2048)
        // Closed under the lock so that send()/close() never touch a number the kernel has
        // already handed to another socket.
        defer {
            state.withLock {
                $0 = (closed: true, released: true)
                _ = Glibc.close(fd)
            }
        }
        while !isClosed {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            do throws(SystemCallError) {
                if try systemCall("poll", { poll(&pfd, 1, 100) }) == 0 { continue }
            } catch {
                continuation.finish(throwing: HCITransportError.system(address: name, error))
                return
            }
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("read") { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            } catch where error.errno == EAGAIN {
                continue
            } catch {
                continuation.finish(throwing: isClosed ? nil : HCITransportError.system(address: name, error))
                return
            }
            if n == 0 {
                continuation.finish()
                return
            }
            framer.append(buffer[0..<n])
            do {
                while case let .packet(p) = try framer.next() { continuation.yield(p) }
            } catch {
                continuation.finish(throwing: error)
                return
            }
        }
        continuation.finish()
    }

    /// How long a write may wait for the link to take bytes (a UART whose CTS never rises,
    /// a peer that stopped reading) before it fails; the session must never block for ever.
    static let writeTimeoutMilliseconds: Int32 = 1000

    func send(_ packet: H4Packet) throws {
        let bytes = packet.bytes
        try state.withLock { state in
            guard !state.closed else { throw HCITransportError.closed }
            var offset = 0
            while offset < bytes.count {
                do throws(SystemCallError) {
                    offset += try systemCall(isSocket ? "send" : "write") {
                        bytes.withUnsafeBytes { raw -> Int in
                            let p = raw.baseAddress! + offset
                            let count = raw.count - offset
                            // MSG_NOSIGNAL: a peer that went away gives EPIPE, not a process-killing SIGPIPE.
                            return isSocket ? Glibc.send(fd, p, count, Int32(MSG_NOSIGNAL)) : Glibc.write(fd, p, count)
                        }
                    }
                } catch where error.errno == EAGAIN {
                    var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    let ready = poll(&pfd, 1, Self.writeTimeoutMilliseconds)
                    if ready == 0 {
                        throw HCITransportError.system(address: name, SystemCallError(function: "write (link took no bytes for \(Self.writeTimeoutMilliseconds) ms)", errno: ETIMEDOUT))
                    }
                } catch {
                    throw HCITransportError.system(address: name, error)
                }
            }
        }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            // Wakes the read thread at once (a tty is noticed at the next poll timeout); the
            // read thread closes the descriptor itself.
            if !state.released, isSocket { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { close() }
}

/// Opens the transport that `ControllerAddress` names.
package struct SystemTransportConnector: HCITransportConnector {
    package let address: ControllerAddress
    package init(address: ControllerAddress) { self.address = address }
    package var description: String { address.description }

    /// Opening is blocking: HCIDEVDOWN waits for the kernel's own work on the controller (right
    /// after a hot-plug, its whole power-on sequence, seconds and more on a slow board), a
    /// unix or TCP connect waits for the peer's backlog, a serial open for the driver. So it
    /// runs on a thread of its own: on a cooperative thread it held one of the pool's few
    /// threads (two on a two-core board) for that long, and the watchdog's question to the
    /// radio owner went unanswered behind it.
    package func connect() async throws -> any HCITransport {
        let address = self.address
        return try await BlockingPool.run { _ in try Self.openTransport(address) }
    }

    static func openTransport(_ address: ControllerAddress) throws -> any HCITransport {
        let name = address.description
        do {
            switch address {
            case let .hci(index):
                var stage: Int32 = 0
                let fd = gaend_hci_open_user_channel(Int32(index), &stage)
                if fd < 0 {
                    let call: String
                    switch UInt32(stage) {
                    case GAEND_HCI_STAGE_SOCKET.rawValue: call = "socket(AF_BLUETOOTH, BTPROTO_HCI)"
                    case GAEND_HCI_STAGE_DEVDOWN.rawValue: call = "ioctl(HCIDEVDOWN hci\(index))"
                    default: call = "bind(hci\(index), HCI_CHANNEL_USER)"
                    }
                    throw SystemCallError(function: call, errno: -fd)
                }
                return FileDescriptorTransport(fd: fd, isSocket: true, name: name)
            case let .serial(path, baud):
                let fd = try systemCall("open(\(path))") { open(path, O_RDWR | O_NOCTTY | O_CLOEXEC) }
                let rc = gaend_serial_configure(fd, UInt32(baud), 1)
                if rc < 0 {
                    Glibc.close(fd)
                    throw SystemCallError(function: "termios setup of \(path) at \(baud) baud", errno: -rc)
                }
                return FileDescriptorTransport(fd: fd, isSocket: false, name: name)
            case let .tcp(host, port):
                return FileDescriptorTransport(fd: try Self.connectTCP(host: host, port: port), isSocket: true, name: name)
            case let .unix(path):
                return FileDescriptorTransport(fd: try Self.connectUnix(path: path), isSocket: true, name: name)
            }
        } catch let e as SystemCallError {
            throw HCITransportError.classify(e, address: name)
        }
    }

    private static func connectTCP(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw SystemCallError(function: "getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))", errno: ENOENT)
        }
        defer { freeaddrinfo(list) }
        var lastError = SystemCallError(function: "connect(\(host):\(port))", errno: ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let ai = entry {
            entry = ai.pointee.ai_next
            guard let fd = try? systemCall("socket", { socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }) else { continue }
            do throws(SystemCallError) {
                try systemCall("connect(\(host):\(port))") { Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) }
            } catch {
                lastError = error
                Glibc.close(fd)
                continue
            }
            var one: Int32 = 1
            // Small packets (commands) must not wait for Nagle.
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw lastError
    }

    private static func connectUnix(path: String) throws -> Int32 {
        let fd = try systemCall("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            // A path too long for an address is refused, not cut short to name another socket.
            guard let address = UnixSocketAddress(path: path) else { throw SystemCallError(function: "connect(\(path))", errno: ENAMETOOLONG) }
            _ = try address.withSockaddr { sa, length in
                try systemCall("connect(\(path))") { Glibc.connect(fd, sa, length) }
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return fd
    }
}
