import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The placement plan's reader and writer, and each board's verdict against ground truth.
@Suite struct PlacementPlanTests {
    @Test func writtenPlanReadsBackRowForRow() throws {
        let rows = [
            PlacementPlan.Row(board: "p", site: "bus 12", position: "front, \"door\"", metricsTarget: "p:9100", controller: "hci0",
                              consent: true, outcomesConsent: true, from: 1_763_625_600, to: 1_763_629_200, x: 0.25, y: -1.5),
            PlacementPlan.Row(board: "q", site: "bus 12", consent: false, outcomesConsent: false),
        ]
        let text = PlacementPlan.csv(rows)
        #expect(text.hasPrefix("board,site,position,metrics_target,controller,consent,outcomes_consent,from,to,x_m,y_m\n"))
        #expect(text.contains("2025-11-20T08:00:00Z,2025-11-20T09:00:00Z,0.25,-1.5"))
        let plan = try PlacementPlan.parse(Array(text.utf8), file: "placement.csv")
        #expect(plan.rows == rows)
        #expect(plan.boards == ["p", "q"])
        #expect(plan.isPlaced("p") && !plan.isPlaced("q"))
        #expect(plan.outcomesConsent(of: "q") == false)
    }

    @Test func distancesOverTimeOnlyOnTheSameSite() throws {
        let plan = try PlacementPlan.parse(Array("""
            board,site,from,to,x_m,y_m
            a,s,2025-11-20T08:00:00Z,2025-11-20T09:00:00Z,0,0
            a,s,2025-11-20T09:00:00Z,,10,0
            b,s,,,3,4
            c,other,,,0,0

            """.utf8), file: "plan.csv")
        let t0 = try TimeInput.parse("2025-11-20T08:30:00Z")
        let segments = plan.segments("a", "b", from: t0, to: t0 + 7_200)
        #expect(segments.count == 2)
        #expect(segments[0].from == t0 && segments[0].to == t0 + 1_800 && segments[0].distance == 5)
        #expect(segments[1].from == t0 + 1_800 && segments[1].to == t0 + 7_200 && abs(segments[1].distance - 65.0.squareRoot()) < 1e-12)
        #expect(plan.segments("a", "c", from: -.infinity, to: .infinity).isEmpty)
    }

    @Test(arguments: [
        ("board,site,x_m,y_m\na,s,1,nope\n", "plan.csv:2: column 'y_m' expected metres (a finite number), got 'nope'"),
        ("board,x_m,y_m\na,1,1\n", "plan.csv: no column 'site' in the header (found: board,x_m,y_m)"),
        ("board,site,x_m\na,s,1\n", "plan.csv: give both x_m and y_m, or neither"),
        ("board,site,from,to,x_m,y_m\na,s,2025-11-20T09:00:00Z,2025-11-20T08:00:00Z,0,0\n", "plan.csv:2: column 'to' expected a time after from, got '2025-11-20T08:00:00Z'"),
        ("board,site,from,to,x_m,y_m\na,s,,2025-11-20T09:00:00Z,0,0\na,s,2025-11-20T08:00:00Z,,1,1\n", "plan.csv: board a has two positions at once (2025-11-20T08:00:00Z)"),
        ("board,site,consent,x_m,y_m\na,s,maybe,0,0\n", "plan.csv:2: column 'consent' expected yes or no, got 'maybe'"),
        ("board,site,x_m,y_m\n,s,0,0\n", "plan.csv:2: column 'board' expected a board name, got ''"),
        ("board,site\n", "plan.csv: no boards"),
    ])
    func badPlansAreRefusedWithFileAndLine(text: String, message: String) {
        #expect { try PlacementPlan.parse(Array(text.utf8), file: "plan.csv") } throws: { "\($0)" == message }
    }
}

@Suite struct NotificationVerdictsTests {
    static let day = "2025-11-20"
    static let dayStart = 1_763_596_800.0  // 2025-11-20T00:00:00Z

    static func at(_ hours: Double) -> String { PlacementPlan.utc(dayStart + hours * 3_600) }

