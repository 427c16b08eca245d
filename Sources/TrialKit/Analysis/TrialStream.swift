import ENProtocol
import Foundation

/// `trial report` as a stream: sightings (or attenuation rows) go in piece by piece, are matched
/// and joined to ground truth, handed to `onObservation` (attenuation.csv is written from
/// there) and counted into an ObservationTally; nothing per row is kept. What stays in memory:
/// the keys' RPIs (one piece's matching), the tally's distinct values, and one entry per scan
/// (receiver, start, transmitters heard) for the detection probability.
public final class TrialStream {
    public private(set) var counts = TrialReport.Counts()
    public private(set) var tally = ObservationTally()
    /// The report's site label: the one asked for, else the first row's that has one.
    public private(set) var site: String?
    let siteFilter: String?
    let transmitters: [TransmitterKeys]
    let groundTruth: GroundTruth
    let matcher: any SightingMatcher
    /// Transmitter index -> its name's id (two key files of one name are one transmitter here, as
    /// the detection table names them).
    let nameID: [Int32]
    let names: [String]
    struct ScanKey: Hashable { var node: String; var start: Double }
    /// Every scan seen (empty ones included), with the name ids of the transmitters it heard.
    var scans: [ScanKey: [Int32]] = [:]
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
        counts.rows += rows.count
        for s in rows { if s.isEmptyScan { counts.emptyScans += 1 } else { counts.reports += 1 } }
        for s in rows { if let start = s.scanStart { let k = ScanKey(node: s.node ?? "", start: start); if scans[k] == nil { scans[k] = [] } } }
        let result = try matcher.match(rows, against: transmitters)
        counts.matched += result.matches.count
        counts.implausibleMetadata += result.implausibleMetadata
        counts.outsideKeyValidity += result.outsideValidity
        for m in result.matches {
            let s = rows[m.sightingIndex]
            if let start = s.scanStart {
                let k = ScanKey(node: s.node ?? "", start: start), id = nameID[m.transmitter]
                if !scans[k, default: []].contains(id) { scans[k, default: []].append(id) }
            }
            let pair = NodePair(receiver: s.node ?? "", transmitter: transmitters[m.transmitter].name)
            guard let d = groundTruth.distance(at: s.time, pair: pair) else { counts.withoutGroundTruth += 1; continue }
            try add(Observation(time: s.time, receiver: pair.receiver, transmitter: pair.transmitter,
                                distance: d, attenuation: m.attenuation, rpi: s.rpi?.hexString, txPower: m.txPower,
                                rssi: s.rssi, rssiCorrection: s.rssiCorrection))
        }
    }

    /// Attenuation rows (TrialPipeline.forEachObservation's format).
    public func addAttenuations(_ reader: CSVReader) throws {
        let c = try TrialPipeline.forEachObservation(attenuationCSV: reader, groundTruth: groundTruth) { try add($0) }
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
                if heard.contains(nameID[t]) { e.heard += 1 }
                byDistance[d] = e
            }
        }
        return TrialPipeline.detectionRows(byDistance)
    }

    /// The whole report from what streamed past.
    public func report(options: AnalysisOptions) -> TrialReport {
        TrialReport(site: site, counts: counts, tally: tally, options: options, detectionByDistance: detection())
    }
}

/// attenuation.csv written row by row: one file, or the daily layout (DailyFiles); either
/// appears only when `commit()` succeeds.
public final class AttenuationRowsWriter {
    let single: AtomicOutputFile?
    let daily: DailyFiles?
    var buffer = ""

    public init(reportDirectory dir: URL, daily: Bool) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        if daily {
            self.daily = TrialReportWriter.dailyAttenuationFiles(in: dir)
            single = nil
        } else {
            single = try AtomicOutputFile(path: dir.appendingPathComponent("attenuation.csv").path, durable: false)
            self.daily = nil
            buffer = TrialReportWriter.attenuationHeader.joined(separator: ",") + "\n"
        }
    }

    public func append(_ o: Observation, site: String?) throws {
        let line = TrialReportWriter.attenuationLine(o, siteField: "," + CSVWriter.escape(site ?? "")) + "\n"
        if let daily { return try daily.append(line, board: o.receiver, time: o.time) }
        buffer += line
        if buffer.utf8.count >= 1 << 16 { try single!.write(Data(buffer.utf8)); buffer = "" }
    }

    public func commit() throws {
        if let daily { return try daily.commit() }
        if !buffer.isEmpty { try single!.write(Data(buffer.utf8)); buffer = "" }
        try single!.commit()
    }

    public func discard() { daily?.discard(); single?.discard() }
}
