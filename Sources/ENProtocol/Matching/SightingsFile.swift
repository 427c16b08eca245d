import CSV
import Foundation

/// Why a sightings export was rejected. Each case says where and what was expected.
public enum SightingsFormatError: Error, Equatable, CustomStringConvertible {
    case empty
    case missingColumn(String)
    case malformedCSV(line: Int, reason: String)
    case badField(line: Int, column: String, value: String, expected: String)

    public var description: String {
        switch self {
        case .empty: return "sightings file is empty (expected a header line)"
        case .missingColumn(let c): return "sightings file has no '\(c)' column"
        case .malformedCSV(let line, let reason): return "sightings line \(line): \(reason)"
        case .badField(let line, let column, let value, let expected):
            return "sightings line \(line), column '\(column)': expected \(expected), got '\(value)'"
        }
    }
}

/// Reader of the sightings export (docs/sightings-format.md): CSV with a header, columns found
/// by name, unknown columns ignored; or JSON lines with the camelCase names. Pure: takes the
/// file's bytes, reads nothing itself.
public enum SightingsFile {
    /// What a caller needs from the file: windows need the scan columns, matching does not.
    public enum Requirement: Sendable { case matching, windows }

    public static func parse(_ data: Data, requiring requirement: Requirement = .matching) throws -> SightingsLog {
        guard let first = data.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) else {
            throw SightingsFormatError.empty
        }
        var builder = Builder()
        if first == UInt8(ascii: "{") {
            try parseJSONLines(data, into: &builder)
        } else {
            try parseCSV(data, into: &builder)
        }
        if requirement == .windows, !builder.hasScanColumns {
            throw SightingsFormatError.missingColumn("scan_start")
        }
        return builder.finish()
    }

    /// Accumulates rows; scans are deduplicated by (node, start, end) and sorted at the end.
    struct Builder {
        var sightings: [Sighting] = []
        var scanIDs: [Scan: Int32] = [:]
        var scans: [Scan] = []
        var hasScanColumns = false

        mutating func scanIndex(_ scan: Scan) -> Int32 {
            if let i = scanIDs[scan] { return i }
            let i = Int32(scans.count)
            scans.append(scan)
            scanIDs[scan] = i
            return i
        }

        func finish() -> SightingsLog {
            let order = scans.indices.sorted { scans[$0] < scans[$1] }
            var newIndex = [Int32](repeating: 0, count: scans.count)
            for (n, old) in order.enumerated() { newIndex[old] = Int32(n) }
            var out = sightings
            for i in out.indices { if let s = out[i].scanIndex { out[i].scanIndex = newIndex[Int(s)] } }
            return SightingsLog(sightings: out, scans: order.map { scans[$0] }, hasScanColumns: hasScanColumns)
        }
    }

    /// One row's fields, already split; `line` for messages.
    struct Row {
        var line: Int
        var time: String?
        var rpi: String?
        var aem: String?
        var rssi: String?
        var scanStart: String?
        var scanEnd: String?
        var rssiCorrection: String?
        var node: String?
    }

    static func parseCSV(_ data: Data, into builder: inout Builder) throws {
        let text = String(decoding: data, as: UTF8.self)
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true)
        } catch {
            throw SightingsFormatError.malformedCSV(line: 1, reason: "\(error)")
        }
        guard let header = reader.headerRow, !header.isEmpty else { throw SightingsFormatError.empty }
        let names = header.map { $0.trimmingCharacters(in: .whitespaces) }
        func column(_ name: String) -> Int? { names.firstIndex(of: name) }
        guard let cTime = column("time") else { throw SightingsFormatError.missingColumn("time") }
        guard let cRPI = column("rpi") else { throw SightingsFormatError.missingColumn("rpi") }
        guard let cAEM = column("aem") else { throw SightingsFormatError.missingColumn("aem") }
        guard let cRSSI = column("rssi") else { throw SightingsFormatError.missingColumn("rssi") }
        let cStart = column("scan_start"), cEnd = column("scan_end")
        if (cStart == nil) != (cEnd == nil) {
            throw SightingsFormatError.missingColumn(cStart == nil ? "scan_start" : "scan_end")
        }
        builder.hasScanColumns = cStart != nil
        let cCorrection = column("rssi_correction"), cNode = column("node")
        var line = 1
        while let fields = reader.next() {
            line += 1
            if fields.count == 1, fields[0].isEmpty { continue } // blank line
            guard fields.count == names.count else {
                throw SightingsFormatError.malformedCSV(line: line, reason: "expected \(names.count) fields as in the header, got \(fields.count)")
            }
            func f(_ c: Int?) -> String? { c.map { fields[$0] } }
            try add(Row(line: line, time: fields[cTime], rpi: fields[cRPI], aem: fields[cAEM], rssi: fields[cRSSI],
                        scanStart: f(cStart), scanEnd: f(cEnd), rssiCorrection: f(cCorrection), node: f(cNode)),
                    to: &builder)
        }
        if let error = reader.error {
            throw SightingsFormatError.malformedCSV(line: line + 1, reason: "\(error)")
        }
    }

    /// The JSON-lines form: `{"time","rpi","aem","rssi","scanStart","scanEnd","rssiCorrection","node","site"}`.
    struct JSONRow: Decodable {
        var time: Double
        var rpi: String?
        var aem: String?
        var rssi: Int?
        var scanStart: Double?
        var scanEnd: Double?
        var rssiCorrection: Int?
        var node: String?
    }

    static func parseJSONLines(_ data: Data, into builder: inout Builder) throws {
        let decoder = JSONDecoder()
        var line = 0
        var sawScan = false, sawNoScan = false
        for raw in data.split(separator: 0x0a, omittingEmptySubsequences: false) {
            line += 1
            guard raw.contains(where: { $0 != 0x20 && $0 != 0x0d && $0 != 0x09 }) else { continue }
            let row: JSONRow
            do { row = try decoder.decode(JSONRow.self, from: Data(raw)) } catch {
                throw SightingsFormatError.malformedCSV(line: line, reason: "not a sighting JSON object (\(error))")
            }
            if row.scanStart != nil { sawScan = true } else { sawNoScan = true }
            func num(_ v: Double?) -> String? { v.map { String($0) } }
            try add(Row(line: line, time: String(row.time), rpi: row.rpi ?? "", aem: row.aem ?? "",
                        rssi: row.rssi.map(String.init) ?? "", scanStart: num(row.scanStart), scanEnd: num(row.scanEnd),
                        rssiCorrection: row.rssiCorrection.map(String.init), node: row.node),
                    to: &builder)
        }
        builder.hasScanColumns = sawScan && !sawNoScan
    }

    static func add(_ row: Row, to builder: inout Builder) throws {
        func bad(_ column: String, _ value: String, _ expected: String) -> SightingsFormatError {
            .badField(line: row.line, column: column, value: String(value.prefix(48)), expected: expected)
        }
        func seconds(_ column: String, _ s: String) throws -> Double {
            guard let v = Double(s.trimmingCharacters(in: .whitespaces)), v.isFinite, v >= 0 else {
                throw bad(column, s, "Unix seconds")
            }
            return v
        }
        let time = try seconds("time", row.time ?? "")
        var scan: Int32? = nil
        if let s = row.scanStart, let e = row.scanEnd, !(s.isEmpty && e.isEmpty) {
            let start = try seconds("scan_start", s), end = try seconds("scan_end", e)
            guard end >= start else { throw bad("scan_end", e, "a time not before scan_start \(s)") }
            let node = row.node.flatMap { $0.isEmpty ? nil : $0 }
            scan = builder.scanIndex(Scan(start: start, end: end, node: node))
        }
        let rpiText = (row.rpi ?? "").trimmingCharacters(in: .whitespaces)
        if rpiText.isEmpty {
            // An empty-scan row: it only records the scan.
            return
        }
        guard let rpiData = try? Data(hex: rpiText, count: RollingProximityIdentifier.length) else {
            throw bad("rpi", rpiText, "32 hex digits")
        }
        let aemText = (row.aem ?? "").trimmingCharacters(in: .whitespaces)
        guard let aemData = try? Data(hex: aemText, count: AssociatedEncryptedMetadata.length) else {
            throw bad("aem", aemText, "8 hex digits")
        }
        let rssiText = (row.rssi ?? "").trimmingCharacters(in: .whitespaces)
        guard let rssi = Int(rssiText), (-127...20).contains(rssi) else { throw bad("rssi", rssiText, "an integer dBm in -127...20") }
        var correction = 0
        if let c = row.rssiCorrection?.trimmingCharacters(in: .whitespaces), !c.isEmpty {
            guard let v = Int(c), (-100...100).contains(v) else { throw bad("rssi_correction", c, "an integer dB in -100...100") }
            correction = v
        }
        builder.sightings.append(Sighting(time: time, rpi: try RollingProximityIdentifier(bytes: rpiData),
                                          aem: try AssociatedEncryptedMetadata(bytes: aemData),
                                          rssi: rssi, rssiCorrection: correction, scanIndex: scan.map(Int.init)))
    }
}
