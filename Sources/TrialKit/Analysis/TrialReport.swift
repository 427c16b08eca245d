import ENProtocol
import Foundation
import TrialFormats

/// A trial's data after matching and the ground-truth join, and its analysis.
public struct TrialReport: Sendable, Codable {
    public struct Counts: Sendable, Codable, Equatable {
        /// Rows read (reports plus empty-scan rows).
        public var rows: Int = 0
        public var emptyScans: Int = 0
        public var reports: Int = 0
        public var matched: Int = 0
        public var implausibleMetadata: Int = 0
        public var outsideKeyValidity: Int = 0
        /// Matched sightings with a known distance at their time (the analysed ones).
        public var withGroundTruth: Int = 0
        public var withoutGroundTruth: Int = 0
        public init() {}
    }

    public struct PairCount: Sendable, Codable, Equatable {
        public var receiver: String
        public var transmitter: String
        public var observations: Int
    }

    public var site: String?
    public var counts: Counts
    public var pairs: [PairCount]
    public var analysis: ChannelAnalysis
    /// Share of scans in which a present transmitter was heard, by true distance (empty when the
    /// input had no scans, e.g. --attenuations).
    public var detectionByDistance: [DetectionProbability]
    /// The Tobit fit over scans, heard and censored (TobitFit; nil without scans).
    public var tobitFit: TobitFit?
    /// Why there is no detection probability, when there is none.
    public var detectionProbabilityNote: String?
    /// True when the input was attenuation rows (--attenuations), not matched sightings: there is
    /// no matching step to count.
    public var attenuationInput: Bool?
    /// Every site (scenario) the rows came from, when more than one: the report pools them.
    public var sites: [String]?
    /// The input files and calibration tables, named in each figure's footer.
    public var sources: ReportSources?

    /// The report's name in titles: its site, or for rows of several sites "pooled: N sites (a, b, c, ...)".
    public var label: String? {
        guard let sites, sites.count > 1 else { return site }
        let sorted = sites.sorted(by: NaturalOrder.less)
        return "\(sites.count) sites pooled (\(sorted.count == 2 ? "\(sorted[0]), \(sorted[1])" : "\(sorted[0]) ... \(sorted[sorted.count - 1])"))"
    }

    public init(site: String?, counts: Counts, observations: [Observation], options: AnalysisOptions,
                detectionByDistance: [DetectionProbability] = []) {
        self.init(site: site, counts: counts, tally: ObservationTally(observations), options: options, detectionByDistance: detectionByDistance)
    }

    public init(site: String?, counts: Counts, tally: ObservationTally, options: AnalysisOptions,
                detectionByDistance: [DetectionProbability] = []) {
        self.site = site
        self.counts = counts
        self.detectionByDistance = detectionByDistance
        var perPair: [NodePair: Int] = [:]
        for e in tally.entries() { perPair[tally.pairs[e.pair], default: 0] += e.count }
        pairs = perPair.keys.sorted().map { PairCount(receiver: $0.receiver, transmitter: $0.transmitter, observations: perPair[$0]!) }
        analysis = ChannelAnalysis(tally: tally, options: options)
    }
}

/// Detection probability at one distance (or distance bin [low, high)): scans with the
/// transmitter present at that distance, and how many of them heard it.
public struct DetectionProbability: Sendable, Codable, Equatable {
    public var distanceLow: Double
    public var distanceHigh: Double
    public var scans: Int
    public var heard: Int
    public var probability: Double
}

/// Builds a trial's observations: match sightings against keys, then join ground truth.
public enum TrialPipeline {
    /// Matches `sightings` (their `node` names the receiver) against the transmitters' keys and
    /// joins the distance in force at each sighting's time for its receiver/transmitter pair.
    public static func observations(sightings: [SightingRow], transmitters: [TransmitterKeys], groundTruth: GroundTruth,
                                    matcher: some SightingMatcher = ProjectMatcher()) throws -> ([Observation], TrialReport.Counts) {
        let r = try run(sightings: sightings, transmitters: transmitters, groundTruth: groundTruth, matcher: matcher)
        return (r.observations, r.counts)
    }

