#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file that appears whole or not at all, the one implementation of "write beside, then
/// rename over": the bytes go to a hidden temporary file in the target's directory (same file
/// system, so the rename is atomic) which `commit()` renames over the target. A writer that
/// fails, throws or is killed never truncates or replaces an existing file; at worst a hidden
/// `.NAME.tmp-XXXXXX` is left behind.
public final class AtomicFile {
    public let path: String
    /// The temporary file's descriptor (owned: closed by `commit()`/`discard()`), for a caller
    /// that hands it on (a D-Bus export) or sets more on it (an owner) before `commit()`.
    public let descriptor: Int32
    public let temporaryPath: String
    private let durable: Bool
    private var finished = false

    /// - Parameters:
    ///   - mode: the new file's permission bits, set with fchmod so the umask does not change them.
    ///   - durable: fsync the file before the rename and the directory after it (a file that
    ///     must survive a power cut); a scratch or re-creatable file skips both.
    public init(path: String, mode: mode_t = 0o600, durable: Bool = true) throws(SystemCallError) {
        self.path = path
        self.durable = durable
        var template = Array("\(PathName.directory(of: path))/.\(PathName.name(of: path)).tmp-XXXXXX".utf8CString)
        let fd = try systemCall("mkstemp") { template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) } }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        descriptor = fd
        guard fchmod(fd, mode) == 0 else {
            let error = SystemCallError(function: "fchmod", errno: errno)
            finished = true
            _ = close(fd); _ = unlink(temporaryPath)
            throw error
        }
    }

    /// Appends bytes to the temporary file.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            offset += try systemCall("write") { systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset) }
        }
    }

    /// Appends bytes to the temporary file.
    public func write<Bytes: Collection>(_ bytes: Bytes) throws(SystemCallError) where Bytes.Element == UInt8 {
        // The closures of the standard library's buffer calls rethrow untyped; the failure is
        // carried out of them instead.
        var failure: SystemCallError?
        let contiguous: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(SystemCallError) { try write(UnsafeRawBufferPointer(buffer)) } catch { failure = error }
        }
        if contiguous == nil {
            Array(bytes).withUnsafeBytes { raw in
                do throws(SystemCallError) { try write(raw) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Puts the finished file in place of the target; on failure the target is left as it was.
    public func commit() throws(SystemCallError) {
        guard !finished else { return }
        finished = true
        do throws(SystemCallError) {
            if durable { try systemCall("fsync") { fsync(descriptor) } }
            // close is not retried: on Linux the descriptor is gone even when it reports EINTR.
            guard close(descriptor) == 0 else { throw SystemCallError(function: "close", errno: errno) }
            try systemCall("rename") { rename(temporaryPath, path) }
        } catch {
            _ = unlink(temporaryPath)
            throw error
        }
        if durable { AtomicFile.syncDirectory(of: path) }
    }

    /// Drops the temporary file; the target is left as it was.
    public func discard() {
        guard !finished else { return }
        finished = true
        _ = close(descriptor)
        _ = unlink(temporaryPath)
    }

    deinit { discard() }

    /// Writes `bytes` to `path` atomically.
    public static func write<Bytes: Collection>(_ bytes: Bytes, to path: String, mode: mode_t = 0o600, durable: Bool = true) throws(SystemCallError)
    where Bytes.Element == UInt8 {
        let file = try AtomicFile(path: path, mode: mode, durable: durable)
        try file.write(bytes)
        try file.commit()
    }

    /// Moves a file a caller built under its own temporary name (a database its library
    /// created) over `path`: flushed, renamed, the directory flushed. On failure the temporary
    /// file is removed and the target left as it was.
    public static func replace(_ path: String, with temporary: String) throws(SystemCallError) {
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        if fd >= 0 { _ = fsync(fd); _ = close(fd) }
        do throws(SystemCallError) { try systemCall("rename") { rename(temporary, path) } } catch {
            _ = unlink(temporary)
            throw error
        }
        syncDirectory(of: path)
    }

    /// Flushes the directory holding `path`: a rename survives a power cut only once it is on disk.
    public static func syncDirectory(of path: String) {
        let fd = open(PathName.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { _ = fsync(fd); _ = close(fd) }
    }

}

/// write(2), by a name the class's own `write` does not hide.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
