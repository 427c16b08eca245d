import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BLEDaemon

@Suite struct SystemdNotifierTests {
    /// A datagram socket standing in for systemd's notify socket.
    final class Listener {
        let fd: Int32
        let path: String
        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var a = sockaddr_un()
            a.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(path.utf8)
            if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &a.sun_path) { $0.copyBytes(from: bytes) }
            let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
            let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
            guard rc == 0 else { throw POSIXError(.EADDRINUSE) }
            var tv = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        func receive() -> String? {
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buf, buf.count, 0)
            return n > 0 ? String(decoding: buf[0..<n], as: UTF8.self) : nil
        }
        deinit { close(fd); if !path.hasPrefix("@") { unlink(path) } }
    }

    @Test func sendsReadyStatusAndWatchdogToAPathSocket() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let listener = try Listener(path: path)
        let n = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"])
        #expect(n.watchdogInterval == .seconds(15))
        try await n.ready(status: "advertising")
        #expect(listener.receive() == "READY=1\nSTATUS=advertising")
        try n.watchdog()
        #expect(listener.receive() == "WATCHDOG=1")
    }

    @Test func abstractNamespaceSocket() async throws {
        let name = "@gaend-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let listener = try Listener(path: name)
        try await SystemdNotifier(environment: ["NOTIFY_SOCKET": name]).stopping()
        #expect(listener.receive() == "STOPPING=1")
    }

    @Test func withoutSystemdEverythingIsANoOp() async throws {
        let n = SystemdNotifier(environment: [:])
        #expect(n.socketPath == nil && n.watchdogInterval == nil)
        try await n.ready(status: "x")
        // A watchdog meant for another process is not ours to feed.
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"]).watchdogInterval == nil)
    }

    /// A receiver that has stopped reading (a stalled or busy service manager) never holds the
    /// sender: once its queue is full each message fails at once with `receiverNotReading`,
    /// READY=1 is tried again for a while without blocking, and arrives once it reads again.
    @Test func aReceiverThatStopsReadingNeverBlocksTheSender() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let listener = try Listener(path: path)
        let n = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        let start = ContinuousClock.now
        var refused = 0
        for _ in 0..<2_000 {
            do { try n.watchdog() } catch SystemdNotifier.NotifyError.receiverNotReading { refused += 1 }
        }
        // Blocking sends would have hung here at the queue's length (10 by default).
        #expect(refused > 0)
        #expect(ContinuousClock.now - start < .seconds(10))
        await #expect(throws: SystemdNotifier.NotifyError.receiverNotReading) {
            try await n.notify("READY=1", patience: .milliseconds(200))
        }
        // Once it reads again, READY=1 gets through while it is being retried.
        let ready = Task { try await n.ready(status: "x") }
        try await Task.sleep(for: .milliseconds(100))
        while let m = listener.receive(), m != "READY=1\nSTATUS=x" { _ = m }
        try await ready.value
    }
}