    /// The observations, the counts and the detection probability by distance: every scan of a
    /// receiver (the rows' node and scan_start, empty scans included) against every transmitter
    /// whose pair has a distance in force at the scan's start; heard when the scan has a matched
    /// sighting of that transmitter. A transmitter absent or not advertising needs a marker with
    /// an empty distance (as `gaenctl simulate` writes), else it counts as present and unheard.
    public static func run(sightings: [SightingRow], transmitters: [TransmitterKeys], groundTruth: GroundTruth,
                           matcher: some SightingMatcher = ProjectMatcher())
        throws -> (observations: [Observation], counts: TrialReport.Counts, detection: [DetectionProbability]) {
        let stream = TrialStream(transmitters: transmitters, groundTruth: groundTruth, matcher: matcher)
        var obs: [Observation] = []
        stream.onObservation = { obs.append($0) }
        try stream.addSightings(sightings)
        return (obs, stream.counts, stream.detection())
    }

    /// Scans present and heard per true distance, as the table's rows.
    static func detectionRows(_ byDistance: [Double: (present: Int, heard: Int)]) -> [DetectionProbability] {
        // Up to 40 distances one by one; more (moving nodes) in logarithmic bins, 10 per decade.
        var rows: [(low: Double, high: Double, present: Int, heard: Int)] = []
        if byDistance.count <= 40 {
            rows = byDistance.keys.sorted().map { ($0, $0, byDistance[$0]!.present, byDistance[$0]!.heard) }
        } else {
            var bins: [Int: (Int, Int)] = [:]
            for (d, e) in byDistance {
                let k = Int((log10(max(d, 0.1)) * 10).rounded(.down)) // under 0.1 m counts as 0.1 m, as in the fit
                let b = bins[k] ?? (0, 0)
                bins[k] = (b.0 + e.present, b.1 + e.heard)
            }
            rows = bins.keys.sorted().map { (pow(10, Double($0) / 10), pow(10, Double($0 + 1) / 10), bins[$0]!.0, bins[$0]!.1) }
        }
        return rows.map { DetectionProbability(distanceLow: $0.low, distanceHigh: $0.high, scans: $0.present, heard: $0.heard,
                                               probability: $0.present > 0 ? Double($0.heard) / Double($0.present) : .nan) }
    }

    /// Observations from an attenuation CSV (`time,attenuation` and optionally `receiver`,
    /// `transmitter`, `distance`; the report's own attenuation.csv has them all). Rows without
    /// a distance column take it from the ground truth.
    public static func observations(attenuationCSV reader: CSVReader, groundTruth: GroundTruth) throws -> ([Observation], TrialReport.Counts) {
        var obs: [Observation] = []
        let counts = try forEachObservation(attenuationCSV: reader, groundTruth: groundTruth) { obs.append($0) }
        return (obs, counts)
    }

