import ENProtocol
import Foundation
import TrialFormats

/// `trial report` as a stream: sightings (or attenuation rows) go in piece by piece, are matched
/// and joined to ground truth, handed to `onObservation` (attenuation.csv is written from
/// there) and counted into an ObservationTally; nothing per row is kept. What stays in memory:
/// the keys' RPIs (one piece's matching), the tally's distinct values, and one entry per scan
/// (receiver, start, transmitters heard) for the detection probability.
public final class TrialStream {
    public internal(set) var counts = TrialReport.Counts()
    public internal(set) var tally = ObservationTally()
    /// The report's site label: the one asked for, else the first row's that has one (the
    /// caller may set it before streaming, from `SightingsExport.firstSite`, so that every
    /// attenuation row carries it).
    public var site: String?
    /// Every site the rows named: more than one is a pooled report.
    public internal(set) var sites: Set<String> = []
    /// While an attenuation row is handed to `onObservation`: its own site (the attenuation row's,
    /// or the sighting's it comes from), when it names one (a pooled report's rows keep their
    /// sites: `rows.append(o, site: stream.rowSite ?? stream.site)`).
    public internal(set) var rowSite: String?
    let siteFilter: String?
    let transmitters: [TransmitterKeys]
    let groundTruth: GroundTruth
    let matcher: any SightingMatcher
    /// Transmitter index -> its name's id (two key files of one name are one transmitter here, as
    /// the detection table names them).
    let nameID: [Int32]
    let names: [String]
    struct ScanKey: Hashable { var node: String; var start: Double }
    /// A transmitter heard in a scan: its name id and the sum and number of its attenuations.
    struct Heard { var id: Int32; var sum: Double; var count: Int32 }
    /// Every scan seen (empty ones included), with the transmitters it heard.
    var scans: [ScanKey: [Heard]] = [:]
    /// The weakest attenuation matched, and whether all were whole dB (the Tobit fit's limit).
    var weakest = -Double.infinity
    var wholeDecibels = true
    /// Receives every analysed sighting in input order.
    public var onObservation: ((Observation) throws -> Void)?

    public init(transmitters: [TransmitterKeys], groundTruth: GroundTruth, site: String? = nil,
                matcher: some SightingMatcher = ProjectMatcher()) {
        self.transmitters = transmitters
        self.groundTruth = groundTruth
        self.matcher = matcher
        self.siteFilter = site
        self.site = site
        var ids: [String: Int32] = [:]
        var names: [String] = []
        nameID = transmitters.map { t in
            if let i = ids[t.name] { return i }
            ids[t.name] = Int32(names.count); names.append(t.name)
            return Int32(names.count - 1)
        }
        self.names = names
    }

    /// One piece of sightings (rows whose `node` is nil take `receiver`). With a site filter,
    /// rows labelled with another site are left out.
    public func addSightings(_ input: [SightingRow], receiver: String? = nil) throws {
        var rows = input
        if siteFilter != nil || receiver != nil {
            rows = []
            rows.reserveCapacity(input.count)
            for var r in input {
                if let siteFilter, let s = r.site, s != siteFilter { continue }
                if r.node == nil, let receiver { r.node = receiver }
                rows.append(r)
            }
        }
        if site == nil, let s = rows.first(where: { $0.site != nil })?.site { site = s }
        // Every site, for a pooled report's title: rows of one site come in runs.
        var last: String?
        for r in rows { if let s = r.site, s != last { last = s; sites.insert(s) } }
        counts.rows += rows.count
        for s in rows { if s.isEmptyScan { counts.emptyScans += 1 } else { counts.reports += 1 } }
        for s in rows { if let start = s.scanStart { let k = ScanKey(node: s.node ?? "", start: start); if scans[k] == nil { scans[k] = [] } } }
        let result = try matcher.match(rows, against: transmitters)
        counts.matched += result.matches.count
        counts.implausibleMetadata += result.implausibleMetadata
        counts.outsideKeyValidity += result.outsideValidity
        for m in result.matches {
            let s = rows[m.sightingIndex]
            weakest = max(weakest, m.attenuation)
            if m.attenuation != m.attenuation.rounded() { wholeDecibels = false }
            if let start = s.scanStart {
                let k = ScanKey(node: s.node ?? "", start: start), id = nameID[m.transmitter]
                if let i = scans[k]!.firstIndex(where: { $0.id == id }) {
                    scans[k]![i].sum += m.attenuation; scans[k]![i].count += 1
                } else {
                    scans[k]!.append(Heard(id: id, sum: m.attenuation, count: 1))
                }
            }
            let pair = NodePair(receiver: s.node ?? "", transmitter: transmitters[m.transmitter].name)
            guard let d = groundTruth.distance(at: s.time, pair: pair) else { counts.withoutGroundTruth += 1; continue }
            // A pooled report's rows keep the site of the sighting they come from.
            rowSite = s.site
            defer { rowSite = nil }
            try add(Observation(time: s.time, receiver: pair.receiver, transmitter: pair.transmitter,
                                distance: d, attenuation: m.attenuation, rpi: s.rpi?.hexString, txPower: m.txPower,
                                rssi: s.rssi, rssiCorrection: s.rssiCorrection))
        }
    }

