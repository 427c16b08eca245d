import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Log lines for journald when standard error is the journal: systemd sets JOURNAL_STREAM to
/// the device and inode of the stream it connected, and reads a leading `<N>` on each line as
/// the syslog priority (sd-daemon(3)). The journal stamps the time itself, so no timestamp is
/// written; metadata follows the message as key=value so `journalctl -o cat` stays readable.
/// Anywhere else (a terminal, a test harness) swift-log's StreamLogHandler is used as before.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// sd-daemon's priorities (syslog levels) for swift-log's levels.
    public static func priority(_ level: Logger.Level) -> Int {
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
    public static func standardErrorIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    public static func line(level: Logger.Level, label: String, message: Logger.Message, metadata: Logger.Metadata) -> String {
        var text = "<\(priority(level))>\(label): \(message)"
        for key in metadata.keys.sorted() {
            text += " \(key)=\(metadata[key]!)"
        }
        // One journal entry per line: a newline inside a value would start an entry at priority 6.
        return text.replacingOccurrences(of: "\n", with: "\\n") + "\n"
    }

    public func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
                    file: String, function: String, line: UInt) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit { all.merge(explicit) { _, new in new } }
        let text = Self.line(level: level, label: label, message: message, metadata: all)
        // One write(2) per line so concurrent loggers never interleave inside a line.
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress, $0.count - 1) }
    }
}
