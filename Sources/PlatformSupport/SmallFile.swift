#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small file read whole (a key, a PEM, a parameter file), the one way every input file of
/// known small size is read: opened without waiting (O_NONBLOCK: a FIFO with no writer would
/// block open and read for ever, before any signal handler runs), required to be a regular file
/// (so /dev/zero or a FIFO is refused at once with what it is, instead of being read until
/// memory runs out), and bounded by its size up front and again while it is read (a file that
/// grows meanwhile).
public enum SmallFile {
    /// Why a small file was not read; `description` is the reason as a sentence's predicate
    /// ("cannot be opened: No such file or directory", "is a directory, not a regular file").
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// open(2) failed: the system's reason.
        case cannotOpen(String)
        /// fstat(2) or read(2) failed: the system's reason.
        case cannotRead(String)
        /// Not a regular file: what it is ("a FIFO (named pipe)", "a directory", ...).
        case notARegularFile(String)
        /// Its size (as fstat said, or what was read when it grew) is over `limit`.
        case tooLarge(size: Int, limit: Int, grew: Bool)

        public var description: String {
            switch self {
            case .cannotOpen(let reason): "cannot be opened: \(reason)"
            case .cannotRead(let reason): "cannot be read: \(reason)"
            case .notARegularFile(let kind): "is \(kind), not a regular file"
            case .tooLarge(let size, let limit, false): "is \(size) bytes, more than the limit of \(limit)"
            case .tooLarge(_, let limit, true): "is more than \(limit) bytes"
            }
        }
    }

    /// The bytes of the regular file at `path`, at most `limit` of them.
    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(SystemCallError.lastReason) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .cannotRead(SystemCallError.lastReason) }
        if let kind = kind(of: st.st_mode) { throw .notARegularFile(kind) }
        guard Int(st.st_size) <= limit else { throw .tooLarge(size: Int(st.st_size), limit: limit, grew: false) }
        var out = [UInt8]()
        out.reserveCapacity(Int(st.st_size))
        var buffer = [UInt8](repeating: 0, count: min(65_536, limit + 1))
        while true {
            let n: Int
            do throws(SystemCallError) { n = try systemCall("read") { buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) } } } catch {
                throw .cannotRead(error.reason)
            }
            if n == 0 { return out }
            out.append(contentsOf: buffer[0..<n])
            guard out.count <= limit else { throw .tooLarge(size: out.count, limit: limit, grew: true) }
        }
    }

    /// What a file of mode `mode` is when it is not a regular file ("a FIFO (named pipe)",
    /// "a directory", "a character device", ...); nil for a regular file.
    public static func kind(of mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }
}

/// read(2), by a name the enum's own `read` does not hide.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
