import ENProtocol
import Foundation

/// Reading a trial's files the way `gaenctl trial report` does, shared with the benchmark.
public enum TrialInputs {
    /// A file's name without directory and extension: transmitters are named after their key files.
    public static func stem(_ path: String) -> String {
        ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    /// A transmitter's keys: a key export file (.zip, or a bare export.bin as .bin; its
    /// signature is not checked here, `gaenctl keys inspect --trust` does that) or a JSON key
    /// list. A revised key replaces the key with the same TEK (so a revocation takes effect).
    public static func readKeys(_ path: String) throws -> TransmitterKeys {
        let ext = (path as NSString).pathExtension.lowercased()
        let url = URL(fileURLWithPath: path)
        guard ext == "zip" || ext == "bin" else { return TransmitterKeys(name: stem(path), keys: try KeyListFile.read(url)) }
        let file: KeyExportFile
        do { file = try KeyExportFile(parsing: Data(contentsOf: url)) } catch let e as KeyExportError {
            throw KeyListFile.KeyListError.notAKeyList(file: path, reason: "\(e)")
        }
        var keys = file.keyBatches().flatMap { $0 }
        for revised in file.revisedKeyBatches().joined() {
            if let i = keys.firstIndex(where: { $0.key == revised.key }) { keys[i] = revised } else { keys.append(revised) }
        }
        return TransmitterKeys(name: stem(path), keys: keys)
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
