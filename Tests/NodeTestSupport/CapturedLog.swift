import Logging
import Synchronization

/// Keeps every record logged through its `logger` at `level` and above, for tests that check
/// what the node says and at which level.
package final class CapturedLog: Sendable {
    package struct Entry: Sendable, CustomStringConvertible {
        package let level: Logger.Level
        package let message: String
        package let metadata: Logger.Metadata
        package var description: String { metadata.isEmpty ? "\(level): \(message)" : "\(level): \(message) \(metadata)" }
    }

    private let entries = Mutex<[Entry]>([])
    private let level: Logger.Level

    package init(level: Logger.Level = .trace) { self.level = level }

    package func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
    /// Every record, in order.
    package var records: [Entry] { entries.withLock { $0 } }
    /// Level and message of every record, in order.
    package var all: [(Logger.Level, String)] { records.map { ($0.level, $0.message) } }

    /// A logger whose records this log keeps.
    package var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level
        init(log: CapturedLog) {
            self.log = log
            logLevel = log.level
        }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            log.append(Entry(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}
