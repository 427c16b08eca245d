import Foundation
import PlatformSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's replacements for full Foundation's helpers give what Foundation gave.
@Suite struct PlatformSupportTests {
    @Test func formatsNumbersAsStringFormatDid() {
        let values: [Double] = [0, -0.0, 0.05, 0.15, 0.25, 1.0005, 2.5, -2.5, 1e21, 123456.789, -0.0004, .infinity, -.infinity, .nan, 1.0 / 3]
        for v in values {
            for d in [0, 1, 3] {
                #expect(CFormat.fixed(v, decimals: d) == String(format: "%.\(d)f", v), "\(v) %.\(d)f")
            }
        }
        for b in UInt8.min...UInt8.max {
            #expect(CFormat.string("%02x", b) == String(format: "%02x", b))
            #expect(CFormat.string("\\x%02x", b) == String(format: "\\x%02x", b))
            #expect(CFormat.hex2(b) == String(format: "%02x", b))
        }
        for u: UInt32 in [0, 1, 0x1f, 0x7f] { #expect(CFormat.string("\\u%04x", u) == String(format: "\\u%04x", u)) }
        // Longer than the first buffer.
        #expect(CFormat.fixed(1e100, decimals: 3) == String(format: "%.3f", 1e100))
    }

    @Test func trimsWhitespacesAsFoundationDid() {
        for s in ["", " ", "\t", " a ", "\ta b\t", "\u{00A0}x\u{3000}", "\n x \n", "x\u{2003}", " \u{301}a", "é ", "\r\n"] {
            #expect(s.trimmingWhitespaces() == s.trimmingCharacters(in: .whitespaces), "\(Array(s.unicodeScalars))")
        }
    }

    @Test func trimsWhitespacesAndNewlinesAsFoundationDid() {
        for s in ["", " ", "\t", " a ", "\ta b\t", "\u{00A0}x\u{3000}", "\n x \n", "x\u{2003}", " \u{301}a", "é ", "\r\n", "\u{85}v\u{2028}", "\u{0B}\u{0C}w\u{2029}"] {
            #expect(s.trimmingWhitespacesAndNewlines() == s.trimmingCharacters(in: .whitespacesAndNewlines), "\(Array(s.unicodeScalars))")
        }
    }

    /// Foundation's file errors in the C library's words, read from the error (not from how
    /// a process that links full Foundation renders it).
    @Test func namesFileErrorsInTheCLibrarysWords() {
        func reason(_ body: () throws -> Void) -> String {
            do { try body(); return "" } catch { return SystemCallError.reason(of: error) }
        }
        #expect(reason { _ = try Data(contentsOf: URL(fileURLWithPath: "/nonexistent/gaend")) } == "No such file or directory")
        #expect(reason { _ = try String(contentsOfFile: "/", encoding: .utf8) } == "Is a directory")
        #expect(reason { try FileManager.default.createDirectory(atPath: "/proc/gaend/x", withIntermediateDirectories: true) } == "No such file or directory")
        #expect(reason { throw POSIXError(.EACCES) } == "Permission denied")
        #expect(reason { throw SmallFile.Failure.notARegularFile("a directory") } == "is a directory, not a regular file")
    }

    @Test func runsAChildWithItsEnvironmentAndNoInheritedDescriptors() throws {
        // A descriptor without close-on-exec: the child must not have it.
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "test ! -e /proc/self/fd/\(fd) && test \"$GAEND_X\" = 'a b' && exit 3"],
                                           environment: ["GAEND_X": "a b", "PATH": "/usr/bin:/bin"])
        var status = child.exitStatus()
        while status == nil { usleep(10_000); status = child.exitStatus() }
        #expect(status == 3)
        // Ended by a signal: its number, as Process's terminationStatus gave.
        let sleeper = try ChildProcess.spawn("/bin/sleep", arguments: ["60"], environment: [:])
        #expect(sleeper.exitStatus() == nil)
        sleeper.terminate()
        status = nil
        while status == nil { usleep(10_000); status = sleeper.exitStatus() }
        #expect(status == SIGTERM)
        #expect(throws: SystemCallError.self) { try ChildProcess.spawn("/nonexistent/gaend", arguments: [], environment: [:]) }
    }

    @Test func replacesScalarsAsNSStringDid() {
        for s in ["", "a", "a\nb", "\r\n", "x\n\n", "\"q\"", "a\"\u{301}b"] {
            #expect(s.replacing(scalar: "\n", with: "\\n") == s.replacingOccurrences(of: "\n", with: "\\n"))
        }
        #expect("a\"b\"".replacing(scalar: "\"", with: "\"\"") == "a\"b\"".replacingOccurrences(of: "\"", with: "\"\""))
    }

    @Test func joinsPathsAsNSStringDid() {
        for d in ["/var/lib/gaend", "/var/lib/gaend/", "/var/lib/gaend//", "state", "/", ""] {
            #expect(d.appendingPathComponent("store.sqlite") == (d as NSString).appendingPathComponent("store.sqlite"), "\(d)")
        }
    }

    @Test func namesItsThreads() async {
        let name: String = await withCheckedContinuation { c in
            NamedThread.start("gaend.a-very-long-thread-name") {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                c.resume(returning: comm.trimmingCharacters(in: .newlines))
            }
        }
        #expect(name == "gaend.a-very-lo")
    }
}
