import ENProtocol
import RiskEngines
import Foundation
import TrialFormats

/// Attenuation-duration histograms to contacts (`gaenctl trial import histogram`).
///
/// The CSV layout: a header with `label` and `distance` (metres) and one column per attenuation
/// bin named `LOW-HIGH` (dB, the bin [LOW, HIGH), e.g. `40-42`), holding the minutes spent in
/// that bin; optional columns `date` (YYYY-MM-DD, default 2020-06-01), `report_type` (default
/// 1), `infectiousness` (default 1), `calibration_confidence` (default 0) and
/// `transmission_risk_level`. Other columns are ignored. Each row becomes one contact with one
/// exposure window: each bin's minutes are scan instances at the bin's midpoint (or its low or
/// high edge), whole dB (half up), cut into instances of at most 300 s (the framework caps
/// secondsSinceLastScan at 5 minutes) with seconds rounded to whole.
public enum HistogramImport {
    public enum Placement: String, Sendable, CaseIterable { case midpoint, low, high }

    public struct Options: Sendable {
        public var placement: Placement = .midpoint
        public var transmissionRiskLevel: Int? = nil
        /// Keep a row with no minutes in any bin as a contact without windows (a pair that was
        /// measured and never heard: a contact no rule can notify), instead of leaving it out.
        public var keepRowsWithoutMinutes = false
        /// The day of rows without a `date` (nil: 2020-06-01, the histogram's documented default).
        public var defaultDay: UTCDay? = nil
        public init() {}
    }

    public struct Bin: Sendable, Equatable {
        public var low: Double
        public var high: Double
        public var column: Int

        func attenuation(_ p: Placement) -> Double {
            let v: Double
            switch p {
            case .midpoint: v = (low + high) / 2
            case .low: v = low
            case .high: v = high
            }
            return (v + 0.5).rounded(.down)
        }
    }

    /// The bins of a header: every column named LOW-HIGH with LOW < HIGH.
    public static func bins(_ header: [String]) -> [Bin] {
        header.enumerated().compactMap { i, name in
            let parts = name.split(separator: "-", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let lo = Double(parts[0]), let hi = Double(parts[1]), lo < hi, lo >= 0 else { return nil }
            return Bin(low: lo, high: hi, column: i)
        }
    }

    public static func contacts(_ reader: CSVReader, options: Options) throws -> ([Contact], ImportCounts) {
        let cLabel = try reader.requireColumn("label"), cDist = try reader.requireColumn("distance")
        let bins = Self.bins(reader.header)
        guard !bins.isEmpty else {
            throw CSVError.missingColumn(file: reader.file, column: "LOW-HIGH (an attenuation bin such as 40-42)", header: reader.header)
        }
        let cDate = reader.column("date"), cReport = reader.column("report_type"), cInf = reader.column("infectiousness")
        let cConf = reader.column("calibration_confidence"), cTRL = reader.column("transmission_risk_level")
        var counts = ImportCounts()
        var out: [Contact] = []
        let defaultDay = options.defaultDay ?? UTCDay(isoDate: "2020-06-01")!
        try reader.forEachRow { row in
            counts.read += 1
            guard let d = try row.double(cDist, column: "distance") else { counts.drop("without a distance"); return }
            guard d >= 0 else {
                throw CSVError.badValue(file: reader.file, line: row.line, column: "distance", expected: "metres >= 0", actual: row.string(cDist))
            }
            var day = defaultDay
            if let c = cDate, !row.isEmpty(c) {
                guard let parsed = UTCDay(isoDate: row.string(c)) else {
                    throw CSVError.badValue(file: reader.file, line: row.line, column: "date", expected: "YYYY-MM-DD", actual: row.string(c))
                }
                day = parsed
            }
            func int(_ c: Int?, _ name: String, _ range: ClosedRange<Int>, _ d: Int?) throws -> Int? {
                guard let c, let v = try row.int(c, column: name) else { return d }
                guard range.contains(v) else {
                    throw CSVError.badValue(file: reader.file, line: row.line, column: name, expected: "\(range.lowerBound)...\(range.upperBound)", actual: row.string(c))
                }
                return v
            }
            var scans: [WindowsFileEntry.Scan] = []
            for b in bins {
                guard let minutes = try row.double(b.column, column: reader.header[b.column]), minutes > 0 else { continue }
                var seconds = (minutes * 60).rounded()
                let a = b.attenuation(options.placement)
                while seconds > 0 {
                    let s = min(seconds, 300)
                    scans.append(.init(typicalAttenuationDb: a, minAttenuationDb: a, secondsSinceLastScan: s))
                    seconds -= s
                }
            }
            guard !scans.isEmpty else {
                if options.keepRowsWithoutMinutes {
                    out.append(Contact(label: row.string(cLabel), distance: d, windows: []))
                    counts.written += 1
                } else {
                    counts.drop("with no minutes in any bin")
                }
                return
            }
            // Said, not silently assumed: cwa and nhs weigh a window by its report type and infectiousness.
            if cReport.map({ row.isEmpty($0) }) ?? true { counts.note("with report type 1 (CONFIRMED_TEST) assumed (no report_type; cwa and nhs weigh it)") }
            if cInf.map({ row.isEmpty($0) }) ?? true { counts.note("with infectiousness 1 (STANDARD) assumed (no infectiousness; cwa and nhs weigh it)") }
            let window = WindowsFileEntry(index: 0, dateMillisSinceEpoch: day.millisSinceEpoch,
                                          reportType: try int(cReport, "report_type", 0...5, 1)!, infectiousness: try int(cInf, "infectiousness", 0...2, 1)!,
                                          calibrationConfidence: try int(cConf, "calibration_confidence", 0...3, 0)!,
                                          transmissionRiskLevel: try int(cTRL, "transmission_risk_level", 1...8, options.transmissionRiskLevel),
                                          scanInstances: scans)
            out.append(Contact(label: row.string(cLabel), distance: d, windows: [window]))
            counts.written += 1
        }
        return (out, counts)
    }
}
