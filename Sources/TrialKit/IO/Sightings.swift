import ENProtocol
import Foundation

/// One row of the sightings export (docs/sightings-format.md): an advertising report with
/// 0xFD6F service data, or an empty-scan row (rpi, aem and rssi nil).
public struct SightingRow: Sendable, Equatable {
    public var time: Double
    public var rpi: RollingProximityIdentifier?
    public var aem: AssociatedEncryptedMetadata?
    public var rssi: Int?
    public var scanStart: Double?
    public var scanEnd: Double?
    /// The receiving node's RSSI correction at the time (0 when the column is absent).
    public var rssiCorrection: Double
    public var node: String?
    public var site: String?

    public init(time: Double, rpi: RollingProximityIdentifier?, aem: AssociatedEncryptedMetadata?, rssi: Int?,
                scanStart: Double? = nil, scanEnd: Double? = nil, rssiCorrection: Double = 0,
                node: String? = nil, site: String? = nil) {
        self.time = time; self.rpi = rpi; self.aem = aem; self.rssi = rssi
        self.scanStart = scanStart; self.scanEnd = scanEnd; self.rssiCorrection = rssiCorrection
        self.node = node; self.site = site
    }

    public var isEmptyScan: Bool { rpi == nil }
}

/// Reads and writes the sightings CSV and JSON-lines formats of docs/sightings-format.md.
public enum SightingsExport {
    public static let header = ["time", "rpi", "aem", "rssi", "scan_start", "scan_end", "rssi_correction", "node", "site"]

    /// Reads a CSV file, or a JSON-lines file when the name ends in .jsonl or .ndjson.
    public static func read(_ url: URL) throws -> [SightingRow] {
        let ext = url.pathExtension.lowercased()
        if ext == "jsonl" || ext == "ndjson" { return try readJSONLines(url) }
        return try readCSV(CSVReader(contentsOf: url))
    }

    public static func readCSV(_ reader: CSVReader) throws -> [SightingRow] {
        let cTime = try reader.requireColumn("time")
        let cRPI = try reader.requireColumn("rpi")
        let cAEM = try reader.requireColumn("aem")
        let cRSSI = try reader.requireColumn("rssi")
        let cStart = reader.column("scan_start"), cEnd = reader.column("scan_end")
        let cCorr = reader.column("rssi_correction"), cNode = reader.column("node"), cSite = reader.column("site")
        var out: [SightingRow] = []
        // Node and site names repeat on every row: share one String per distinct value.
        var names: [String: String] = [:]
        func interned(_ s: String) -> String? {
            if s.isEmpty { return nil }
            if let v = names[s] { return v }
            names[s] = s
            return s
        }
        try reader.forEachRow { row in
            let rpiBytes = try row.hexBytes(cRPI, column: "rpi", expectedCount: RollingProximityIdentifier.length)
            let aemBytes = try row.hexBytes(cAEM, column: "aem", expectedCount: AssociatedEncryptedMetadata.length)
            let rssi = try row.int(cRSSI, column: "rssi")
            if (rpiBytes == nil) != (aemBytes == nil) || (rpiBytes == nil) != (rssi == nil) {
                throw CSVError.badValue(file: reader.file, line: row.line, column: "rpi,aem,rssi",
                                        expected: "all three filled (a sighting) or all three empty (an empty scan)",
                                        actual: [row.string(cRPI), row.string(cAEM), row.string(cRSSI)].joined(separator: ","))
            }
            out.append(SightingRow(
                time: try row.requireDouble(cTime, column: "time"),
                rpi: try rpiBytes.map { try RollingProximityIdentifier(bytes: $0) },
                aem: try aemBytes.map { try AssociatedEncryptedMetadata(bytes: $0) },
                rssi: rssi,
                scanStart: try cStart.flatMap { try row.double($0, column: "scan_start") },
                scanEnd: try cEnd.flatMap { try row.double($0, column: "scan_end") },
                rssiCorrection: try cCorr.flatMap { try row.double($0, column: "rssi_correction") } ?? 0,
                node: cNode.flatMap { interned(row.string($0)) },
                site: cSite.flatMap { interned(row.string($0)) }))
        }
        return out
    }

    struct JSONLine: Codable {
        var time: Double
        var rpi: String?
        var aem: String?
        var rssi: Int?
        var scanStart: Double?
        var scanEnd: Double?
        var rssiCorrection: Double?
        var node: String?
        var site: String?
    }

    public static func readJSONLines(_ url: URL) throws -> [SightingRow] {
        let text = try String(contentsOf: url, encoding: .utf8)
        let decoder = JSONDecoder()
        var out: [SightingRow] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let j: JSONLine
            do { j = try decoder.decode(JSONLine.self, from: Data(trimmed.utf8)) } catch {
                throw CSVError.badValue(file: url.path, line: n + 1, column: "(json)", expected: "a sightings object", actual: String(trimmed.prefix(80)))
            }
            out.append(SightingRow(time: j.time, rpi: try j.rpi.map { try RollingProximityIdentifier(hex: $0) },
                                aem: try j.aem.map { try AssociatedEncryptedMetadata(hex: $0) }, rssi: j.rssi,
                                scanStart: j.scanStart, scanEnd: j.scanEnd, rssiCorrection: j.rssiCorrection ?? 0,
                                node: j.node, site: j.site))
        }
        return out
    }

    /// Streams sightings into CSV text (all columns of the format).
    public struct Writer {
        public private(set) var csv = CSVWriter(header: SightingsExport.header)
        public init() {}

        public mutating func append(_ s: SightingRow) {
            var line = Format.time(s.time)
            line += ","
            if let r = s.rpi { line += r.hexString }
            line += ","
            if let a = s.aem { line += a.hexString }
            line += ","
            if let v = s.rssi { line += String(v) }
            line += ","
            if let v = s.scanStart { line += Format.time(v) }
            line += ","
            if let v = s.scanEnd { line += Format.time(v) }
            line += ","
            line += s.rssiCorrection == s.rssiCorrection.rounded() ? String(Int(s.rssiCorrection)) : Format.fixed(s.rssiCorrection, 2)
            line += ","
            line += CSVWriter.escape(s.node ?? "")
            line += ","
            line += CSVWriter.escape(s.site ?? "")
            csv.appendRaw(line)
        }

        /// Appends a line already formatted in the header's column order (the simulator's fast path).
        public mutating func appendRawLine(_ line: String) { csv.appendRaw(line) }

        public func write(to url: URL) throws { try csv.write(to: url) }
    }
}
