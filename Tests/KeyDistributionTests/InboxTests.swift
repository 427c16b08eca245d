import ENProtocol
import Foundation
import PlatformSupport
import Testing
@testable import KeyDistribution

/// The publisher's inbox against hostile boards (issue 29, findings 2-5): keys judged by the
/// rules gaend applies, budgets per board, submissions known by content, a ledger whose clock
/// was ahead.
@Suite struct InboxTests {
    static let day: Int64 = 86_400
    // 15:20 UTC on 2025-11-08.
    static let now: Int64 = 20_400 * day + 15 * 3600 + 1_200
    static var today: Int64 { now / day }

    final class Folder {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("inbox-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// A JSON key list at `name` (a board's folder is created), modified at `mtime`.
        func write(_ name: String, _ keys: [[String: Any]], mtime: Int64) throws {
            let file = path + "/" + name
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try JSONSerialization.data(withJSONObject: keys).write(to: URL(fileURLWithPath: file))
            try setMtime(file, mtime)
        }

        func setMtime(_ file: String, _ mtime: Int64) throws {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(mtime))], ofItemAtPath: file)
        }
    }

    static func key(_ n: Int, day: Int64, _ extra: [String: Any] = [:]) -> [String: Any] {
        var k: [String: Any] = ["keyData": String(format: "%032x", n), "rollingStartIntervalNumber": day * 144]
        k.merge(extra) { $1 }
        return k
    }

    @Test("keys gaend refuses are refused with their reason; the honest keys of the same file are taken")
    func hostileValuesRefused() throws {
        let inbox = try Folder()
        try inbox.write("board-a/keys.json", [
            Self.key(1, day: Self.today - 2), Self.key(2, day: Self.today - 3), Self.key(3, day: Self.today - 4),
            Self.key(4, day: Self.today - 2, ["daysSinceOnsetOfSymptoms": 2_147_483_647]),
            Self.key(5, day: Self.today - 2, ["transmissionRiskLevel": 99]),
            Self.key(6, day: 0), // 1970
            Self.key(7, day: Self.today + 400),
        ], mtime: Self.now - 7200)
        var ledger = SubmissionLedger()
        let read = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now)
        #expect(Set(read.keys.map { $0.key.key.bytes.last! }) == [1, 2, 3])
        let board = try #require(read.boards["board-a"])
        #expect(board.refused == ["days since onset": 1, "transmission risk": 1, "older than retention": 1, "starts after tomorrow": 1])
        #expect(board.examples["days since onset"]?.contains("days_since_onset_of_symptoms 2147483647 is outside -14...14") == true)
        // What was accepted is what gaend accepts: a package of them passes checkAcceptable.
        let bin = try KeyExportWriter.exportBin(header: KeyExportHeader(covering: read.keys.map(\.key), region: "DE"), keys: read.keys.map(\.key))
        var perDay: [UInt32: Int] = [:]
        try KeyExportFile(parsing: bin).checkAcceptable(now: Double(Self.now), keysPerDay: &perDay)
    }

    @Test("a board gets its budget of keys and bytes a day, in the order its files were first seen; other boards are untouched")
    func perBoardBudget() throws {
        let inbox = try Folder()
        // The flooding board: 40 files of 100 keys each (distinct keys), all today.
        for f in 0..<40 {
            try inbox.write("flood/f\(f).json", (0..<100).map { Self.key(1_000_000 + f * 100 + $0, day: Self.today - 1) }, mtime: Self.now - 3600)
        }
        try inbox.write("honest/k.json", [Self.key(7, day: Self.today - 1)], mtime: Self.now - 3600)
        var budget = Inbox.Budget()
        budget.keysPerBoardDay = 15
        budget.bytesPerBoardDay = 64 << 10
        var ledger = SubmissionLedger()
        let read = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now, budget: budget)
        let flood = try #require(read.boards["flood"])
        #expect(flood.keysAccepted == 15)
        #expect(flood.refused["over the board's 15 keys a day"]! > 0)
        #expect(flood.filesOverBudget > 0) // ~6.4 KB a file: the 64 KiB ran out before the 40th
        #expect(flood.bytes <= 64 << 10)
        #expect(read.boards["honest"]?.keysAccepted == 1)
        #expect(read.keys.count == 16)

        // A later file dated earlier by the board does not take the budget of the first ones.
        ledger.published(at: Self.now)
        try inbox.write("flood/early.json", (0..<15).map { Self.key(5_000_000 + $0, day: Self.today - 1) }, mtime: Self.now - 5 * 3600)
        let again = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now + 60)
        #expect(Set(again.keys.map(\.key)) == Set(read.keys.map(\.key)))
    }

    @Test("a file rewritten with the same path, time and size is a new submission, dated no earlier than the last run")
    func contentIdentifiesASubmission() throws {
        let inbox = try Folder()
        let t = Self.now - 5 * 3600
        try inbox.write("b/keys.json", [Self.key(0x11, day: Self.today - 1)], mtime: t)
        var ledger = SubmissionLedger()
        let first = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now)
        ledger.published(at: Self.now)
        #expect(first.keys.map(\.submittedAt) == [t])
        // Same size (one hex digit changed), same path, same time.
        try inbox.write("b/keys.json", [Self.key(0x22, day: Self.today - 1)], mtime: t)
        let second = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now + 3600)
        #expect(second.keys.map(\.key.key.bytes.last!) == [0x22])
        #expect(second.keys.map(\.submittedAt) == [Self.now]) // after the hour already published
    }

    @Test("a ledger whose last publication is ahead of now is brought back, and new uploads are published, not held")
    func clockAheadRecovers() throws {
        let inbox = try Folder()
        var ledger = SubmissionLedger()
        // A run with --now in the far future (plausible, or milliseconds).
        for bad in [Self.now + 400 * Self.day, Self.now * 1000] {
            ledger.lastPublishedAt = bad
            try inbox.write("b/new-\(bad).json", [Self.key(Int(bad % 1000), day: Self.today - 1)], mtime: Self.now - 2 * 3600)
            let repaired = ledger.recover(now: Self.now)
            let repair = try #require(repaired)
            #expect(repair.lastPublishedAt == bad)
            #expect(ledger.lastPublishedAt == Self.now)
            let read = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now)
            #expect(read.keys.allSatisfy { $0.submittedAt <= Self.now })
            var o = PublishOptions(country: "DE", region: "DE")
            o.minimumKeysPerPackage = 1
            // By the next hour everything uploaded so far is published.
            let plan = PublicationPlan.plan(read.keys, now: Self.now + 3600, options: o)
            #expect(plan.keysWaiting == 0 && plan.keysPublished == read.keys.count)
            ledger.published(at: Self.now)
        }
        let sound = ledger.recover(now: Self.now)
        #expect(sound == nil)
        // Submissions recorded during the bad run, dated after now, are redated to now.
        ledger.submissions["x"] = .init(submittedAt: Self.now + 99 * Self.day, sequence: 99)
        ledger.lastPublishedAt = Self.now + 99 * Self.day
        let redated = ledger.recover(now: Self.now)
        #expect(redated?.submissionsRedated == 1)
        #expect(ledger.submissions["x"]?.submittedAt == Self.now)
    }

    @Test("special files and unreadable inboxes are named, never waited on")
    func specialFiles() throws {
        let inbox = try Folder()
        try FileManager.default.createDirectory(atPath: inbox.path + "/b", withIntermediateDirectories: true)
        #expect(mkfifo(inbox.path + "/b/pipe.zip", 0o644) == 0)
        var ledger = SubmissionLedger()
        let read = try Inbox.read(inbox.path, ledger: &ledger, now: Self.now)
        #expect(read.skipped.map(\.reason) == ["is a FIFO (named pipe), not a regular file"])
        let file = inbox.path + "/b/x.json"
        try Data("[]".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: PublishError.self) { try Inbox.read(file, ledger: &ledger, now: Self.now) }
        do { _ = try Inbox.read(file, ledger: &ledger, now: Self.now) } catch {
            #expect("\(error)".contains("the inbox is a regular file, not a directory"))
        }
    }

    @Test("names from the inbox are printed with control characters escaped")
    func safeText() {
        #expect(TextSafety.escaped("a\u{1b}[31mb\nfake line\r\\") == "a\\u{1b}[31mb\\nfake line\\r\\\\")
        #expect(TextSafety.escaped("board-07") == "board-07")
    }
}
