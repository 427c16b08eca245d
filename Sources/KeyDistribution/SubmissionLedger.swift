import ENProtocol
import Foundation

/// When the publisher first saw each inbox file, kept beside the tree (`OUT.ledger.json`, not
/// served). A file's time is its submission time, but an upload's modification time is the
/// client's to choose (nginx's WebDAV PUT sets it from the request's Date header): a board
/// could date its keys into an hour already published, and a package the apps already hold
/// would change under them. So a file first seen after an earlier run counts as submitted no
/// earlier than that run: a published package never changes.
public struct SubmissionLedger: Codable, Sendable {
    public var lastPublishedAt: Int64?
    /// "path|mtime|size" -> the submission time used.
    public var files: [String: Int64] = [:]
    private var seen: Set<String> = []

    enum CodingKeys: String, CodingKey { case lastPublishedAt, files }

    public init() {}

    public static func path(for output: String) -> String { output + ".ledger.json" }

    public static func load(_ path: String) throws -> SubmissionLedger {
        guard FileManager.default.fileExists(atPath: path) else { return SubmissionLedger() }
        do { return try JSONDecoder().decode(SubmissionLedger.self, from: Data(contentsOf: URL(fileURLWithPath: path))) } catch {
            throw PublishError.io(path: path, reason: "cannot read the publisher's ledger (\(error)); move it away to start afresh")
        }
    }

    /// The submission time of a file: as first seen, or its modification time but not before the last run.
    public mutating func submission(file: String, mtime: Int64, size: Int64) -> Int64 {
        let id = "\(file)|\(mtime)|\(size)"
        seen.insert(id)
        if let t = files[id] { return t }
        let t = max(mtime, lastPublishedAt ?? mtime)
        files[id] = t
        return t
    }

    /// After a publish as of `now`: files no longer in the inbox are forgotten.
    public mutating func published(at now: Int64) {
        files = files.filter { seen.contains($0.key) }
        lastPublishedAt = max(lastPublishedAt ?? now, now)
    }

    public func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let temp = path + ".tmp"
        guard FileManager.default.createFile(atPath: temp, contents: try encoder.encode(self)) else {
            throw PublishError.io(path: temp, reason: "cannot write")
        }
        guard rename(temp, path) == 0 else { throw PublishError.io(path: path, reason: String(cString: strerror(errno))) }
    }
}