    /// The observations of attenuation JSON lines (TrialReportWriter.attenuationJSONLine: `time`
    /// and `attenuation` required; `receiver`, `transmitter`, `distance`, `rpi`, `txPower`,
    /// `rssi`, `rssiCorrection` optional, null as absent), checked as the CSV's are.
    /// `site`, `firstSite`, `everySite` and `rowSite` as for an attenuation CSV (below): a line's
    /// `"site"` (attenuationJSONLine writes it) is its site.
    public static func forEachObservation(attenuationJSONLines data: Data, file: String, groundTruth: GroundTruth, site: String? = nil,
                                          firstSite: (String) -> Void = { _ in }, everySite: (String) -> Void = { _ in },
                                          rowSite: (String?) -> Void = { _ in },
                                          _ body: (Observation) throws -> Void) throws -> TrialReport.Counts {
        var sites = SiteRows(site: site)
        var counts = TrialReport.Counts()
        var lineNumber = 0
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            guard raw.contains(where: { !($0 == 0x20 || $0 == 0x0d || $0 == 0x09) }) else { continue }
            func bad(_ field: String, _ expected: String, _ actual: Any?) -> CSVError {
                .badValue(file: file, line: lineNumber, column: field, expected: expected, actual: actual.map { "\($0)" } ?? "nothing")
            }
            guard let o = (try? JSONSerialization.jsonObject(with: Data(raw))) as? [String: Any] else {
                throw bad("(line)", "a JSON object", String(decoding: raw.prefix(60), as: UTF8.self))
            }
            func number(_ k: String) throws -> Double? {
                guard let v = o[k], !(v is NSNull) else { return nil }
                // true/false decode as NSNumber too (objCType "c"); they are not numbers here.
                guard let n = v as? NSNumber, !(v is String), String(cString: n.objCType) != "c", n.doubleValue.isFinite else { throw bad(k, "a number", v) }
                return n.doubleValue
            }
            func int(_ k: String) throws -> Int? {
                guard let v = try number(k) else { return nil }
                guard v == v.rounded(), abs(v) < 1e9 else { throw bad(k, "an integer", v) }
                return Int(v)
            }
            func string(_ k: String) throws -> String? {
                guard let v = o[k], !(v is NSNull) else { return nil }
                guard let s = v as? String else { throw bad(k, "a string", v) }
                return s
            }
            guard sites.admit(try string("site"), firstSite: firstSite, everySite: everySite, rowSite: rowSite) else { continue }
            counts.rows += 1; counts.reports += 1; counts.matched += 1
            guard let t = try number("time") else { throw bad("time", "Unix seconds", nil) }
            guard let a = try number("attenuation") else { throw bad("attenuation", "dB", nil) }
            guard Observation.plausibleAttenuation.contains(a) else {
                throw bad("attenuation", "dB in \(Format.exact(Observation.plausibleAttenuation.lowerBound))...\(Format.exact(Observation.plausibleAttenuation.upperBound)) (127 and -127 are the 'RSSI not available' value, not a reading)", Format.exact(a))
            }
            let rx = try string("receiver") ?? "", tx = try string("transmitter") ?? ""
            let given = try number("distance")
            if let given, given < 0 { throw bad("distance", "metres >= 0 or null", Format.exact(given)) }
            guard let d = given ?? groundTruth.distance(at: t, pair: NodePair(receiver: rx, transmitter: tx)) else { counts.withoutGroundTruth += 1; continue }
            counts.withGroundTruth += 1
            try body(Observation(time: t, receiver: rx, transmitter: tx, distance: d, attenuation: a, rpi: try string("rpi").flatMap { $0.isEmpty ? nil : $0 },
                                 txPower: try int("txPower"), rssi: try int("rssi"), rssiCorrection: try int("rssiCorrection")))
        }
        return counts
    }

    /// The observations of an attenuation CSV handed to `body` one by one, in file order.
    public static func forEachObservation(attenuationCSV reader: CSVReader, groundTruth: GroundTruth,
                                          _ body: (Observation) throws -> Void) throws -> TrialReport.Counts {
        try forEachObservation(attenuationCSV: reader, groundTruth: groundTruth, site: nil, firstSite: { _ in }, everySite: { _ in }, body)
    }

    /// With `site`, rows whose `site` column names another site are left out (a `trial import
    /// dp3t` file holds several scenarios, one per site); `firstSite` is told the first site seen,
    /// `rowSite` each row's own site (nil when it names none) before `body` gets the row.
    /// The TX power is the one the attenuation used: `calibration_tx` when the file has it
    /// (a calibrated import), else `tx_power`.
    public static func forEachObservation(attenuationCSV reader: CSVReader, groundTruth: GroundTruth, site: String?,
                                          firstSite: (String) -> Void, everySite: (String) -> Void = { _ in },
                                          rowSite: (String?) -> Void = { _ in },
                                          _ body: (Observation) throws -> Void) throws -> TrialReport.Counts {
        let cTime = try reader.requireColumn("time"), cAtt = try reader.requireColumn("attenuation")
        let cRx = reader.column("receiver"), cTx = reader.column("transmitter"), cDist = reader.column("distance")
        let cRPI = reader.column("rpi"), cRSSI = reader.column("rssi"), cCorr = reader.column("rssi_correction")
        let cTxPower = reader.column("calibration_tx") ?? reader.column("tx_power")
        let txPowerName = cTxPower.map { reader.header[$0] } ?? "tx_power"
        let cSite = reader.column("site")
        var sites = SiteRows(site: site)
        var counts = TrialReport.Counts()
        try reader.forEachRow { row in
            guard sites.admit(cSite.map { row.string($0) }, firstSite: firstSite, everySite: everySite, rowSite: rowSite) else { return }
            counts.rows += 1; counts.reports += 1; counts.matched += 1
            let t = try row.requireDouble(cTime, column: "time")
            let a = try row.requireDouble(cAtt, column: "attenuation")
            guard Observation.plausibleAttenuation.contains(a) else {
                throw CSVError.badValue(file: reader.file, line: row.line, column: "attenuation",
                                        expected: "dB in \(Format.exact(Observation.plausibleAttenuation.lowerBound))...\(Format.exact(Observation.plausibleAttenuation.upperBound)) (127 and -127 are the 'RSSI not available' value, not a reading)",
                                        actual: row.string(cAtt))
            }
            let rx = cRx.map { row.string($0) } ?? "", tx = cTx.map { row.string($0) } ?? ""
            let given = try cDist.flatMap { try row.double($0, column: "distance") }
            if let given, given < 0 {
                throw CSVError.badValue(file: reader.file, line: row.line, column: "distance", expected: "metres >= 0 or empty", actual: row.string(cDist!))
            }
            let d = given ?? groundTruth.distance(at: t, pair: NodePair(receiver: rx, transmitter: tx))
            guard let d else { counts.withoutGroundTruth += 1; return }
            func int(_ c: Int?, _ name: String) throws -> Int? { try c.flatMap { try row.int($0, column: name) } }
            counts.withGroundTruth += 1
            try body(Observation(time: t, receiver: rx, transmitter: tx, distance: d, attenuation: a,
                                 rpi: cRPI.map { row.string($0) }.flatMap { $0.isEmpty ? nil : $0 }, txPower: try int(cTxPower, txPowerName),
                                 rssi: try int(cRSSI, "rssi"), rssiCorrection: try int(cCorr, "rssi_correction")))
        }
        return counts
    }
}

