import Foundation
import HCIHost
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two stock Bumble virtual controllers on one local link (`python3 -m bumble.apps.controllers
/// tcp-server:... tcp-server:...`; the first may be served on a pty or a Unix socket instead),
/// for the HCI host's end-to-end tests and `gaenctl radio probe`'s.
package final class BumbleControllers: @unchecked Sendable {
    package static let available: Bool = {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import bumble.apps.controllers"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }()

    /// How the first controller is served (the second is always TCP).
    package enum Serving: Sendable { case tcp, pty, unix }

    package private(set) var ports: [Int]
    package let serving: Serving
    package let path = "/tmp/gaend-bumble-\(UUID().uuidString.prefix(8))"
    private var process: Process?

    package init(serving: Serving = .tcp) throws {
        ports = [try Self.freePort(), try Self.freePort()]
        self.serving = serving
        try start()
    }

    private var specs: [String] {
        let first: String
        switch serving {
        case .tcp: first = "tcp-server:127.0.0.1:\(ports[0])"
        case .pty: first = "pty:\(path)"
        case .unix: first = "unix-server:\(path)"
        }
        return [first, "tcp-server:127.0.0.1:\(ports[1])"]
    }

    private func ready(_ index: Int) -> Bool {
        if index == 0, serving != .tcp { return FileManager.default.fileExists(atPath: path) }
        return Self.listening(ports[index])
    }

    /// Starts the controllers and waits until both ports accept connections. Python and Bumble
    /// take seconds to start on a busy machine, so the limit is generous; controllers that exit
    /// at once (another process took a port between `freePort` and their bind) are started
    /// again on new ports.
    package func start() throws {
        for attempt in 1...3 {
            if try startOnce() { return }
            stop()
            if attempt < 3 { ports = [try Self.freePort(), try Self.freePort()] }
        }
        throw BumbleError.didNotStart
    }

    /// True once both ports accept; false if the controllers exited before.
    private func startOnce() throws -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        try? FileManager.default.removeItem(atPath: path)
        p.arguments = ["python3", "-m", "bumble.apps.controllers"] + specs
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(120)
        for index in ports.indices {
            while !ready(index) {
                guard p.isRunning else { return false }
                guard Date() < deadline else { throw BumbleError.didNotStart }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        return true
    }

    /// SIGKILL: the test runner leaves SIGTERM ignored in children, so terminate() would
    /// not end Python.
    package func stop() {
        guard let p = process else { return }
        process = nil
        if p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        if serving != .tcp { try? FileManager.default.removeItem(atPath: path) }
    }

    deinit { stop() }

    package func address(_ i: Int) -> ControllerAddress {
        switch (i, serving) {
        case (0, .pty): return .serial(path: path, baud: 115_200)
        case (0, .unix): return .unix(path: path)
        default: return .tcp(host: "127.0.0.1", port: ports[i])
        }
    }

    package enum BumbleError: Error { case didNotStart, noPort }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        guard ok else { throw BumbleError.noPort }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Whether something listens on the port, read from /proc/net/tcp rather than by
    /// connecting: Bumble's tcp-server forgets its client when a probe connection closes
    /// after the real one opened, and would then drop every answer.
    private static func listening(_ port: Int) -> Bool {
        let needle = String(format: ":%04X ", port)
        // Read to its end: /proc files report size 0, and a reader that trusts one page misses
        // the port once other processes on the machine hold more than a few dozen sockets.
        guard let bytes = try? SmallFile.read("/proc/net/tcp", limit: 1 << 24) else { return false }
        let table = String(decoding: bytes, as: UTF8.self)
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && (fields[1] + " ").hasSuffix(needle) && fields[3] == "0A"
        }
    }
}
