import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import Synchronization
import GaenStore

/// Provided key files as parsed once: matching uses the parsed file of each stored row instead
/// of decrypting and parsing (validating every key of) it again. After a restart each stored
/// file is parsed once, at the first use. Shared between the exposure service and its matching thread.
package final class KeyFileCache: Sendable {
    package struct Entry: Sendable {
        package var id: Int64
        /// SHA-256 of export.bin: the same file provided again is recognised by it.
        package var digest: Data
        package var file: KeyExportFile
    }

    private struct Parsed {
        var entries: [Int64: Entry] = [:]
        var parseCount = 0
    }
    private let parsed = Mutex(Parsed())

    package init() {}

    /// Stored files parsed by the cache itself (tests: matching again parses nothing).
    package var parses: Int { parsed.withLock { $0.parseCount } }

    /// A file just stored under `id` (parsed by whoever accepted it).
    package func insert(id: Int64, file: KeyExportFile, digest: Data) {
        parsed.withLock { $0.entries[id] = Entry(id: id, digest: digest, file: file) }
    }

    /// Every stored key file, in the order provided, parsing only those not seen yet, and
    /// forgetting files no longer stored (retention). The store is read on its thread, the
    /// files parsed on the blocking pool.
    package func current(_ store: NodeStore) async throws -> [Entry] {
        let ids = try await store.keyFileStore.ids()
        let missing = parsed.withLock { p in ids.filter { p.entries[$0] == nil } }
        if !missing.isEmpty {
            let stored = try await store.keyFileStore.files(ids: missing)
            let entries = try await BlockingPool.run { _ in
                try stored.map { Entry(id: $0.id, digest: SHA256.hash($0.exportBin), file: try KeyExportFile(parsing: $0.exportBin)) }
            }
            parsed.withLock { p in
                for e in entries { p.entries[e.id] = e }
                p.parseCount += entries.count
            }
        }
        return parsed.withLock { p in
            let keep = Set(ids)
            p.entries = p.entries.filter { keep.contains($0.key) }
            return ids.compactMap { p.entries[$0] } // a rotten row was quarantined, not parsed
        }
    }
}