/// The per-row site rule of an attenuation file, the same for JSON lines and CSV: a row of
/// another site than `site` is left out; `firstSite` hears the first site named, `everySite`
/// each one, `rowSite` each kept row's (nil when the row names none, or an empty one).
struct SiteRows {
    let site: String?
    private var seen = false

    init(site: String?) { self.site = site }

    /// Whether the row is kept, having told the callbacks its site.
    mutating func admit(_ rowSiteName: String?, firstSite: (String) -> Void, everySite: (String) -> Void,
                        rowSite: (String?) -> Void) -> Bool {
        guard let s = rowSiteName, !s.isEmpty else { rowSite(nil); return true }
        if let site, s != site { return false }
        if !seen { seen = true; firstSite(s) }
        everySite(s)
        rowSite(s)
        return true
    }
}

/// Writes a report directory: report.json, report.md, attenuation.csv, distances.csv, fit.csv,
/// curve.csv, detection.csv, plot.svg.
public enum TrialReportWriter {
    public static let files = ["report.json", "report.md", "attenuation.csv", "distances.csv", "fit.csv",
                               "curve.csv", "detection.csv", "plot.svg", "pairs.csv", "receivers.csv", "sweep.csv", "sweep.svg", "detection_probability.csv", "heatmap.svg", "residuals.svg"]

    /// With `dailyAttenuation`, the attenuation rows go to the daily layout
    /// (`dailyAttenuationFiles`) instead of one attenuation.csv.
    public static func write(_ report: TrialReport, observations: [Observation], to dir: URL, dailyAttenuation: Bool = false) throws {
        let rows = try AttenuationRowsWriter(reportDirectory: dir, daily: dailyAttenuation)
        do {
            for o in observations { try rows.append(o, site: report.site) }
            try rows.commit()
        } catch { rows.discard(); throw error }
        try write(report, tally: ObservationTally(observations), to: dir, dailyAttenuation: dailyAttenuation)
    }

