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

    /// A stand-in for journald's socket: a datagram socket bound in a temporary directory.
    final class FakeJournal {
        let path: String
        let fd: Int32

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString.prefix(8))").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var a = sockaddr_un()
            a.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &a.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
            let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            #expect(r == 0)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd); unlink(path) }

        /// One datagram, parsed as the native protocol (both the text and the binary form).
        func receive() -> [String: String] {
            var buf = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &buf, buf.count, 0)
            guard n > 0 else { return [:] }
            var fields: [String: String] = [:]
            var i = 0
            let bytes = Array(buf[..<n])
            while i < bytes.count {
                let end = bytes[i...].firstIndex { $0 == 0x0A || $0 == UInt8(ascii: "=") }!
                let name = String(decoding: bytes[i..<end], as: UTF8.self)
                if bytes[end] == UInt8(ascii: "=") {
                    let nl = bytes[end...].firstIndex(of: 0x0A)!
                    fields[name] = String(decoding: bytes[(end + 1)..<nl], as: UTF8.self)
                    i = nl + 1
                } else {
                    var length: UInt64 = 0
                    for k in 0..<8 { length |= UInt64(bytes[end + 1 + k]) << (8 * UInt64(k)) }
                    let start = end + 9
                    fields[name] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                    #expect(bytes[start + Int(length)] == 0x0A)
                    i = start + Int(length) + 1
                }
            }
            return fields
        }
    }

    @Test("with the native socket each entry is one datagram of fields: priority, message, metadata as GAEND_*")
    func nativeProtocol() throws {
        let journal = try FakeJournal()
        let socket = try #require(JournalSocket(path: journal.path))
        var logger = Logger(label: "gaend.radio") { JournalLogHandler(label: $0, socket: socket) }
        logger.logLevel = .debug
        logger.warning("scan stalled", metadata: ["controller": "hci0", "radio.address": "3A:11:22:33:44:55"])
        let f = journal.receive()
        #expect(f["MESSAGE"] == "gaend.radio: scan stalled controller=hci0 radio.address=3A:11:22:33:44:55")
        #expect(f["PRIORITY"] == "4" && f["SYSLOG_IDENTIFIER"] == "gaend" && f["GAEND_LOGGER"] == "gaend.radio")
        #expect(f["GAEND_CONTROLLER"] == "hci0" && f["GAEND_RADIO_ADDRESS"] == "3A:11:22:33:44:55")
        #expect(f["CODE_FILE"]?.hasSuffix("JournalLogTests.swift") == true && f["CODE_LINE"].flatMap { Int($0) } != nil)
        // A value with a newline goes in the binary form, whole (one entry, not two).
        logger.error("failed", metadata: ["error": "line 1\nline 2"])
        let g = journal.receive()
        #expect(g["GAEND_ERROR"] == "line 1\nline 2" && g["PRIORITY"] == "3")
        #expect(g["MESSAGE"] == "gaend.radio: failed error=line 1\nline 2")
        #expect(JournalLogHandler.fieldName("hci.error-code") == "GAEND_HCI_ERROR_CODE")
        #expect(JournalLogHandler.fieldName(String(repeating: "k", count: 100)).count == 64)
    }

    @Test("no journald at the socket: the entry is refused, so the handler falls back to the stream")
    func noSocket() throws {
        let socket = try #require(JournalSocket(path: "/nonexistent/journal/socket"))
        #expect(!socket.send(Array("MESSAGE=x\n".utf8)))
        #expect(JournalSocket(path: String(repeating: "p", count: 200)) == nil)
    }
}
