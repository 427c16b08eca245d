import ENProtocol
import Foundation
import TrialFormats

/// Reading a trial's files the way `gaenctl trial report` does, shared with the benchmark.
public enum TrialInputs {
    /// A file's name without directory and extension: transmitters are named after their key files.
    public static func stem(_ path: String) -> String {
        ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    /// A transmitter's keys: a key export file (ZIP, or a bare export.bin; its signature is not
    /// checked here, `gaenctl keys inspect --trust` does that) or a JSON key list, told apart by
    /// content. A revised key replaces the key with the same TEK (so a revocation takes effect).
    public static func readKeys(_ path: String) throws -> TransmitterKeys {
        let url = URL(fileURLWithPath: path)
        let data = try Data(contentsOf: url)
        return TransmitterKeys(name: stem(path), keys: try keys(data, file: path))
    }

    /// The keys of a key input of any kind (KeyInputKind), revised keys applied.
    public static func keys(_ data: Data, file: String) throws -> [DiagnosisKey] {
        guard KeyInputKind.detect(data) != .jsonKeyList else { return try KeyListFile.decode(data, file: file) }
        let export: KeyExportFile
        do { export = try KeyExportFile(parsing: data) } catch let e as KeyExportError {
            throw KeyListFile.KeyListError.notAKeyList(file: file, reason: "\(e)")
        }
        var keys = export.keyBatches().flatMap { $0 }
        for revised in export.revisedKeyBatches().joined() {
            if let i = keys.firstIndex(where: { $0.key == revised.key }) { keys[i] = revised } else { keys.append(revised) }
        }
        return keys
    }

    /// The receiver a sightings file speaks for when its rows have no `node`: the `board=`
    /// directory of the daily layout (DailyLayout), else the file's stem.
    public static func receiverName(ofSightingsFile path: String) -> String {
        for part in (path as NSString).pathComponents.reversed() where part.hasPrefix("board=") {
            let value = String(part.dropFirst("board=".count))
            return value == "_" ? "" : (value.removingPercentEncoding ?? value)
        }
        return stem(path)
    }

    /// Sightings of several files; rows without a `node` take the file's receiver name
    /// (`receiverName(ofSightingsFile:)`). With `site`, rows labelled with another site are left out.
    public static func readSightings(_ paths: [String], site: String? = nil) throws -> [SightingRow] {
        var rows: [SightingRow] = []
        for p in paths {
            let stem = receiverName(ofSightingsFile: p)
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
    /// Sightings files into `stream` as `trial report --sightings` reads them: in pieces on every
    /// core, each row without a node taking its file's receiver, the rows straight to `rows`;
    /// the report's site, unless set, the first one the files name.
    public static func addSightings(_ paths: [String], to stream: TrialStream, rows: AttenuationRowsWriter?) throws {
        if stream.site == nil { stream.site = paths.lazy.compactMap { SightingsExport.firstSite(URL(fileURLWithPath: $0)) }.first }
        try stream.addSightingsFiles(paths.map { .init(url: URL(fileURLWithPath: $0), receiver: receiverName(ofSightingsFile: $0)) }, rows: rows)
    }

    public static func reportSimulation(_ dir: URL, options: AnalysisOptions = AnalysisOptions()) throws -> TrialReport {
        let fm = FileManager.default
        // Every file below (sightings/ may hold the daily layout's board=/day= directories).
        func files(_ sub: String) throws -> [String] {
            let base = dir.appendingPathComponent(sub)
            var out: [String] = []
            guard let entries = fm.enumerator(atPath: base.path) else { return [] }
            for case let rel as String in entries {
                var isDir: ObjCBool = false
                let path = base.appendingPathComponent(rel).path
                if fm.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue, !(rel as NSString).lastPathComponent.hasPrefix(".") { out.append(path) }
            }
            return out.sorted()
        }
        let transmitters = try files("keys").map(readKeys)
        let truth = GroundTruth(markers: try MarkersFile.read(dir.appendingPathComponent("groundtruth/markers.csv")))
        let stream = TrialStream(transmitters: transmitters, groundTruth: truth)
        let out = dir.appendingPathComponent("report")
        let rows = try AttenuationRowsWriter(reportDirectory: out, daily: false)
        do {
            try addSightings(try files("sightings"), to: stream, rows: rows)
            try rows.commit()
        } catch { rows.discard(); throw error }
        let report = stream.report(options: options)
        try TrialReportWriter.write(report, tally: stream.tally, to: out)
        return report
    }
}