    /// An attenuation file: CSV (TrialPipeline.forEachObservation's format) or JSON lines
    /// (attenuation.jsonl, told apart by a first character `{`).
    /// Whether attenuation rows (not sightings) were read.
    public internal(set) var attenuationInput = false

    public func addAttenuations(fileAt url: URL) throws {
        let data = Data(try Gzip.contents(of: url))
        if data.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) == UInt8(ascii: "{") {
            attenuationInput = true
            let c = try TrialPipeline.forEachObservation(attenuationJSONLines: data, file: url.path, groundTruth: groundTruth, site: siteFilter,
                                                         firstSite: { [self] s in if site == nil { site = s } }, everySite: { [self] in sites.insert($0) },
                                                         rowSite: { [self] in rowSite = $0 }) { try add($0) }
            rowSite = nil
            counts.rows += c.rows; counts.reports += c.reports; counts.matched += c.matched
            counts.withoutGroundTruth += c.withoutGroundTruth
        } else {
            try addAttenuations(CSVReader(bytes: [UInt8](data), file: url.path))
        }
    }

    /// Attenuation rows (TrialPipeline.forEachObservation's format).
    public func addAttenuations(_ reader: CSVReader) throws {
        attenuationInput = true
        // The first row's site labels the report and the rows written after it.
        let c = try TrialPipeline.forEachObservation(attenuationCSV: reader, groundTruth: groundTruth, site: siteFilter,
                                                     firstSite: { [self] s in if site == nil { site = s } }, everySite: { [self] in sites.insert($0) },
                                                     rowSite: { [self] in rowSite = $0 }) { try add($0) }
        rowSite = nil
        counts.rows += c.rows; counts.reports += c.reports; counts.matched += c.matched
        counts.withoutGroundTruth += c.withoutGroundTruth
    }

    func add(_ o: Observation) throws {
        counts.withGroundTruth += 1
        tally.add(o)
        try onObservation?(o)
    }

    /// The detection probability by distance (TrialPipeline.run's): every scan against every
    /// transmitter whose pair has a distance in force at the scan's start.
    public func detection() -> [DetectionProbability] {
        guard !scans.isEmpty else { return [] }
        var byDistance: [Double: (present: Int, heard: Int)] = [:]
        for (scan, heard) in scans {
            for (t, tx) in transmitters.enumerated() where tx.name != scan.node {
                guard let d = groundTruth.distance(at: scan.start, pair: NodePair(receiver: scan.node, transmitter: tx.name)) else { continue }
                var e = byDistance[d] ?? (0, 0)
                e.present += 1
                if heard.contains(where: { $0.id == nameID[t] }) { e.heard += 1 }
                byDistance[d] = e
            }
        }
        return TrialPipeline.detectionRows(byDistance)
    }

    /// The Tobit fit over scans (TobitFit): each scan with a transmitter present at a known
    /// distance, heard (its mean attenuation, to 0.1 dB) or not (censored above the weakest
    /// attenuation received, + 0.5 dB for whole-dB readings). nil without scans.
    public func tobitFit(minimumDistance: Double = AnalysisOptions().minimumDistance) -> TobitFit? {
        guard !scans.isEmpty, weakest.isFinite else { return nil }
        struct Point: Hashable { var x: Double; var y: Double }
        var heardCounts: [Point: Int] = [:]
        var censoredCounts: [Double: Int] = [:]
        var xOf: [Double: Double] = [:]
        for (scan, heard) in scans {
            for (t, tx) in transmitters.enumerated() where tx.name != scan.node {
                guard let d = groundTruth.distance(at: scan.start, pair: NodePair(receiver: scan.node, transmitter: tx.name)) else { continue }
                let x: Double
                if let v = xOf[d] { x = v } else { x = log10(max(d, minimumDistance)); xOf[d] = x }
                if let h = heard.first(where: { $0.id == nameID[t] }) {
                    heardCounts[Point(x: x, y: (h.sum / Double(h.count) * 10).rounded() / 10), default: 0] += 1
                } else {
                    censoredCounts[x, default: 0] += 1
                }
            }
        }
        return TobitFit(heard: heardCounts.map { ($0.key.x, $0.key.y, $0.value) }, censored: censoredCounts.map { ($0.key, $0.value) },
                        limit: weakest + (wholeDecibels ? 0.5 : 0))
    }

    /// The whole report from what streamed past.
    public func report(options: AnalysisOptions) -> TrialReport {
        var r = TrialReport(site: site, counts: counts, tally: tally, options: options, detectionByDistance: detection())
        r.tobitFit = tobitFit(minimumDistance: options.minimumDistance)
        if attenuationInput { r.attenuationInput = true }
        if siteFilter == nil, sites.count > 1 { r.sites = sites.sorted(by: NaturalOrder.less) }
        if r.detectionByDistance.isEmpty {
            r.detectionProbabilityNote = scans.isEmpty
                ? (attenuationInput ? "the input is attenuation rows, which carry no scans (it needs sightings exports with their empty scans, scan_start)"
                                    : "the sightings have no scans (no scan_start column)")
                : "no transmitter had a ground-truth distance at the start of any scan (no markers for these pairs and times)"
        }
        return r
    }
}

