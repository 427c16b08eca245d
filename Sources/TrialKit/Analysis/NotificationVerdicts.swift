import Foundation
import TrialFormats

/// Each board's notification against the trial's own ground truth (docs/trial.md, "Was each
/// board's notification right"): the placement plan gives the distance between any two boards
/// over time, the collected outcomes say which boards were reported positive (the days whose
/// keys their app uploaded) and whether each board's app found high risk. A board should have
/// been notified when, for some positive board, the time within `metres` of it during that
/// board's infectious days (the UTC days of its uploaded keys) adds up to at least `minutes`.
public enum NotificationVerdicts {
    public struct Criterion: Sendable, Equatable {
        public var minutes: Double
        public var metres: Double
        public init(minutes: Double, metres: Double) { self.minutes = minutes; self.metres = metres }
        public var label: String { "\(Format.clean(minutes)) min within \(Format.clean(metres)) m" }
    }

    /// What the collected tree holds for a board.
    public enum BoardOutcome: Sendable, Equatable {
        case collected(CollectedOutcomes, keyDays: [String])
        /// The plan says the participant did not consent: nothing left the board.
        case noConsent
        /// Consent given (or not stated) but nothing in the tree.
        case notCollected
    }

    public enum Kind: String, Sendable { case tp = "TP", fp = "FP", fn = "FN", tn = "TN", missing = "missing" }

    public struct Verdict: Sendable, Equatable {
        public var criterion: Criterion
        public var board: String
        public var kind: Kind
        public var shouldNotify: Bool?
        public var notified: Bool?
        /// The longest time within the criterion's distance of one positive board during its
        /// infectious days, that board, and the closest distance counted (or, with no time
        /// counted, the closest distance to any positive during its infectious days).
        public var contactMinutes: Double
        public var contactBoard: String?
        public var contactDistance: Double?
        /// The UTC day the app first found high risk.
        public var appHighDay: String?
        /// When the contact reached the criterion (its minutes within its distance of the
        /// contact board), Unix seconds; nil when it never did.
        public var criterionReachedAt: Double?
        /// From reaching the criterion to the app's first high risk, hours, for a board that
        /// reached it and was notified (negative: the app was high before, from another exposure).
        public var notificationDelayHours: Double?
        public var outcomes: String
        public var reason: String
    }

    public struct Positive: Sendable, Equatable {
        public var board: String
        /// UTC days (YYYY-MM-DD); empty: all along (a positive stated by hand, with no days
        /// in the collected tree to bound it).
        public var days: [String]
        public var source: String
    }

    public struct Result: Sendable {
        public var criteria: [Criterion]
        public var positives: [Positive]
        public var verdicts: [Verdict]
        /// What the reader should know: boards collected but not in the plan, boards without a position.
        public var notes: [String]

        public func summary(_ c: Criterion) -> (rates: ReplayAccuracy.Rates, accuracy: ReplayAccuracy.Summary, missing: Int) {
            let judged = verdicts.filter { $0.criterion == c && $0.kind != .missing }
            let outcomes = judged.map {
                ReplayAccuracy.Outcome(cluster: $0.board, close: $0.shouldNotify!, notified: $0.notified!, score: $0.notified! ? 1 : 0)
            }
            return (ReplayAccuracy.Rates(outcomes), ReplayAccuracy.summary(outcomes),
                    verdicts.filter { $0.criterion == c && $0.kind == .missing }.count)
        }
    }

    /// The positives: boards whose collected outcomes list uploaded days, and those stated.
    /// `statedDays`: the days a stated positive counts on (the collected tree's days).
    public static func positives(_ outcomes: [String: BoardOutcome], stated: [String], statedDays: [String] = []) -> [Positive] {
        var out: [Positive] = []
        for (board, o) in outcomes.sorted(by: { $0.key < $1.key }) {
            if case .collected(let c, _) = o, !c.submittedDays.isEmpty {
                out.append(Positive(board: board, days: c.submittedDays.sorted(), source: "its app uploaded the keys of these days"))
            }
        }
        for b in stated where !out.contains(where: { $0.board == b }) {
            out.append(Positive(board: b, days: statedDays, source: statedDays.isEmpty
                ? "stated (--positive); no uploaded keys collected and no days in the tree, so all along"
                : "stated (--positive); no uploaded keys collected, so every collected day counts"))
        }
        return out
    }

