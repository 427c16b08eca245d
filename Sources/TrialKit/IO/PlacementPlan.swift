import ENProtocol
import Foundation
import PlatformSupport
import TrialFormats

/// The trial's placement plan (docs/provision.md, "The placement plan"): where each board stood
/// and when, so that the distance between any two boards at any time is known. One CSV,
/// `placement.csv`, written by `gaenctl trial provision` from the inventory and read by
/// `gaenctl trial report --placement`; both go through this type.
///
/// A row is one board at one place for one interval: `from` (inclusive) to `to` (exclusive),
/// UTC (ISO 8601 or Unix seconds), either empty for "since ever" / "for ever"; `x_m`, `y_m`
/// metres in the site's own plane. Boards on different sites are never in contact; a row
/// without coordinates places the board nowhere (the report says so).
public struct PlacementPlan: Sendable, Equatable {
    public struct Row: Sendable, Equatable {
        public var board: String
        public var site: String
        public var position: String = ""
        public var metricsTarget: String = ""
        public var controller: String = ""
        /// The trial's consent to upload this board's keys to the key server (inventory `consent`).
        public var consent: Bool?
        /// The consent to collect its keys and app outcomes at the end (inventory `outcomes_consent`).
        public var outcomesConsent: Bool?
        public var from: Double?
        public var to: Double?
        public var x: Double?
        public var y: Double?

        public init(board: String, site: String, position: String = "", metricsTarget: String = "", controller: String = "",
                    consent: Bool? = nil, outcomesConsent: Bool? = nil, from: Double? = nil, to: Double? = nil, x: Double? = nil, y: Double? = nil) {
            self.board = board; self.site = site; self.position = position; self.metricsTarget = metricsTarget
            self.controller = controller; self.consent = consent; self.outcomesConsent = outcomesConsent
            self.from = from; self.to = to; self.x = x; self.y = y
        }

        var start: Double { from ?? -.infinity }
        var end: Double { to ?? .infinity }
    }

    public static let header = ["board", "site", "position", "metrics_target", "controller", "consent", "outcomes_consent", "from", "to", "x_m", "y_m"]

    public var rows: [Row]
    public init(rows: [Row]) { self.rows = rows }

    /// Every board of the plan, in the plan's order.
    public var boards: [String] {
        var seen = Set<String>()
        return rows.map(\.board).filter { seen.insert($0).inserted }
    }

    /// The first row's consent of a board (they are the board's, repeated on each of its rows).
    public func outcomesConsent(of board: String) -> Bool? { rows.first { $0.board == board }?.outcomesConsent }

    // MARK: writing

    public static func csv(_ rows: [Row]) -> String {
        var w = CSVWriter(header: header)
        func flag(_ b: Bool?) -> String { b.map { $0 ? "yes" : "no" } ?? "" }
        func time(_ t: Double?) -> String { t.map(Self.utc) ?? "" }
        func metres(_ v: Double?) -> String { v.map(Format.exact) ?? "" }
        for r in rows {
            w.appendRow([r.board, r.site, r.position, r.metricsTarget, r.controller, flag(r.consent), flag(r.outcomesConsent),
                          time(r.from), time(r.to), metres(r.x), metres(r.y)])
        }
        return w.text
    }

    /// `2026-11-20T08:00:00Z`: whole seconds, UTC, as the reader takes it back.
    public static func utc(_ t: Double) -> String {
        let s = Int64(t.rounded(.down)), day = DailyLayout.dayStart(Double(s))
        let r = Int64(Double(s) - day)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(DailyLayout.day(day))T\(two(r / 3600)):\(two(r / 60 % 60)):\(two(r % 60))Z"
    }

    // MARK: reading

