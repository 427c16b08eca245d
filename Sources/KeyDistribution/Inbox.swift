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
import TrialFormats

/// The publisher's inbox: the files the boards uploaded (the web server's WebDAV PUT puts
/// them there, one folder per board), export zips, bare export.bin or JSON key lists, signed
/// or not: the upload itself was authenticated by the web server with the board's credentials.
///
/// Authenticated is not trusted: each key passes the rules every app and gaend apply
/// (`KeyRules`), and each board has a budget per day of submission, in keys and in bytes, so
/// one board cannot crowd the others out of a package or make the publisher's work grow.
public enum Inbox {
    public struct Skipped: Sendable {
        public var file: String
        public var reason: String
    }

    /// What one board's files gave, for the run's report.
    public struct BoardReport: Sendable, Equatable {
        public var files = 0
        public var bytes = 0
        public var keysAccepted = 0
        /// Keys refused, by reason (`KeyRefusal.kind`, or a budget).
        public var refused: [String: Int] = [:]
        /// The first refusal of each reason, in full: which file, which key, which value.
        public var examples: [String: String] = [:]
        /// Files not read because the board's bytes for the day were spent.
        public var filesOverBudget = 0
        public var keysRefused: Int { refused.values.reduce(0, +) }
    }

    /// Per board and UTC day of submission.
    public struct Budget: Sendable, Equatable {
        /// Keys a board may submit in a day. A phone uploads at most its 14 days of history
        /// and today's key (the framework's diagnosis-key history), so 15 is a whole honest
        /// upload; a board uploads once a day, usually one key.
        public var keysPerBoardDay = 15
        /// Bytes of files a board may submit in a day: four of the web server's largest uploads
        /// (64 KiB each); a board's daily upload is a few hundred bytes.
        public var bytesPerBoardDay = 256 << 10
        public init() {}
    }

    public struct Result: Sendable {
        public var keys: [SubmittedKey] = []
        public var files = 0
        public var skipped: [Skipped] = []
        /// By board (the first folder under the inbox; "" for files directly in it, which are
        /// the operator's and have no budget).
        public var boards: [String: BoardReport] = [:]
        public var keysRefused: Int { boards.values.reduce(0) { $0 + $1.keysRefused } }
    }

    /// Files larger than this are skipped (a board's 14 keys are a few hundred bytes).
    public static let maxFileSize = 1 << 20
    /// Directories are read this deep (the web server keeps one directory per board).
    static let maxDepth = 3