    public static func judge(plan: PlacementPlan, outcomes: [String: BoardOutcome], statedPositives: [String] = [], statedDays: [String] = [],
                             criteria: [Criterion]) -> Result {
        let positives = positives(outcomes, stated: statedPositives, statedDays: statedDays)
        var notes: [String] = []
        for b in outcomes.keys.sorted() where !plan.boards.contains(b) {
            notes.append("board \(b) has collected outcomes but is not in the placement plan: not judged")
        }
        for p in positives where !plan.isPlaced(p.board) {
            notes.append("positive board \(p.board) has no position in the placement plan: nobody's contact with it is known")
        }
        // A board that may have uploaded keys but whose outcomes are missing may be a positive the
        // ground truth does not know of: its contacts would then be counted as not exposed.
        for b in plan.boards where plan.rows.first(where: { $0.board == b })?.consent == true && !positives.contains(where: { $0.board == b }) {
            if case .collected = outcomes[b] ?? .notCollected { continue }
            notes.append("board \(b) could upload its keys (consent yes) but its outcomes are missing: if it was positive, its contacts are not in the ground truth (state it with --positive)")
        }
        var verdicts: [Verdict] = []
        for c in criteria {
            for board in plan.boards {
                verdicts.append(verdict(board, plan: plan, outcome: outcomes[board] ?? .notCollected, positives: positives, criterion: c))
            }
        }
        return Result(criteria: criteria, positives: positives, verdicts: verdicts, notes: notes)
    }

    static func verdict(_ board: String, plan: PlacementPlan, outcome: BoardOutcome, positives: [Positive], criterion c: Criterion) -> Verdict {
        // The ground truth: the longest qualifying contact with one positive board.
        var best: (minutes: Double, board: String?, distance: Double?, reachedAt: Double?) = (0, nil, nil, nil)
        var closest: (board: String, distance: Double)?
        for p in positives where p.board != board {
            let windows: [(Double, Double)] = p.days.isEmpty ? [(-.infinity, .infinity)]
                : p.days.compactMap { DailyLayout.start(ofDay: $0) }.map { ($0, $0 + 86_400) }
            var seconds = 0.0, nearest: Double?, reachedAt: Double?
            // Days in order and each day's segments in order: the moment the criterion is met
            // is found on the way.
            for (from, to) in windows {
                for s in plan.segments(board, p.board, from: from, to: to) {
                    if closest == nil || s.distance < closest!.distance { closest = (p.board, s.distance) }
                    guard s.distance <= c.metres else { continue }
                    let needed = c.minutes * 60 - seconds
                    if reachedAt == nil, needed <= s.to - s.from { reachedAt = s.from + max(needed, 0) }
                    seconds += s.to - s.from
                    nearest = min(nearest ?? s.distance, s.distance)
                }
            }
            let minutes = seconds / 60
            if minutes > best.minutes { best = (minutes, p.board, nearest, reachedAt) }
        }
        if best.board == nil, let closest { best = (0, closest.board, closest.distance, nil) }
        let should = best.minutes >= c.minutes
        let placed = plan.isPlaced(board)
        var v = Verdict(criterion: c, board: board, kind: .missing, shouldNotify: placed ? should : nil, notified: nil,
                        contactMinutes: best.minutes, contactBoard: best.board, contactDistance: best.distance, appHighDay: nil,
                        criterionReachedAt: should ? best.reachedAt : nil, outcomes: "collected", reason: "")
        let contact = best.board.map { b in
            best.minutes > 0 ? "\(Format.fixed(best.minutes, 1)) min within \(Format.clean(c.metres)) m of positive \(b) (closest \(Format.fixed(best.distance ?? 0, 2)) m)"
                : "no time within \(Format.clean(c.metres)) m of a positive board\(best.distance.map { " (closest: \(b) at \(Format.fixed($0, 2)) m)" } ?? "")"
        } ?? (positives.filter { $0.board != board }.isEmpty ? "no other positive board" : "never on a site with a positive board")
        switch outcome {
        case .noConsent:
            v.outcomes = "no-consent"
            v.reason = "no consent to collect its outcomes: not counted (ground truth: \(contact))"
            return v
        case .notCollected:
            v.outcomes = "not-collected"
            v.reason = "its outcomes were not collected: not counted (ground truth: \(contact))"
            return v
        case .collected(let o, _):
            let high = o.firstHigh
            v.appHighDay = high.map { DailyLayout.day(Double($0)) }
            guard placed else {
                v.reason = "not placed in the plan: no ground truth, not counted"
                return v
            }
            v.notified = high != nil
            switch (should, high != nil) {
            case (true, true): v.kind = .tp
            case (false, true): v.kind = .fp
            case (true, false): v.kind = .fn
            case (false, false): v.kind = .tn
            }
            var app = high.map { "the app found high risk on \(DailyLayout.day(Double($0)))" } ?? "the app never found high risk"
            if let high, let reached = v.criterionReachedAt {
                let hours = (Double(high) - reached) / 3600
                v.notificationDelayHours = hours
                app += hours < 0 ? ", \(Format.fixed(-hours, 1)) h before the contact reached the criterion (another exposure?)"
                    : ", \(Format.fixed(hours, 1)) h after the contact reached the criterion"
            }
            v.reason = "\(contact) (needed \(Format.clean(c.minutes)) min); \(app)"
            return v
        }
    }

    // MARK: output