    public static func read(path: String) throws -> PlacementPlan {
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: 64 << 20) } catch { throw PlacementPlanError("\(path) \(error)") }
        return try parse(bytes, file: path)
    }

    /// Reads the plan; only `board` and `site` are required columns, so a plan drawn by hand
    /// may leave out what provisioning adds. Errors name the file, line and column.
    public static func parse(_ bytes: [UInt8], file: String) throws -> PlacementPlan {
        let reader = try CSVReader(bytes: bytes, file: file)
        let board = try reader.requireColumn("board"), site = try reader.requireColumn("site")
        let col = { (name: String) in reader.column(name) }
        let (position, target, controller) = (col("position"), col("metrics_target"), col("controller"))
        let (consent, outcomes, from, to, x, y) = (col("consent"), col("outcomes_consent"), col("from"), col("to"), col("x_m"), col("y_m"))
        guard (x == nil) == (y == nil) else { throw PlacementPlanError("\(file): give both x_m and y_m, or neither") }
        var rows: [Row] = []
        try reader.forEachRow { r in
            func text(_ i: Int?) -> String { i.map { r.string($0).trimmingCharacters(in: .whitespaces) } ?? "" }
            func fail(_ column: String, _ expected: String, _ i: Int?) -> Error {
                CSVError.badValue(file: file, line: r.line, column: column, expected: expected, actual: text(i))
            }
            func flag(_ i: Int?, _ name: String) throws -> Bool? {
                switch text(i).lowercased() {
                case "": return nil
                case "yes", "true": return true
                case "no", "false": return false
                default: throw fail(name, "yes or no", i)
                }
            }
            func time(_ i: Int?, _ name: String) throws -> Double? {
                let s = text(i)
                guard !s.isEmpty else { return nil }
                do { return try TimeInput.parse(s) } catch { throw fail(name, "a UTC time (2026-11-20T08:00:00Z) or Unix seconds", i) }
            }
            func metres(_ i: Int?, _ name: String) throws -> Double? {
                let s = text(i)
                guard !s.isEmpty else { return nil }
                guard let v = Double(s), v.isFinite, abs(v) <= 1e7 else { throw fail(name, "metres (a finite number)", i) }
                return v
            }
            let row = Row(board: text(board), site: text(site), position: text(position), metricsTarget: text(target),
                          controller: text(controller), consent: try flag(consent, "consent"), outcomesConsent: try flag(outcomes, "outcomes_consent"),
                          from: try time(from, "from"), to: try time(to, "to"), x: try metres(x, "x_m"), y: try metres(y, "y_m"))
            guard !row.board.isEmpty else { throw fail("board", "a board name", board) }
            guard !row.site.isEmpty else { throw fail("site", "the board's site", site) }
            if (row.x == nil) != (row.y == nil) { throw fail(row.x == nil ? "x_m" : "y_m", "metres (x_m and y_m together, or neither)", row.x == nil ? x : y) }
            if let f = row.from, let t = row.to, t <= f { throw fail("to", "a time after from", to) }
            rows.append(row)
        }
        guard !rows.isEmpty else { throw PlacementPlanError("\(file): no boards") }
        // A board in two places at once is a plan's mistake, not a reading to average.
        var placed: [String: [Row]] = [:]
        for r in rows where r.x != nil { placed[r.board, default: []].append(r) }
        for (b, list) in placed {
            let sorted = list.sorted { $0.start < $1.start }
            for (a, c) in zip(sorted, sorted.dropFirst()) where c.start < a.end {
                throw PlacementPlanError("\(file): board \(b) has two positions at once (\(c.start.isFinite ? Self.utc(c.start) : "from the start"))")
            }
        }
        return PlacementPlan(rows: rows)
    }

    // MARK: distances

    /// One stretch of time during which two boards stood still at a known distance.
    public struct Segment: Sendable, Equatable {
        public var from: Double
        public var to: Double
        public var distance: Double
    }

    /// The stretches, within `[from, to)`, during which both boards had a position on the same
    /// site, with their distance; time with either unplaced or on other sites is absent.
    public func segments(_ a: String, _ b: String, from: Double, to: Double) -> [Segment] {
        let ra = rows.filter { $0.board == a && $0.x != nil }, rb = rows.filter { $0.board == b && $0.x != nil }
        var out: [Segment] = []
        for p in ra {
            for q in rb where p.site == q.site {
                let s = max(p.start, q.start, from), e = min(p.end, q.end, to)
                guard s < e else { continue }
                let d = ((p.x! - q.x!) * (p.x! - q.x!) + (p.y! - q.y!) * (p.y! - q.y!)).squareRoot()
                out.append(Segment(from: s, to: e, distance: d))
            }
        }
        return out.sorted { $0.from < $1.from }
    }

    /// Whether the board has any position in the plan.
    public func isPlaced(_ board: String) -> Bool { rows.contains { $0.board == board && $0.x != nil } }
}

public struct PlacementPlanError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension DailyLayout {
    /// Unix seconds of a `YYYY-MM-DD` day's start, nil if the text is not one.
    public static func start(ofDay s: String) -> Double? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.count == 10, parts.count == 3, let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
              (1...12).contains(m), (1...31).contains(d) else { return nil }
        let start = Double(CivilDate(year: y, month: m, day: d).daysSinceEpoch) * 86_400
        return day(start) == s ? start : nil
    }
}
