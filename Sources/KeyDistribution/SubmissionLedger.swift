import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport

/// When the publisher first saw each inbox file, kept beside the tree (`OUT.ledger.json`, not
/// served). A file's time is its submission time, but an upload's modification time is the
/// client's to choose (nginx's WebDAV PUT sets it from the request's Date header): a board
/// could date its keys into an hour already published, and a package the apps already hold
/// would change under them. So a file first seen after an earlier run counts as submitted no
/// earlier than that run: a published package never changes.
///
/// A file is known by its content (SHA-256 of its bytes), never by path, time or size: a board
/// that rewrites a file keeping all three (nginx takes the time from the client) has made a
/// new submission, not the old one again. Each submission also gets the order in which it was
/// first seen, so a board's budget is spent in that order on every run, whatever times the
/// board put on its files.
public struct SubmissionLedger: Codable, Sendable {
    public struct Entry: Codable, Sendable, Equatable {
        /// Unix seconds: when the file counts as submitted.
        public var submittedAt: Int64
        /// Order of first sight over the ledger's life.
        public var sequence: Int64
    }

    public var lastPublishedAt: Int64?
    /// SHA-256 (hex) of a file's bytes -> its submission.
    public var submissions: [String: Entry] = [:]
    var nextSequence: Int64 = 0
    /// A ledger written before submissions were known by content: "path|mtime|size" -> time.
    /// A file that still matches one keeps that time (its keys stay where they were published).
    var legacyFiles: [String: Int64] = [:]
    private var seen: Set<String> = []

    enum CodingKeys: String, CodingKey { case lastPublishedAt, submissions, nextSequence, legacyFiles = "files" }

    public init() {}

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lastPublishedAt = try c.decodeIfPresent(Int64.self, forKey: .lastPublishedAt)
        submissions = try c.decodeIfPresent([String: Entry].self, forKey: .submissions) ?? [:]
        nextSequence = try c.decodeIfPresent(Int64.self, forKey: .nextSequence) ?? (submissions.values.map(\.sequence).max().map { $0 + 1 } ?? 0)
        legacyFiles = try c.decodeIfPresent([String: Int64].self, forKey: .legacyFiles) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(lastPublishedAt, forKey: .lastPublishedAt)
        try c.encode(submissions, forKey: .submissions)
        try c.encode(nextSequence, forKey: .nextSequence)
        if !legacyFiles.isEmpty { try c.encode(legacyFiles, forKey: .legacyFiles) }
    }

    public static func path(for output: String) -> String { output + ".ledger.json" }

    public static func load(_ path: String) throws -> SubmissionLedger {
        guard FileManager.default.fileExists(atPath: path) else { return SubmissionLedger() }
        do { return try JSONDecoder().decode(SubmissionLedger.self, from: Data(contentsOf: URL(fileURLWithPath: path))) } catch {
            throw PublishError.io(path: path, reason: "cannot read the publisher's ledger (\(error)); move it away to start afresh")
        }
    }

    /// Unix seconds a publisher's clock can plausibly read: from 2020-01-01 (before the first
    /// exposure notification) to 2100-01-01. Outside it a time is a unit or clock error
    /// (milliseconds for seconds), and interval and day numbers would overflow.
    public static let plausibleTimes: ClosedRange<Int64> = 1_577_836_800...4_102_444_800

    /// What the ledger says about the clock, found by `recover(now:)`.
    public struct ClockRepair: Sendable, Equatable {
        /// The last publication the ledger recorded (after `now`, or implausible).
        public var lastPublishedAt: Int64
        /// Submissions that had been dated after `now`, now dated `now`.
        public var submissionsRedated: Int
    }

    /// A ledger written by a run whose clock was ahead (a wrong `--now`, a clock that jumped
    /// forward and back) holds a last publication in the future: every file first seen after
    /// it would count as submitted then, and wait for it. Such times are brought back to `now`
    /// and the repair is returned, for the caller to report; nil when the ledger is sound.
    public mutating func recover(now: Int64) -> ClockRepair? {
        guard let last = lastPublishedAt, last > now || !Self.plausibleTimes.contains(last) else { return nil }
        var redated = 0
        for (id, entry) in submissions where entry.submittedAt > now {
            submissions[id]?.submittedAt = now
            redated += 1
        }
        for (id, t) in legacyFiles where t > now { legacyFiles[id] = now }
        lastPublishedAt = now
        return ClockRepair(lastPublishedAt: last, submissionsRedated: redated)
    }

    /// The submission of a file with these bytes' SHA-256 (`digest`, hex): as first seen, or
    /// its modification time but not before the last run, nor after `now` (a file cannot have
    /// arrived later than it is seen). `file`, `size` find a legacy entry.
    public mutating func submission(digest: String, file: String, mtime: Int64, size: Int64, now: Int64) -> Entry {
        seen.insert(digest)
        if let e = submissions[digest] { return e }
        let t = legacyFiles["\(file)|\(mtime)|\(size)"] ?? min(max(mtime, lastPublishedAt ?? mtime, Self.plausibleTimes.lowerBound), max(now, Self.plausibleTimes.lowerBound))
        let e = Entry(submittedAt: t, sequence: nextSequence)
        nextSequence += 1
        submissions[digest] = e
        return e
    }

    /// After a publish as of `now`: files no longer in the inbox are forgotten, legacy entries
    /// too (every file still there has its content entry now).
    public mutating func published(at now: Int64) {
        submissions = submissions.filter { seen.contains($0.key) }
        legacyFiles = [:]
        lastPublishedAt = now
    }

    public func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Not served, nothing secret: readable as the tree beside it is.
        let data = try encoder.encode(self)
        do throws(SystemCallError) { try AtomicFile.write(data, to: path, mode: 0o644) } catch {
            throw PublishError.io(path: path, reason: error.description)
        }
    }
}
