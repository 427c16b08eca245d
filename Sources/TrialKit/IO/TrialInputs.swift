import ENProtocol
import Foundation

/// Reading a trial's files the way `gaenctl trial report` does, shared with the benchmark.
public enum TrialInputs {
    public enum InputError: Error, Equatable, CustomStringConvertible {
        case keyExportNotSupported(file: String)
        public var description: String {
            switch self {
            case .keyExportNotSupported(let f):
                return "\(f): key export ZIP files are not read here yet; pass the JSON key list (gaenctl keys inspect prints one)"
            }
        }
    }

    /// A file's name without directory and extension: transmitters are named after their key files.
    public static func stem(_ path: String) -> String {
        ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    public static func readKeys(_ path: String) throws -> TransmitterKeys {
        let ext = (path as NSString).pathExtension.lowercased()
        guard ext != "zip" && ext != "bin" else { throw InputError.keyExportNotSupported(file: path) }
        return TransmitterKeys(name: stem(path), keys: try KeyListFile.read(URL(fileURLWithPath: path)))
    }

    /// Sightings of several files; rows without a `node` take the file's stem as receiver name.
    /// With `site`, rows labelled with another site are left out.
    public static func readSightings(_ paths: [String], site: String? = nil) throws -> [SightingRow] {
        var rows: [SightingRow] = []
        for p in paths {
            let stem = stem(p)
            for var r in try SightingsExport.read(URL(fileURLWithPath: p)) {
                if let site, let s = r.site, s != site { continue }
                if r.node == nil { r.node = stem }
                rows.append(r)
            }
        }
        return rows
    }

    /// The report of a `gaenctl simulate` directory (sightings/, keys/, groundtruth/markers.csv),
    /// written into `dir/report`: exactly what `trial report` makes of those files.
    public static func reportSimulation(_ dir: URL, options: AnalysisOptions = AnalysisOptions()) throws -> TrialReport {
        let fm = FileManager.default
        func files(_ sub: String) throws -> [String] {
            try fm.contentsOfDirectory(atPath: dir.appendingPathComponent(sub).path).sorted().map { dir.appendingPathComponent("\(sub)/\($0)").path }
        }
        let rows = try readSightings(try files("sightings"))
        let transmitters = try files("keys").map(readKeys)
        let truth = GroundTruth(markers: try MarkersFile.read(dir.appendingPathComponent("groundtruth/markers.csv")))
        let (obs, counts) = try TrialPipeline.observations(sightings: rows, transmitters: transmitters, groundTruth: truth)
        let report = TrialReport(site: rows.first(where: { $0.site != nil })?.site, counts: counts, observations: obs, options: options)
        try TrialReportWriter.write(report, observations: obs, to: dir.appendingPathComponent("report"))
        return report
    }
}