    public static let csvHeader = ["criterion_minutes", "criterion_distance_m", "board", "verdict", "should_notify", "notified",
                                   "contact_minutes", "contact_board", "contact_distance_m", "app_high_day", "criterion_reached_at",
                                   "notification_delay_hours", "outcomes", "reason"]

    /// One row per board and criterion, for R and pandas.
    public static func csv(_ r: Result) -> String {
        var w = CSVWriter(header: csvHeader)
        func flag(_ b: Bool?) -> String { b.map { $0 ? "true" : "false" } ?? "" }
        for v in r.verdicts {
            w.appendRow([Format.clean(v.criterion.minutes), Format.clean(v.criterion.metres), v.board, v.kind.rawValue, flag(v.shouldNotify),
                         flag(v.notified), Format.fixed(v.contactMinutes, 2), v.contactBoard ?? "", v.contactDistance.map { Format.fixed($0, 3) } ?? "",
                         v.appHighDay ?? "", v.criterionReachedAt.map(PlacementPlan.utc) ?? "",
                         v.notificationDelayHours.map { Format.fixed($0, 2) } ?? "", v.outcomes, v.reason])
        }
        return w.text
    }

    /// The report's section: the positives, one table per criterion, the rates with their intervals.
    public static func markdown(_ r: Result, csvName: String) -> String {
        var s = "## Was each board's notification right\n\n"
        s += "Ground truth from the placement plan: a board should have been notified when it spent at least the "
        s += "criterion's minutes within its distance of one positive board during that board's infectious days "
        s += "(the UTC days whose keys its app uploaded). Notified: the board's app found high risk (its collected risk history). "
        s += "Per-board rows: \(csvName).\n\n"
        if r.positives.isEmpty {
            s += "No positive board: no board's collected outcomes list uploaded keys (and none was stated with --positive).\n\n"
        } else {
            s += "Positive boards:\n\n"
            for p in r.positives {
                s += "- \(p.board): \(p.days.isEmpty ? "all along" : p.days.joined(separator: ", ")) (\(p.source))\n"
            }
            s += "\n"
        }
        for n in r.notes { s += "Note: \(n).\n\n" }
        func pct(_ v: Double) -> String { v.isNaN ? "-" : Format.fixed(100 * v, 1) + " %" }
        func ci(_ i: ReplayAccuracy.Interval?) -> String { i.map { "\(Format.fixed(100 * $0.low, 1))-\(Format.fixed(100 * $0.high, 1)) %" } ?? "-" }
        for c in r.criteria {
            s += "### \(c.label)\n\n| board | verdict | contact | app | reason |\n|---|---|---|---|---|\n"
            for v in r.verdicts where v.criterion == c {
                let contact = v.contactBoard == nil ? "-" : "\(Format.fixed(v.contactMinutes, 1)) min, \(v.contactBoard!)\(v.contactDistance.map { " at \(Format.fixed($0, 2)) m" } ?? "")"
                let app = v.outcomes != "collected" ? v.outcomes : (v.appHighDay.map { "high on \($0)" } ?? "not high")
                s += "| \(v.board) | \(v.kind.rawValue) | \(contact) | \(app) | \(v.reason.replacingOccurrences(of: "|", with: "/")) |\n"
            }
            let (rates, acc, missing) = r.summary(c)
            s += "\nTP \(rates.tp), FP \(rates.fp), FN \(rates.close - rates.tp), TN \(rates.far - rates.fp); "
            s += "\(missing) board\(missing == 1 ? "" : "s") missing (not counted).\n\n"
            // The framework's timeline: keys of day D are uploaded once D is over, published at
            // the next completed hour after the embargo, and fetched in each board's daily slot.
            let delays = r.verdicts.filter { $0.criterion == c && $0.kind == .tp }.compactMap(\.notificationDelayHours).sorted()
            if !delays.isEmpty {
                let median = delays.count % 2 == 1 ? delays[delays.count / 2] : (delays[delays.count / 2 - 1] + delays[delays.count / 2]) / 2
                s += "Delay from reaching the criterion to the app's first high risk (true positives): median \(Format.fixed(median, 1)) h, "
                s += "range \(Format.fixed(delays.first!, 1))-\(Format.fixed(delays.last!, 1)) h (\(delays.count) board\(delays.count == 1 ? "" : "s")). "
                s += "Keys of a day are uploaded once it is over, so a notification comes a day or more after the contact.\n\n"
            }
            s += "| rate | value | 95 % Wilson | 95 % bootstrap (by board) |\n|---|---|---|---|\n"
            s += "| true positive rate | \(pct(rates.tpr)) | \(ci(acc.tprWilson)) | \(ci(acc.tprBootstrap)) |\n"
            s += "| false positive rate | \(pct(rates.fpr)) | \(ci(acc.fprWilson)) | \(ci(acc.fprBootstrap)) |\n"
            s += "| precision | \(pct(rates.precision)) | \(ci(acc.precisionWilson)) | \(ci(acc.precisionBootstrap)) |\n\n"
        }
        return s
    }
}