    /// p is positive (its app uploaded the keys of the 20th). a: 20 min at 1 m on the 20th;
    /// b: 20 min at 1 m on the 21st (not infectious then) and 10 min on the 20th; c and e: 5 m
    /// all along; f: no consent; g: consent, nothing collected; h: collected, never placed.
    static let plan = """
        board,site,outcomes_consent,from,to,x_m,y_m
        p,bus,yes,,,0,0
        a,bus,yes,,\(at(10)),100,0
        a,bus,yes,\(at(10)),\(at(10 + 1.0 / 3)),1,0
        a,bus,yes,\(at(10 + 1.0 / 3)),,100,0
        b,bus,yes,,\(at(12)),100,0
        b,bus,yes,\(at(12)),\(at(12 + 1.0 / 6)),0,1
        b,bus,yes,\(at(12 + 1.0 / 6)),\(at(36)),100,0
        b,bus,yes,\(at(36)),\(at(36 + 1.0 / 3)),0,1
        b,bus,yes,\(at(36 + 1.0 / 3)),,100,0
        c,bus,yes,,,5,0
        e,bus,yes,,,0,5
        f,bus,no,,,1,0
        g,bus,yes,,,0,-1
        h,bus,yes,,,,

        """

    static func outcome(_ board: String, submitted: [String] = [], highAt: Double? = nil) -> NotificationVerdicts.BoardOutcome {
        var history = [CollectedOutcomes.Risk(computedAt: Int64(dayStart) - 3_600, engine: "cwa", level: "low", windows: 0)]
        if let highAt { history.append(.init(computedAt: Int64(dayStart + highAt * 3_600), engine: "cwa", level: "high", windows: 3)) }
        return .collected(CollectedOutcomes(board: board, collectedAt: Int64(dayStart) + 3 * 86_400, submittedDays: submitted,
                                            riskHistory: history, risk: history.last, highRiskSince: nil, packagesProvided: [], windows: 0),
                          keyDays: submitted)
    }

    static func result(criteria: [NotificationVerdicts.Criterion] = [.init(minutes: 15, metres: 1.5)]) throws -> NotificationVerdicts.Result {
        let plan = try PlacementPlan.parse(Array(Self.plan.utf8), file: "plan.csv")
        let outcomes: [String: NotificationVerdicts.BoardOutcome] = [
            "p": outcome("p", submitted: [day]),
            "a": outcome("a", highAt: 27),           // notified on the 21st: right
            "b": outcome("b"),                       // 10 min on the infectious day only: right not to be
            "c": outcome("c", highAt: 27),           // 5 m away: a false alarm
            "e": outcome("e"),
            "f": .noConsent,
            "g": .notCollected,
            "h": outcome("h", highAt: 27),
        ]
        return NotificationVerdicts.judge(plan: plan, outcomes: outcomes, criteria: criteria)
    }

    @Test func eachVerdictWithItsReason() throws {
        let r = try Self.result()
        #expect(r.positives == [.init(board: "p", days: [Self.day], source: "its app uploaded the keys of these days")])
        let v = Dictionary(uniqueKeysWithValues: r.verdicts.map { ($0.board, $0) })
        #expect(v["a"]?.kind == .tp)
        #expect(abs((v["a"]?.contactMinutes ?? 0) - 20) < 1e-6 && v["a"]?.contactDistance == 1 && v["a"]?.appHighDay == "2025-11-21")
        // a met the criterion at 10:15 on the 20th (15 of its 20 minutes) and its app was high at 03:00 on the 21st.
        #expect(v["a"]?.criterionReachedAt == Self.dayStart + 10.25 * 3_600 && v["a"]?.notificationDelayHours == 16.75)
        #expect(v["a"]?.reason.hasSuffix("the app found high risk on 2025-11-21, 16.8 h after the contact reached the criterion") == true)
        #expect(v["b"]?.kind == .tn)
        #expect(v["b"]?.criterionReachedAt == nil && v["c"]?.notificationDelayHours == nil)
        #expect(abs((v["b"]?.contactMinutes ?? 0) - 10) < 1e-6)
        #expect(v["c"]?.kind == .fp && v["c"]?.contactMinutes == 0 && v["c"]?.contactDistance == 5)
        #expect(v["c"]?.reason == "no time within 1.5 m of a positive board (closest: p at 5.00 m) (needed 15 min); the app found high risk on 2025-11-21")
        #expect(v["e"]?.kind == .tn)
        // p itself: no other positive board, so it should not be notified and was not.
        #expect(v["p"]?.kind == .tn && v["p"]?.reason.hasPrefix("no other positive board") == true)
        #expect(v["f"]?.kind == .missing && v["f"]?.outcomes == "no-consent" && v["f"]?.shouldNotify == true)
        #expect(v["f"]?.reason.hasPrefix("no consent to collect its outcomes: not counted") == true)
        #expect(v["g"]?.kind == .missing && v["g"]?.outcomes == "not-collected")
        #expect(v["h"]?.kind == .missing && v["h"]?.appHighDay == "2025-11-21" && v["h"]?.reason == "not placed in the plan: no ground truth, not counted")
        let (rates, accuracy, missing) = r.summary(r.criteria[0])
        #expect(rates.tp == 1 && rates.fp == 1 && rates.close == 1 && rates.far == 4 && missing == 3)
        #expect(accuracy.tprWilson != nil && accuracy.fprWilson!.low < 0.25 && accuracy.fprWilson!.high > 0.25)
    }