/// attenuation.csv written row by row: one file, or the daily layout (DailyFiles); either
/// appears only when `commit()` succeeds.
public final class AttenuationRowsWriter {
    let single: AtomicOutputFile?
    let daily: DailyFiles?
    var buffer = ""

    let jsonLines: Bool

    /// - Parameter jsonLines: attenuation.jsonl (TrialReportWriter.attenuationJSONLine) instead of CSV.
    public init(reportDirectory dir: URL, daily: Bool, jsonLines: Bool = false) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        self.jsonLines = jsonLines
        if daily {
            self.daily = TrialReportWriter.dailyAttenuationFiles(in: dir, jsonLines: jsonLines)
            single = nil
        } else {
            single = try AtomicOutputFile(path: dir.appendingPathComponent(jsonLines ? "attenuation.jsonl" : "attenuation.csv").path, durable: false)
            self.daily = nil
            if !jsonLines { buffer = TrialReportWriter.attenuationHeader.joined(separator: ",") + "\n" }
        }
    }

    public func append(_ o: Observation, site: String?) throws {
        let line = (jsonLines ? TrialReportWriter.attenuationJSONLine(o, site: site)
                              : TrialReportWriter.attenuationLine(o, siteField: "," + CSVWriter.escape(site ?? ""))) + "\n"
        if let daily { return try daily.append(line, board: o.receiver, time: o.time) }
        buffer += line
        if buffer.utf8.count >= 1 << 16 { try single!.write(Data(buffer.utf8)); buffer = "" }
    }

    /// A worker's piece of rows already rendered (AttenuationFiles, SightingsFiles): its
    /// single-file bytes, or its blocks per board and day in the daily layout.
    func append(piece bytes: [UInt8], daily blocks: [AttenuationPieceParser.DailyRows]) throws {
        if let daily {
            for b in blocks {
                try daily.append(bytes: b.bytes, rows: b.rows,
                                 relativePath: DailyLayout.relativePath(board: b.board, day: DailyLayout.day(b.time), file: daily.fileName))
            }
            return
        }
        if !buffer.isEmpty { try single!.write(Data(buffer.utf8)); buffer = "" }
        if !bytes.isEmpty { try single!.write(bytes) }
    }

    public func commit() throws {
        if let daily { return try daily.commit() }
        if !buffer.isEmpty { try single!.write(Data(buffer.utf8)); buffer = "" }
        try single!.commit()
    }

    public func discard() { daily?.discard(); single?.discard() }
}
