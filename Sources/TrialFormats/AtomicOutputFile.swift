#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// An output file that appears only when the command that writes it succeeds: PlatformSupport's
/// `AtomicFile` (written beside the target, renamed over it by `commit()`) with gaenctl's error,
/// which names the file. A command that fails, throws or is killed never truncates or replaces
/// an existing file; at worst a hidden `.NAME.tmp-XXXXXX` is left behind.
/// Every file gaenctl writes goes through here (exports, key files, reports, simulations).
public final class AtomicOutputFile: @unchecked Sendable {
    public let path: String
    private let file: AtomicFile
    /// The temporary file's descriptor (owned: closed by `commit()`/`discard()`).
    public var descriptor: Int32 { file.descriptor }

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
        do throws(SystemCallError) { file = try AtomicFile(path: path, mode: mode, durable: durable) } catch {
            throw Failure(path: path, reason: error.reason)
        }
    }

    /// Appends bytes to the temporary file.
    public func write(_ data: some DataProtocol) throws {
        for region in data.regions {
            do throws(SystemCallError) { try file.write(region) } catch { throw Failure(path: path, reason: error.reason) }
        }
    }

    /// Puts the finished file in place of the target; on failure the target is left as it was.
    public func commit() throws {
        do throws(SystemCallError) { try file.commit() } catch { throw Failure(path: path, reason: error.reason) }
    }

    /// Drops the temporary file; the target is left as it was.
    public func discard() { file.discard() }

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
