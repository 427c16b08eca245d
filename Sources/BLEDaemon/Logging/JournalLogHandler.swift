#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Log lines for journald when standard error is the journal: systemd sets JOURNAL_STREAM to
/// the device and inode of the stream it connected, and reads a leading `<N>` on each line as
/// the syslog priority (sd-daemon(3)). The journal stamps the time itself, so no timestamp is
/// written; metadata follows the message as key=value so `journalctl -o cat` stays readable.
/// Anywhere else (a terminal, a test harness) swift-log's StreamLogHandler is used as before.
///
/// With a `JournalSocket` each entry goes to journald's native socket instead, as one datagram
/// of fields: MESSAGE (the same text as the line), PRIORITY, SYSLOG_IDENTIFIER, GAEND_LOGGER (the
/// logger's label), CODE_FILE/CODE_LINE/CODE_FUNC, and each metadata key as a GAEND_* field
/// (`radio.address` -> GAEND_RADIO_ADDRESS), so `journalctl GAEND_CONTROLLER=hci0` and
/// `journalctl -o json` see them. An entry the socket refuses (no journald there, too large for
/// a datagram, its queue still full after a moment) is written to the stream as a line instead.
package struct JournalLogHandler: LogHandler {
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let socket: JournalSocket?
    private let identifier: String

    package init(label: String, socket: JournalSocket? = nil, identifier: String = "gaend") {
        self.label = label
        self.socket = socket
        self.identifier = identifier
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// sd-daemon's priorities (syslog levels) for swift-log's levels.
    package static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// Whether standard error is the stream journald handed this process.
    package static func standardErrorIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    package static func line(level: Logger.Level, label: String, message: Logger.Message, metadata: Logger.Metadata) -> String {
        var text = "<\(priority(level))>\(label): \(message)"
        for key in metadata.keys.sorted() {
            text += " \(key)=\(metadata[key]!)"
        }
        // One journal entry per line: a newline inside a value would start an entry at priority 6.
        return text.replacing(scalar: "\n", with: "\\n") + "\n"
    }

    package func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        let level = event.level, message = event.message
        if let socket {
            let entry = Self.entry(level: level, label: label, identifier: identifier, message: message, metadata: all,
                                   file: event.file, function: event.function, line: event.line)
            if socket.send(entry) { return }
        }
        let text = Self.line(level: level, label: label, message: message, metadata: all)
        // One write(2) per line so concurrent loggers never interleave inside a line.
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress, $0.count - 1) }
    }

    /// A journal field name for a metadata key: GAEND_ and the key in upper case, every
    /// character other than A-Z, 0-9 and _ as _ (journald accepts no others), at most 64 bytes.
    package static func fieldName(_ key: String) -> String {
        let mapped = key.uppercased().unicodeScalars.map { c -> Character in
            (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "_" ? Character(c) : "_"
        }
        return String(("GAEND_" + String(mapped)).prefix(64))
    }

    /// One native-protocol entry (systemd's "Native Journal Protocol"): `NAME=value\n`, or for a
    /// value with a newline `NAME\n`, its length as 64-bit little endian, the value, `\n`.
    package static func entry(level: Logger.Level, label: String, identifier: String, message: Logger.Message,
                             metadata: Logger.Metadata, file: String, function: String, line: UInt) -> [UInt8] {
        var text = "\(label): \(message)"
        for key in metadata.keys.sorted() { text += " \(key)=\(metadata[key]!)" }
        var fields: [(String, String)] = [
            ("MESSAGE", text), ("PRIORITY", "\(priority(level))"), ("SYSLOG_IDENTIFIER", identifier),
            ("GAEND_LOGGER", label), ("CODE_FILE", file), ("CODE_LINE", "\(line)"), ("CODE_FUNC", function),
        ]
        for key in metadata.keys.sorted() { fields.append((fieldName(key), "\(metadata[key]!)")) }
        var out: [UInt8] = []
        for (name, value) in fields {
            out += Array(name.utf8)
            let bytes = Array(value.utf8)
            if bytes.contains(0x0A) {
                out.append(0x0A)
                withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { out += $0 }
                out += bytes
            } else {
                out.append(UInt8(ascii: "="))
                out += bytes
            }
            out.append(0x0A)
        }
        return out
    }
}

/// journald's native socket (`/run/systemd/journal/socket`), a datagram socket shared by
/// every logger. A send waits at most `sendTimeout` for room in journald's queue (a burst at
/// start-up can fill it for a moment); past that the entry is refused (logged to the stream).
package final class JournalSocket: Sendable {
    package static let defaultPath = "/run/systemd/journal/socket"
    private let descriptor: Int32
    private let address: UnixSocketAddress

    /// Nil when the socket cannot be made or the path does not fit.
    package init?(path: String = JournalSocket.defaultPath, sendTimeout: Duration = .milliseconds(250)) {
        guard let a = UnixSocketAddress(path: path) else { return nil }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let (seconds, attoseconds) = sendTimeout.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        descriptor = fd
        address = a
    }

    deinit { _ = close(descriptor) }

    /// Whether journald took the entry.
    package func send(_ entry: [UInt8]) -> Bool {
        let n = entry.withUnsafeBytes { buf in
            address.withSockaddr { sendto(descriptor, buf.baseAddress, buf.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
        return n == entry.count
    }
}
