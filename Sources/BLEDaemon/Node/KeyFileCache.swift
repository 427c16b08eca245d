import ENProtocol
import Foundation

/// Provided key files as parsed once: matching looks each stored file up by the SHA-256 of its
/// export.bin instead of parsing (and validating every key of) it again. Holds only the files
/// still stored; shared between the node and the matching thread.
public final class KeyFileCache: @unchecked Sendable {
    private let lock = NSLock()
    private var files: [Data: KeyExportFile] = [:]
    private var parseCount = 0

    public init() {}

    /// Files parsed by the cache itself (tests: matching again parses nothing).
    public var parses: Int { lock.withLock { parseCount } }

    public func insert(_ file: KeyExportFile) {
        let digest = SHA256.hash(file.exportBin)
        lock.withLock { files[digest] = file }
    }

    /// The parsed files of `payloads` (stored export.bin bytes), parsing only those not seen;
    /// forgets every file not among them.
    public func files(for payloads: [Data]) throws -> [KeyExportFile] {
        let digests = payloads.map { SHA256.hash($0) }
        var out: [KeyExportFile] = []
        for (digest, payload) in zip(digests, payloads) {
            if let f = lock.withLock({ files[digest] }) { out.append(f); continue }
            let f = try KeyExportFile(parsing: payload)
            lock.withLock { files[digest] = f; parseCount += 1 }
            out.append(f)
        }
        let keep = Set(digests)
        lock.withLock { files = files.filter { keep.contains($0.key) } }
        return out
    }
}
