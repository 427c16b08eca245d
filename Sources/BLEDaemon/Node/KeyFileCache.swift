import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport

/// Provided key files as parsed once: matching uses the parsed file of each stored row instead
/// of decrypting and parsing (validating every key of) it again. After a restart each stored
/// file is parsed once, at the first use. Shared between the node and the matching thread.
public final class KeyFileCache: @unchecked Sendable {
    public struct Entry: Sendable {
        public var id: Int64
        /// SHA-256 of export.bin: the same file provided again is recognised by it.
        public var digest: Data
        public var file: KeyExportFile
    }

    private let lock = Lock()
    private var entries: [Int64: Entry] = [:]
    private var parseCount = 0

    public init() {}

    /// Stored files parsed by the cache itself (tests: matching again parses nothing).
    public var parses: Int { lock.withLock { parseCount } }

    /// A file just stored under `id` (parsed by whoever accepted it).
    public func insert(id: Int64, file: KeyExportFile, digest: Data) {
        lock.withLock { entries[id] = Entry(id: id, digest: digest, file: file) }
    }

    /// Every stored key file, in the order provided, parsing only those not seen yet, and
    /// forgetting files no longer stored (retention).
    public func current(_ store: NodeStore) throws -> [Entry] {
        let ids = try store.keyFileIDs()
        let missing = lock.withLock { ids.filter { entries[$0] == nil } }
        if !missing.isEmpty {
            for stored in try store.keyFiles(ids: missing) {
                let file = try KeyExportFile(parsing: stored.exportBin)
                lock.withLock {
                    entries[stored.id] = Entry(id: stored.id, digest: SHA256.hash(stored.exportBin), file: file)
                    parseCount += 1
                }
            }
        }
        return lock.withLock {
            let keep = Set(ids)
            entries = entries.filter { keep.contains($0.key) }
            return ids.compactMap { entries[$0] } // a rotten row was quarantined, not parsed
        }
    }
}
