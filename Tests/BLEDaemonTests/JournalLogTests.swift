import Foundation
import Logging
import Testing
@testable import BLEDaemon

@Suite("journald log lines")
struct JournalLogTests {
    @Test func linesCarryThePriorityAndNoTimestamp() {
        let line = JournalLogHandler.line(level: .warning, label: "gaend", message: "scan stalled",
                                          metadata: ["controller": "hci0", "after": "30 s"])
        #expect(line == "<4>gaend: scan stalled after=30 s controller=hci0\n")
        #expect(JournalLogHandler.line(level: .error, label: "g", message: "a\nb", metadata: [:]) == "<3>g: a\\nb\n")
        let levels: [(Logger.Level, Int)] = [(.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2)]
        for (level, n) in levels { #expect(JournalLogHandler.priority(level) == n) }
    }

    @Test func journalIsRecognisedOnlyWhenStderrMatches() {
        var st = stat()
        #expect(fstat(2, &st) == 0)
        #expect(JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino)"]))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino + 1)"]))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "garbage"]))
        #expect(!JournalLogHandler.standardErrorIsJournal(environment: [:]))
    }
}
