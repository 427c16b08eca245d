import Foundation
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// An output file that appears only when the command that writes it succeeds: the bytes go to
/// a temporary file beside the target (same directory, so same file system) which is renamed
/// over the target by `commit()`. A command that fails, throws or is killed never truncates or
/// replaces an existing file; at worst a hidden `.NAME.tmp-XXXXXX` is left behind.
/// Every file gaenctl writes goes through here (exports, key files, reports, simulations).
public final class AtomicOutputFile: @unchecked Sendable {
    public let path: String
    /// The temporary file's descriptor (owned: closed by `commit()`/`discard()`).
    public let descriptor: Int32
    private let temporaryPath: String
    private let durable: Bool
    private var finished = false

    public struct Failure: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// - Parameters:
    ///   - mode: the new file's permission bits, set with fchmod so the umask does not widen
    ///     them. 0600 unless a caller asks otherwise: what gaenctl writes holds keys, sightings
    ///     or what was computed from them.
    ///   - durable: fsync before the rename (a key file, an export handed to someone); files
    ///     of a freshly written directory (reports, simulations) skip it.
    public init(path: String, mode: mode_t = 0o600, durable: Bool = true) throws {
        self.path = path
        self.durable = durable
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        var template = Array("\(dir)/.\(url.lastPathComponent).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        descriptor = fd
        _ = fchmod(fd, mode)
    }

    /// Appends bytes to the temporary file.
    public func write(_ data: some DataProtocol) throws {
        for region in data.regions {
            try region.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n: Int
                    do throws(SystemCallError) { n = try systemCall("write") { Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset) } } catch {
                        throw Failure(path: path, reason: error.reason)
                    }
                    offset += n
                }
            }
        }
    }

    /// Puts the finished file in place of the target.
    public func commit() throws {
        guard !finished else { return }
        finished = true
        if durable, fsync(descriptor) != 0 {
            let reason = String(cString: strerror(errno))
            _ = close(descriptor); _ = unlink(temporaryPath)
            throw Failure(path: path, reason: reason)
        }
        guard close(descriptor) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = unlink(temporaryPath)
            throw Failure(path: path, reason: reason)
        }
        guard rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = unlink(temporaryPath)
            throw Failure(path: path, reason: reason)
        }
        if durable {
            // The rename itself survives a power cut only once the directory is on disk.
            let dir = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dir >= 0 { _ = fsync(dir); _ = close(dir) }
        }
    }

    /// Drops the temporary file; the target is left as it was.
    public func discard() {
        guard !finished else { return }
        finished = true
        _ = close(descriptor)
        _ = unlink(temporaryPath)
    }

    deinit { discard() }

    /// Writes `data` to `path` atomically.
    public static func write(_ data: some DataProtocol, to path: String, mode: mode_t = 0o600, durable: Bool = true) throws {
        let file = try AtomicOutputFile(path: path, mode: mode, durable: durable)
        do { try file.write(data) } catch { file.discard(); throw error }
        try file.commit()
    }

    /// Runs `body` with the temporary file, committing only if it returns (synchronous callers).
    public static func with<T>(path: String, mode: mode_t = 0o644, durable: Bool = true,
                               _ body: (AtomicOutputFile) throws -> T) throws -> T {
        let file = try AtomicOutputFile(path: path, mode: mode, durable: durable)
        do {
            let result = try body(file)
            try file.commit()
            return result
        } catch {
            file.discard()
            throw error
        }
    }

    /// Runs `body` with the temporary file, committing only if it returns.
    public static func with<T>(path: String, mode: mode_t = 0o600, durable: Bool = true,
                               _ body: (AtomicOutputFile) async throws -> T) async throws -> T {
        let file = try AtomicOutputFile(path: path, mode: mode, durable: durable)
        do {
            let result = try await body(file)
            try file.commit()
            return result
        } catch {
            file.discard()
            throw error
        }
    }
}