    /// Every file but the attenuation rows (written as they stream, AttenuationRowsWriter);
    /// `dailyAttenuation` and `jsonLines` say how those were written, for report.md's file list.
    public static func write(_ report: TrialReport, tally: ObservationTally, to dir: URL, dailyAttenuation: Bool = false, jsonLines: Bool = false) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try OutputFile.write(jsonData(report), to: dir.appendingPathComponent("report.json"))
        try OutputFile.write(Data(markdown(report, dailyAttenuation: dailyAttenuation, jsonLines: jsonLines).utf8), to: dir.appendingPathComponent("report.md"))
        try distancesCSV(report.analysis).write(to: dir.appendingPathComponent("distances.csv"))
        try fitCSV(report.analysis).write(to: dir.appendingPathComponent("fit.csv"))
        let caption = report.sources?.caption
        var plot = AttenuationPlot(analysis: report.analysis, tally: tally, site: report.label)
        plot.caption = caption
        try curveCSV(plot).write(to: dir.appendingPathComponent("curve.csv"))
        try detectionCSV(report.analysis).write(to: dir.appendingPathComponent("detection.csv"))
        try OutputFile.write(Data(plot.svg().utf8), to: dir.appendingPathComponent("plot.svg"))
        try groupsCSV(report.analysis.pairs, pairs: true).write(to: dir.appendingPathComponent("pairs.csv"))
        try groupsCSV(report.analysis.receivers, pairs: false).write(to: dir.appendingPathComponent("receivers.csv"))
        try sweepCSV(report.analysis).write(to: dir.appendingPathComponent("sweep.csv"))
        var dp = CSVWriter(header: ["distance_low", "distance_high", "scans_present", "scans_heard", "detection_probability"])
        for r in report.detectionByDistance {
            dp.appendRow([Format.readable(r.distanceLow, significant: 4), Format.readable(r.distanceHigh, significant: 4), String(r.scans), String(r.heard), Format.fixed(r.probability, 4)])
        }
        // Empty, the file says why (a comment line; pandas reads it with comment="#").
        if report.detectionByDistance.isEmpty { dp.appendRaw("# not computed: " + (report.detectionProbabilityNote ?? "no scans with a transmitter present")) }
        try dp.write(to: dir.appendingPathComponent("detection_probability.csv"))
        var sweep = SweepPlot(analysis: report.analysis, site: report.label)
        sweep.caption = caption
        try OutputFile.write(Data(sweep.svg().utf8), to: dir.appendingPathComponent("sweep.svg"))
        var heatmap = HeatmapPlot(analysis: report.analysis, tally: tally, site: report.label)
        heatmap.caption = caption
        try OutputFile.write(Data(heatmap.svg().utf8), to: dir.appendingPathComponent("heatmap.svg"))
        if var residuals = ResidualPlot(analysis: report.analysis, tally: tally, site: report.label) {
            residuals.caption = caption
            try OutputFile.write(Data(residuals.svg().utf8), to: dir.appendingPathComponent("residuals.svg"))
        }
        if let t = report.tobitFit {
            var w = CSVWriter(header: ["parameter", "value"])
            w.appendRow(["attenuation_at_1m_db", Format.fixed(t.attenuationAt1m, 3)])
            w.appendRow(["slope_db_per_decade", Format.fixed(t.slopePerDecade, 3)])
            w.appendRow(["sigma_db", Format.fixed(t.sigma, 3)])
            w.appendRow(["censoring_limit_db", Format.fixed(t.limitDb, 1)])
            w.appendRow(["heard_scans", String(t.heardScans)])
            w.appendRow(["censored_scans", String(t.censoredScans)])
            try w.write(to: dir.appendingPathComponent("tobit.csv"))
        }
    }

    /// Distances to 6 significant digits (a converted 16.563589586801527 m is 16.5636, 3 ft x
    /// 0.3048 is 0.9144): a summary for people and plotting; attenuation.csv keeps exact values.
    public static func groupsCSV(_ groups: [GroupStats], pairs: Bool) -> CSVWriter {
        var w = CSVWriter(header: (pairs ? ["receiver", "transmitter"] : ["receiver"]) +
                          ["count", "distances", "min_distance", "max_distance", "median_attenuation", "mean_attenuation", "slope_db_per_decade"])
        for g in groups {
            w.appendRow((pairs ? [g.receiver, g.transmitter ?? ""] : [g.receiver]) +
                        [String(g.count), String(g.distances), Format.readable(g.minDistance, significant: 6), Format.readable(g.maxDistance, significant: 6),
                         Format.fixed(g.medianAttenuation, 2), Format.fixed(g.meanAttenuation, 2), g.slopePerDecade.map { Format.fixed($0, 3) } ?? ""])
        }
        return w
    }

    public static func sweepCSV(_ a: ChannelAnalysis) -> CSVWriter {
        var w = CSVWriter(header: ["threshold_db", "close_contact_m", "true_positives", "false_positives", "recall", "false_positive_rate", "precision"])
        for r in a.sweep {
            w.appendRow([Format.exact(r.thresholdDb), Format.exact(a.options.closeContactDistance), String(r.truePositives), String(r.falsePositives),
                         Format.fixed(r.recall, 4), Format.fixed(r.falsePositiveRate, 4), Format.fixed(r.precision, 4)])
        }
        return w
    }

    /// JSON with sorted keys; NaN (a rate with nothing to divide by) is written as null.
    public static func jsonData(_ report: TrialReport) throws -> Data {
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        enc.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "__NaN__")
        var text = String(decoding: try enc.encode(report), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"__NaN__\"", with: "null")
        return Data(text.utf8)
    }

    public static let attenuationHeader = ["time", "receiver", "transmitter", "distance", "attenuation", "site", "rpi", "tx_power", "rssi", "rssi_correction"]

    public static func attenuationCSV(_ obs: [Observation], site: String? = nil) -> CSVWriter {
        var w = CSVWriter(header: attenuationHeader)
        let siteField = "," + CSVWriter.escape(site ?? "")
        for o in obs { w.appendRaw(attenuationLine(o, siteField: siteField)) }
        return w
    }

    /// One attenuation.csv row without its newline; `siteField` is "," + the escaped site.
    public static func attenuationLine(_ o: Observation, siteField: String) -> String {
        func opt(_ v: Int?) -> String { v.map(String.init) ?? "" }
        var line = Format.time(o.time)
        line += "," + CSVWriter.escape(o.receiver) + "," + CSVWriter.escape(o.transmitter) + ","
        // Exact values: the file read back with --attenuations must give the same report
        // (2 decimals moved a 1.499 m row across a 1.5 m close-contact boundary).
        line += Format.exact(o.distance) + ","
        line += Format.exact(o.attenuation)
        return line + siteField + "," + (o.rpi ?? "") + "," + opt(o.txPower) + "," + opt(o.rssi) + "," + opt(o.rssiCorrection)
    }

    /// One row as JSON lines (without the newline): the attenuation.csv columns with the
    /// camelCase names of the sightings format (`txPower`, `rssiCorrection`), null for absent ones.
    public static func attenuationJSONLine(_ o: Observation, site: String?) -> String {
        let jsonString = JSONValue.quoted
        func str(_ v: String?) -> String { v.map(jsonString) ?? "null" }
        func int(_ v: Int?) -> String { v.map(String.init) ?? "null" }
        return "{\"time\":\(Format.time(o.time)),\"receiver\":\(jsonString(o.receiver)),\"transmitter\":\(jsonString(o.transmitter)),"
            + "\"distance\":\(Format.exact(o.distance)),\"attenuation\":\(Format.exact(o.attenuation)),\"site\":\(jsonString(site ?? "")),"
            + "\"rpi\":\(str(o.rpi)),\"txPower\":\(int(o.txPower)),\"rssi\":\(int(o.rssi)),\"rssiCorrection\":\(int(o.rssiCorrection))}"
    }

    /// The attenuation rows in the daily layout: attenuation/board=<receiver>/day=<YYYY-MM-DD>/attenuation.csv
    /// (or attenuation.jsonl).
    public static func dailyAttenuationFiles(in dir: URL, jsonLines: Bool = false) -> DailyFiles {
        DailyFiles(root: dir.appendingPathComponent("attenuation"), fileName: jsonLines ? "attenuation.jsonl" : "attenuation.csv",
                   header: jsonLines ? "" : attenuationHeader.joined(separator: ",") + "\n")
    }

    public static func distancesCSV(_ a: ChannelAnalysis) -> CSVWriter {
        var w = CSVWriter(header: ["distance", "distance_low", "distance_high", "count", "median", "q1", "q3", "mean", "min", "max", "model_mean"])
        for d in a.distances {
            w.appendRow([Format.fixed(d.distance, 2), Format.fixed(d.distanceLow, 2), Format.fixed(d.distanceHigh, 2), String(d.count),
                         Format.fixed(d.median, 2), Format.fixed(d.q1, 2), Format.fixed(d.q3, 2), Format.fixed(d.mean, 2),
                         Format.fixed(d.min, 2), Format.fixed(d.max, 2),
                         a.fit.map { Format.fixed($0.meanAttenuation(at: max(d.distance, a.options.minimumDistance)), 2) } ?? ""])
        }
        return w
    }

    public static func fitCSV(_ a: ChannelAnalysis) -> CSVWriter {
        var w = CSVWriter(header: ["parameter", "value", "standard_error"])
        if let f = a.fit {
            w.appendRow(["attenuation_at_1m_db", Format.fixed(f.attenuationAt1m, 3), Format.fixed(f.attenuationAt1mStandardError, 3)])
            w.appendRow(["slope_db_per_decade", Format.fixed(f.slopePerDecade, 3), Format.fixed(f.slopeStandardError, 3)])
            w.appendRow(["path_loss_exponent", Format.fixed(f.pathLossExponent, 4), Format.fixed(f.slopeStandardError / 10, 4)])
            w.appendRow(["sigma_db", Format.fixed(f.sigma, 3), ""])
            w.appendRow(["r_squared", Format.fixed(f.rSquared, 4), ""])
            w.appendRow(["count", String(f.count), ""])
        }
        if let c = a.censoredFit {
            w.appendRow(["censored_attenuation_at_1m_db", Format.fixed(c.attenuationAt1m, 3), ""])
            w.appendRow(["censored_slope_db_per_decade", Format.fixed(c.slopePerDecade, 3), ""])
            w.appendRow(["censored_sigma_db", Format.fixed(c.sigma, 3), ""])
            w.appendRow(["censoring_limit_db", Format.fixed(c.limitDb, 1), ""])
        }
        return w
    }

    public static func curveCSV(_ plot: AttenuationPlot) -> CSVWriter {
        var w = CSVWriter(header: ["distance", "fit", "fit_minus_sigma", "fit_plus_sigma"])
        for p in plot.curve {
            w.appendRow([Format.fixed(p.distance, 3), Format.fixed(p.mean, 2), Format.fixed(p.mean - p.sigma, 2), Format.fixed(p.mean + p.sigma, 2)])
        }
        return w
    }

    public static func detectionCSV(_ a: ChannelAnalysis) -> CSVWriter {
        var w = CSVWriter(header: ["threshold_db", "close_contact_m", "close", "far", "true_positives", "false_positives",
                                   "true_positive_rate", "false_positive_rate", "precision",
                                   "expected_true_positive_rate", "expected_false_positive_rate", "expected_precision"])
        for r in a.detection {
            w.appendRow([Format.fixed(r.thresholdDb, 1), Format.fixed(a.options.closeContactDistance, 2), String(r.closeCount), String(r.farCount),
                         String(r.truePositives), String(r.falsePositives),
                         Format.fixed(r.truePositiveRate, 4), Format.fixed(r.falsePositiveRate, 4), Format.fixed(r.precision, 4),
                         Format.fixed(r.expectedTruePositiveRate, 4), Format.fixed(r.expectedFalsePositiveRate, 4),
                         Format.fixed(r.expectedPrecision, 4)])
        }
        return w
    }

    /// `dailyAttenuation`: the rows went to the daily layout (`--split daily`), which the
    /// file list names instead of one attenuation.csv.
    public static func markdown(_ r: TrialReport, dailyAttenuation: Bool = false, jsonLines: Bool = false) -> String {
        let a = r.analysis
        func f(_ v: Double, _ d: Int = 1) -> String { v.isNaN ? "n/a" : Format.fixed(v, d) }
        func pct(_ v: Double) -> String { v.isNaN ? "n/a" : Format.fixed(v * 100, 1) + " %" }
        var s = "# Trial report\(r.label.map { ": \($0)" } ?? "")\n\n"
        if let sites = r.sites, sites.count > 1 { s += "Sites (datasets), pooled: \(sites.sorted(by: NaturalOrder.less).joined(separator: ", ")).\n\n" }
        else if let site = r.site { s += "Site (dataset): \(site).\n\n" }
        if let sources = r.sources { s += "Sources: \(sources.caption).\n\n" }
        let c = r.counts
        s += "## Data\n\n"
        if r.attenuationInput == true {
            s += "| attenuation rows | with ground truth | without |\n|---:|---:|---:|\n"
            s += "| \(c.rows) | \(c.withGroundTruth) | \(c.withoutGroundTruth) |\n\n"
        } else {
            s += "| rows | empty scans | reports | matched | implausible AEM | outside key validity | with ground truth | without |\n"
            s += "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            s += "| \(c.rows) | \(c.emptyScans) | \(c.reports) | \(c.matched) | \(c.implausibleMetadata) | \(c.outsideKeyValidity) | \(c.withGroundTruth) | \(c.withoutGroundTruth) |\n\n"
        }
        s += "\(r.pairs.count) receiver/transmitter pairs with ground truth.\n\n"
        s += "## Log-distance fit\n\n"
        if let fit = a.fit {
            s += "A(d) = A(1 m) + slope x log10(d / 1 m) + X, X ~ N(0, sigma), least squares over \(fit.count) sightings:\n\n"
            s += "| A(1 m) dB | slope dB/decade | path-loss exponent | sigma dB | R² |\n|---:|---:|---:|---:|---:|\n"
            s += "| \(f(fit.attenuationAt1m, 2)) ± \(f(fit.attenuationAt1mStandardError, 2)) | \(f(fit.slopePerDecade, 2)) ± \(f(fit.slopeStandardError, 2)) | \(f(fit.pathLossExponent, 3)) | \(f(fit.sigma, 2)) | \(f(fit.rSquared, 3)) |\n\n"
            if let c = a.censoredFit {
                s += "Censoring-aware fit (readings modelled as truncated at the sensitivity limit, \(f(c.limitDb, 1)) dB, the weakest received): "
                s += "A(1 m) \(f(c.attenuationAt1m, 2)) dB, slope \(f(c.slopePerDecade, 2)) dB/decade, sigma \(f(c.sigma, 2)) dB.\n\n"
            }
            if let t = r.tobitFit {
                s += "Tobit fit over scans (\(t.heardScans) scans that heard a present transmitter, at their mean attenuation; \(t.censoredScans) that did not, censored above \(f(t.limitDb, 1)) dB): "
                s += "A(1 m) \(f(t.attenuationAt1m, 2)) dB, slope \(f(t.slopePerDecade, 2)) dB/decade, sigma of a scan's mean \(f(t.sigma, 2)) dB (tobit.csv).\n\n"
            }
            for w in a.warnings { s += "**Warning:** \(w).\n\n" }
        } else {
            s += "No fit: \(a.fitError ?? "no data").\n\n"
        }
        if !a.pairs.isEmpty {
            s += "## Per receiver\n\n| receiver | count | distances | median dB | mean dB | slope dB/decade |\n|---|---:|---:|---:|---:|---:|\n"
            for g in a.receivers {
                s += "| \(g.receiver) | \(g.count) | \(g.distances) | \(f(g.medianAttenuation)) | \(f(g.meanAttenuation)) | \(g.slopePerDecade.map { f($0, 2) } ?? "n/a") |\n"
            }
            s += "\n## Per pair\n\n| receiver | transmitter | count | distances (m) | median dB | mean dB | slope dB/decade |\n|---|---|---:|---|---:|---:|---:|\n"
            for g in a.pairs.prefix(200) {
                let range = g.minDistance == g.maxDistance ? Format.readable(g.minDistance) : "\(Format.readable(g.minDistance))-\(Format.readable(g.maxDistance))"
                s += "| \(g.receiver) | \(g.transmitter ?? "") | \(g.count) | \(range) | \(f(g.medianAttenuation)) | \(f(g.meanAttenuation)) | \(g.slopePerDecade.map { f($0, 2) } ?? "n/a") |\n"
            }
            if a.pairs.count > 200 { s += "\n(\(a.pairs.count - 200) more pairs in pairs.csv.)\n" }
            s += "\n"
        }
        s += "## Attenuation by distance\n\n| distance m | count | q1 | median | q3 | mean | model |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        for d in a.distances {
            let model = a.fit.map { f($0.meanAttenuation(at: max(d.distance, a.options.minimumDistance))) } ?? "n/a"
            let label = d.distanceLow == d.distanceHigh ? Format.readable(d.distance) : "\(Format.readable(d.distanceLow))-\(Format.readable(d.distanceHigh))"
            s += "| \(label) | \(d.count) | \(f(d.q1)) | \(f(d.median)) | \(f(d.q3)) | \(f(d.mean)) | \(model) |\n"
        }
        if !r.detectionByDistance.isEmpty {
            s += "\n## Detection probability by distance (share of scans in which a present transmitter was heard)\n\n"
            s += "| distance m | scans | heard | probability |\n|---:|---:|---:|---:|\n"
            for d in r.detectionByDistance {
                let label = d.distanceLow == d.distanceHigh ? Format.readable(d.distanceLow) : "\(Format.readable(d.distanceLow))-\(Format.readable(d.distanceHigh))"
                s += "| \(label) | \(d.scans) | \(d.heard) | \(pct(d.probability)) |\n"
            }
        } else {
            s += "\nDetection probability by distance: not computed: \(r.detectionProbabilityNote ?? "no scans with a transmitter present").\n"
        }
        s += "\n## Detection (close contact: distance <= \(f(a.options.closeContactDistance, 2)) m; per sighting)\n\n"
        s += "Observed rates beside the rates the fitted model expects (normal CDF\(a.wholeDecibels ? ", 0.5 dB continuity correction for whole-dB readings" : "")).\n\n"
        s += "| threshold dB | close | far | TPR | expected TPR | FPR | expected FPR | precision | expected precision |\n"
        s += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for d in a.detection {
            s += "| \(Format.exact(d.thresholdDb)) | \(d.closeCount) | \(d.farCount) | \(pct(d.truePositiveRate)) | \(pct(d.expectedTruePositiveRate)) | \(pct(d.falsePositiveRate)) | \(pct(d.expectedFalsePositiveRate)) | \(pct(d.precision)) | \(pct(d.expectedPrecision)) |\n"
        }
        let rowsFile = jsonLines ? "attenuation.jsonl" : "attenuation.csv"
        let rows = dailyAttenuation ? "attenuation/board=<receiver>/day=<YYYY-MM-DD>/\(rowsFile) (every analysed sighting, by receiver and UTC day)"
            : "\(rowsFile) (every analysed sighting)"
        s += "\nFiles: \(rows), distances.csv, fit.csv, curve.csv, detection.csv, plot.svg, heatmap.svg (attenuation by distance), residuals.svg (residuals of the fit), pairs.csv, receivers.csv, sweep.csv and sweep.svg (recall and precision at every whole-dB threshold)\(r.tobitFit == nil ? "" : ", tobit.csv").\n"
        return s
    }
}