    @Test func aLongerOrCloserCriterionChangesTheTruth() throws {
        let r = try Self.result(criteria: [.init(minutes: 30, metres: 1.5), .init(minutes: 5, metres: 1.5), .init(minutes: 15, metres: 6)])
        func kind(_ board: String, _ c: Int) -> NotificationVerdicts.Kind? { r.verdicts.first { $0.board == board && $0.criterion == r.criteria[c] }?.kind }
        #expect(kind("a", 0) == .fp)   // 20 min is not 30
        #expect(kind("b", 1) == .fn)   // 10 min is 5
        #expect(kind("c", 2) == .tp)   // 5 m is within 6
        #expect(kind("e", 2) == .fn)
    }

    @Test func statedPositiveWithoutKeysCountsEveryCollectedDay() throws {
        let plan = try PlacementPlan.parse(Array("board,site,x_m,y_m\nx,s,0,0\ny,s,1,0\n".utf8), file: "plan.csv")
        let r = NotificationVerdicts.judge(plan: plan, outcomes: ["x": .notCollected, "y": Self.outcome("y")], statedPositives: ["x"],
                                           statedDays: [Self.day, "2025-11-21"], criteria: [.init(minutes: 15, metres: 1.5)])
        #expect(r.positives.map(\.board) == ["x"] && r.positives[0].days == [Self.day, "2025-11-21"])
        let y = r.verdicts.first { $0.board == "y" }
        #expect(y?.kind == .fn && y?.contactMinutes == 2 * 1_440)
        #expect(r.verdicts.first { $0.board == "x" }?.kind == .missing)
        #expect(r.notes.isEmpty)
    }

    @Test func aBoardThatCouldHaveBeenPositiveWithoutOutcomesIsNamed() throws {
        let plan = try PlacementPlan.parse(Array("board,site,consent,x_m,y_m\nx,s,yes,0,0\ny,s,no,1,0\n".utf8), file: "plan.csv")
        let r = NotificationVerdicts.judge(plan: plan, outcomes: ["x": .notCollected, "y": Self.outcome("y")], criteria: [.init(minutes: 15, metres: 1.5)])
        #expect(r.positives.isEmpty && r.verdicts.first { $0.board == "y" }?.kind == .tn)
        #expect(r.notes == ["board x could upload its keys (consent yes) but its outcomes are missing: if it was positive, its contacts are not in the ground truth (state it with --positive)"])
        #expect(NotificationVerdicts.markdown(r, csvName: "n.csv").contains("No positive board"))
    }

    @Test func csvAndMarkdown() throws {
        let r = try Self.result()
        let csv = NotificationVerdicts.csv(r)
        let lines = csv.split(separator: "\n")
        #expect(lines[0] == "criterion_minutes,criterion_distance_m,board,verdict,should_notify,notified,contact_minutes,contact_board,contact_distance_m,app_high_day,criterion_reached_at,notification_delay_hours,outcomes,reason")
        #expect(lines.count == 1 + 8)
        #expect(lines.contains { $0.hasPrefix("15,1.5,a,TP,true,true,20.00,p,1.000,2025-11-21,2025-11-20T10:15:00Z,16.75,collected,") })
        #expect(lines.contains { $0.hasPrefix("15,1.5,f,missing,true,,") })
        let md = NotificationVerdicts.markdown(r, csvName: "notifications.csv")
        #expect(md.contains("| a | TP | 20.0 min, p at 1.00 m | high on 2025-11-21 |"))
        #expect(md.contains("TP 1, FP 1, FN 0, TN 3; 3 boards missing (not counted)."))
        #expect(md.contains("| false positive rate | 25.0 % |"))
        #expect(md.contains("Delay from reaching the criterion to the app's first high risk (true positives): median 16.8 h, range 16.8-16.8 h (1 board)."))
    }
}
