#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Text written straight to standard output or standard error, past stdio's buffer (what
/// Foundation's `FileHandle.standardOutput.write` did, for the modules on FoundationEssentials,
/// which has no FileHandle): a reader of a pipe sees each piece at once. A write that fails (a
/// closed pipe) ends the piece quietly, as there is nowhere left to say so.
public enum StandardStream {
    public static func writeOutput(_ text: String) { write(Array(text.utf8), to: STDOUT_FILENO) }
    public static func writeError(_ text: String) { write(Array(text.utf8), to: STDERR_FILENO) }

    public static func write(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("write") { bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + offset, $0.count - offset) } }
            } catch { return }
            offset += n
        }
    }
}

/// write(2), by a name the enum's own `write` does not hide.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