    /// Every acceptable key in `directory`, with its file's submission time from `ledger`
    /// (its modification time, but not before the ledger's last publication for a file first
    /// seen now). A file that is not a key file is skipped with its reason, not fatal: one
    /// board's bad upload must not stop the trial's publication. Names starting with "." (a
    /// web server's temporary files) are ignored.
    ///
    /// Every decision depends only on the files' bytes and the ledger: keys are judged as of
    /// their file's submission (not the run's moment), and a board's budget is spent in the
    /// order its files were first seen. So a run later over the same inbox accepts the same
    /// keys, and a published package keeps its keys.
    ///
    /// `fileTime` turns a modification time (real Unix seconds) into the publisher's time: the
    /// identity, or a rehearsal's trial clock (TrialTime), whose `now` is the trial's too.
    public static func read(_ directory: String, ledger: inout SubmissionLedger, now: Int64, budget: Budget = Budget(),
                            retentionDays: Int = 14, fileTime: (Int64) -> Int64 = { $0 }) throws -> Result {
        var result = Result()
        try checkDirectory(directory)
        // Only names and digests are kept between the passes: memory stays flat in the inbox's size.
        struct Candidate {
            var path: String, board: String, digest: String, size: Int, entry: SubmissionLedger.Entry
        }
        var candidates: [Candidate] = []
        func walk(_ dir: String, depth: Int) throws {
            let names: [String]
            switch Swift.Result(catching: { try FileManager.default.contentsOfDirectory(atPath: dir) }) {
            case .success(let listed): names = listed.sorted()
            case .failure(let error):
                if dir == directory { throw PublishError.io(path: dir, reason: "cannot read the inbox: \(SystemCallError.reason(of: error))") }
                result.skipped.append(Skipped(file: dir, reason: "cannot read the folder: \(SystemCallError.reason(of: error))"))
                return
            }
            for name in names where !name.hasPrefix(".") {
                let path = dir + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR {
                    if depth < maxDepth { try walk(path, depth: depth + 1) }
                    continue
                }
                if let kind = SmallFile.kind(of: st.st_mode) { result.skipped.append(Skipped(file: path, reason: "is \(kind), not a regular file")); continue }
                guard Int(st.st_size) <= maxFileSize else { result.skipped.append(Skipped(file: path, reason: "\(st.st_size) bytes, more than \(maxFileSize)")); continue }
                let relative = String(path.dropFirst(directory.count + 1))
                let board = relative.contains("/") ? String(relative.prefix(while: { $0 != "/" })) : ""
                // Opened without waiting and checked again after opening: a FIFO swapped in
                // after lstat is refused at once, not waited on.
                let bytes: [UInt8]
                do { bytes = try SmallFile.read(path, limit: maxFileSize) } catch {
                    result.skipped.append(Skipped(file: path, reason: error.description))
                    continue
                }
                let digest = SHA256.hash(bytes).hexString
                let entry = ledger.submission(digest: digest, file: relative, mtime: fileTime(Int64(st.st_mtim.tv_sec)), size: Int64(bytes.count), now: now)
                candidates.append(Candidate(path: path, board: board, digest: digest, size: bytes.count, entry: entry))
            }
        }
        try walk(directory, depth: 0)

        // A board's files in the order first seen; the same bytes twice count once.
        candidates.sort { ($0.board, $0.entry.sequence) < ($1.board, $1.entry.sequence) }
        var previous: (board: String, sequence: Int64)?
        struct DayUse { var keys = 0, bytes = 0 }
        var use: [String: [Int64: DayUse]] = [:]
        var boardKeys: [String: Set<Data>] = [:]
        for c in candidates {
            defer { previous = (c.board, c.entry.sequence) }
            if let previous, previous.board == c.board, previous.sequence == c.entry.sequence { continue }
            var report = result.boards[c.board] ?? BoardReport()
            defer { result.boards[c.board] = report }
            result.files += 1
            report.files += 1
            let day = PublicationPlan.floorDiv(c.entry.submittedAt, 86_400)
            var today = use[c.board]?[day] ?? DayUse()
            defer { use[c.board, default: [:]][day] = today }
            // Files directly in the inbox were put there by the operator (the web server writes
            // a board's uploads only into its own folder): the key rules apply, no board budget.
            let budgeted = !c.board.isEmpty
            guard !budgeted || today.bytes + c.size <= budget.bytesPerBoardDay else {
                report.filesOverBudget += 1
                result.skipped.append(Skipped(file: c.path, reason: "the board's files of \(UTCDay(Int32(day)).isoDate) are over its \(budget.bytesPerBoardDay) bytes"))
                continue
            }
            today.bytes += c.size
            report.bytes += c.size
            let keys: [DiagnosisKey]
            do {
                // Read again (the first pass kept only its digest); the bytes must still be those.
                let bytes = try SmallFile.read(c.path, limit: maxFileSize)
                guard SHA256.hash(bytes).hexString == c.digest else {
                    result.skipped.append(Skipped(file: c.path, reason: "changed while the publisher read it; taken on the next run"))
                    continue
                }
                keys = try decode(Data(bytes), file: c.path)
            } catch {
                result.skipped.append(Skipped(file: c.path, reason: "\(error)"))
                continue
            }
            // Judged as of the submission: the same verdict on every run.
            let submittedDay = UTCDay(Int32(day))
            let earliest = submittedDay.advanced(by: -retentionDays).firstInterval.rawValue
            for key in keys {
                if let refusal = KeyRules.refusal(of: key, now: Double(c.entry.submittedAt), earliestStart: earliest) {
                    report.refused[refusal.kind, default: 0] += 1
                    if report.examples[refusal.kind] == nil { report.examples[refusal.kind] = "\(c.path): \(refusal)" }
                    continue
                }
                let id = key.key.bytes + key.rollingStartIntervalNumber.littleEndianBytes
                if boardKeys[c.board]?.contains(id) == true { continue } // uploaded again: counted once
                guard !budgeted || today.keys < budget.keysPerBoardDay else {
                    let kind = "over the board's \(budget.keysPerBoardDay) keys a day"
                    report.refused[kind, default: 0] += 1
                    if report.examples[kind] == nil { report.examples[kind] = "\(c.path): submitted on \(submittedDay.isoDate)" }
                    continue
                }
                today.keys += 1
                boardKeys[c.board, default: []].insert(id)
                report.keysAccepted += 1
                result.keys.append(SubmittedKey(key: key, submittedAt: c.entry.submittedAt))
            }
        }
        return result
    }

    /// The inbox itself must be a directory the publisher can read; say which it is not.
    static func checkDirectory(_ directory: String) throws {
        var st = stat()
        guard stat(directory, &st) == 0 else {
            throw PublishError.io(path: directory, reason: "cannot read the inbox: \(SystemCallError.lastReason)")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw PublishError.io(path: directory, reason: "the inbox is \(SmallFile.kind(of: st.st_mode) ?? "a regular file"), not a directory")
        }
        guard access(directory, R_OK | X_OK) == 0 else {
            throw PublishError.io(path: directory, reason: "cannot read the inbox: \(SystemCallError.lastReason)")
        }
    }

    static func decode(_ data: Data, file: String) throws -> [DiagnosisKey] {
        if KeyInputKind.detect(data) == .jsonKeyList { return try KeyListFile.decode(data, file: file) }
        let export = try KeyExportFile(parsing: data, limits: KeyExportLimits(maxFileSize: maxFileSize, maxExportSize: maxFileSize))
        return export.keyBatches().flatMap { $0 }
    }
}
