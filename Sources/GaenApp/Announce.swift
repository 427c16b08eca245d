#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport

/// A change to high risk, told three ways: a journal entry with a stable MESSAGE_ID (so
/// `journalctl MESSAGE_ID=...` finds every one on every board), a D-Bus signal (sent by the
/// caller, which holds the bus), and an optional hook command.
public enum HighRiskAnnouncement {
    /// journalctl MESSAGE_ID=3f0c8a4e5b7d4c2a9e1f6b0d8c7a5e42
    public static let messageID = "3f0c8a4e5b7d4c2a9e1f6b0d8c7a5e42"

    /// Sends one entry over journald's native protocol (a datagram of KEY=value lines) when
    /// the socket is there; false when it is not (the caller then says it on stderr, which
    /// journald keeps for a service without the MESSAGE_ID).
    @discardableResult
    public static func journal(_ message: String, fields: [String: String], socket: String = "/run/systemd/journal/socket") -> Bool {
        guard FileManager.default.fileExists(atPath: socket) else { return false }
        var text = "MESSAGE_ID=\(messageID)\nPRIORITY=4\nSYSLOG_IDENTIFIER=gaenctl-app\nMESSAGE=\(message.replacing(scalar: "\n", with: " "))\n"
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) where k.allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }) {
            text += "\(k)=\(v.replacing(scalar: "\n", with: " "))\n"
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let address = UnixSocketAddress(path: socket) else { return false }
        let data = Array(text.utf8)
        let sent = address.withSockaddr { sendto(fd, data, data.count, 0, $0, $1) }
        return sent == data.count
    }

    /// Runs `command` through /bin/sh with the result in its environment (GAEN_RISK_LEVEL,
    /// GAEN_RISK_ENGINE, GAEN_RISK_SINCE, GAEN_NODE); waits at most `timeout` seconds.
    public static func hook(_ command: String, environment: [String: String], timeout: Double = 30) -> String? {
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", command],
                                           environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        } catch { return "cannot start: \(error.reason)" }
        let deadline = Date().addingTimeInterval(timeout)
        var status = child.exitStatus()
        while status == nil && Date() < deadline {
            usleep(50_000)
            status = child.exitStatus()
        }
        guard let status else { child.terminate(); return "still running after \(Int(timeout)) s; stopped" }
        return status == 0 ? nil : "exit status \(status)"
    }
}
