import ArgumentParser
import BoardCommands
import BoardNames
import CLISupport
import Foundation
import TrialKit
import TrialFormats

/// `trial report --placement PLAN --collected DIR`: each board's notification against the
/// trial's ground truth (TrialKit's `NotificationVerdicts`; docs/trial.md).
struct TrialNotificationOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The trial's placement plan (placement.csv as `trial provision` writes it): where each board stood, when.", valueName: "FILE"))
    var placement: String?

    @Option(help: ArgumentHelp("The collected tree (the server's collect/ directory): each board's keys and app outcomes under board=NAME/outcomes/.", valueName: "DIR"))
    var collected: String?

    @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Ground truth: a board should be notified after at least this many minutes near a positive board. Repeatable.", valueName: "MINUTES"))
    var contactMinutes: [Double] = []

    @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Ground truth: near means within this many metres. Repeatable (each with each --contact-minutes).", valueName: "METRES"))
    var contactDistance: [Double] = []

    @Option(help: ArgumentHelp("A board known positive whose uploaded keys were not collected (then every day of the collected tree counts). Repeatable.", valueName: "BOARD"))
    var positive: [String] = []

    func check() throws {
        guard (placement == nil) == (collected == nil) else { throw ValidationError("--placement and --collected go together") }
        if placement == nil, !contactMinutes.isEmpty || !contactDistance.isEmpty || !positive.isEmpty {
            throw ValidationError("--contact-minutes, --contact-distance and --positive need --placement and --collected")
        }
        for m in contactMinutes { try NumericOption.check(m, "--contact-minutes", 0.1...(14 * 1_440), unit: "minutes") }
        for d in contactDistance { try NumericOption.check(d, "--contact-distance", 0.01...10_000, unit: "metres") }
        for b in positive { if let problem = BoardName.problem(b) { throw ValidationError("--positive: \(problem)") } }
    }

    var criteria: [NotificationVerdicts.Criterion] {
        let minutes = contactMinutes.isEmpty ? [15] : contactMinutes, metres = contactDistance.isEmpty ? [1.5] : contactDistance
        return minutes.flatMap { m in metres.map { NotificationVerdicts.Criterion(minutes: m, metres: $0) } }
    }

    /// The verdicts, or nil without --placement.
    func result() throws -> NotificationVerdicts.Result? {
        guard let placement, let collected else { return nil }
        let plan = try PlacementPlan.read(path: placement)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: collected, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure("--collected \(collected): not a directory")
        }
        let root = URL(fileURLWithPath: collected)
        var outcomes: [String: NotificationVerdicts.BoardOutcome] = [:]
        for board in plan.boards {
            if let (o, days) = try CollectedOutcomes.read(collected: root, board: board) {
                outcomes[board] = .collected(o, keyDays: days)
            } else {
                outcomes[board] = plan.outcomesConsent(of: board) == false ? .noConsent : .notCollected
            }
        }
        // Outcomes of boards the plan does not list are named in the report's notes.
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: collected)) ?? [] where entry.hasPrefix("board=") {
            let board = String(entry.dropFirst("board=".count)).removingPercentEncoding ?? ""
            if outcomes[board] == nil, let (o, days) = try CollectedOutcomes.read(collected: root, board: board) {
                outcomes[board] = .collected(o, keyDays: days)
            }
        }
        // A stated positive counts on every day the tree holds (the days the boards shipped).
        var days = Set<String>()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: collected)) ?? [] where entry.hasPrefix("board=") {
            for d in (try? FileManager.default.contentsOfDirectory(atPath: collected + "/" + entry)) ?? [] where d.hasPrefix("day=") {
                let day = String(d.dropFirst("day=".count))
                if DailyLayout.start(ofDay: day) != nil { days.insert(day) }
            }
        }
        return NotificationVerdicts.judge(plan: plan, outcomes: outcomes, statedPositives: positive, statedDays: days.sorted(), criteria: criteria)
    }

    static let csvName = "notifications.csv"

    /// notifications.csv, and the section in report.md (after the rest of the report, or alone).
    static func write(_ r: NotificationVerdicts.Result, to dir: URL, appendingToReport: Bool) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let section = NotificationVerdicts.markdown(r, csvName: csvName)
        let reportPath = dir.appendingPathComponent("report.md").path
        let text = appendingToReport ? (try String(contentsOfFile: reportPath, encoding: .utf8)) + "\n" + section : "# Trial report\n\n" + section
        try AtomicOutputFile.write(Data(NotificationVerdicts.csv(r).utf8), to: dir.appendingPathComponent(csvName).path, mode: 0o644)
        try AtomicOutputFile.write(Data(text.utf8), to: reportPath, mode: 0o644)
    }

    static func summary(_ r: NotificationVerdicts.Result, output: String) -> String {
        r.criteria.map { c in
            let v = r.verdicts.filter { $0.criterion == c }
            func n(_ k: NotificationVerdicts.Kind) -> Int { v.filter { $0.kind == k }.count }
            return "notifications (\(c.label)): TP \(n(.tp)), FP \(n(.fp)), FN \(n(.fn)), TN \(n(.tn)), missing \(n(.missing)); \(csvName) in \(output)"
        }.joined(separator: "\n")
    }
}
