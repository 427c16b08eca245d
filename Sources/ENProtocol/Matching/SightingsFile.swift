#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        if first != UInt8(ascii: "{"), !hasQuote(data) {
            // The usual export: straight from the bytes (SightingsFileRaw.swift).
            builder.hasScanColumns = try parseUnquotedCSV(data, into: &builder)
        } else {
            builder.hasScanColumns = try forEachRow(data, startingWith: first) { try builder.add(validate($0)) }
        }
        if requirement == .windows, !builder.hasScanColumns {
            throw SightingsFormatError.missingColumn("scan_start")
        }
        return builder.finish()
    }

    /// Every row of the file, validated exactly as `parse` validates it, in file order and with
    /// empty-scan rows and the site kept: the form the trial toolkit reads (one reader for the
    /// one format, so `match`, `windows` and `trial report` accept and reject the same files).
    public static func records(_ data: Data) throws -> [SightingsRecord] {
        guard let first = data.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) else {
            throw SightingsFormatError.empty
        }
        var out: [SightingsRecord] = []
        // Node and site names repeat on every row: share one String per distinct value.
        var names: [String: String] = [:]
        func interned(_ s: String?) -> String? {
            guard let s, !s.isEmpty else { return nil }
            if let v = names[s] { return v }
            names[s] = s
            return s
        }
        _ = try forEachRow(data, startingWith: first) { row in
            let v = try validate(row)
            out.append(SightingsRecord(
                time: v.time,
                rpi: try v.report.map { try RollingProximityIdentifier(bytes: Data($0.rpi)) },
                aem: try v.report.map { try AssociatedEncryptedMetadata(bytes: Data($0.aem)) },
                rssi: v.report.map { $0.rssi },
                scanStart: v.scanStart, scanEnd: v.scanEnd, rssiCorrection: v.rssiCorrection,
                node: interned(v.node), site: interned(v.site), address: v.address))
        }
        return out
    }

    /// Hands every data row to `body`; returns whether the file has scan columns.
    static func forEachRow(_ data: Data, startingWith first: UInt8, _ body: (Row) throws -> Void) throws -> Bool {
        first == UInt8(ascii: "{") ? try parseJSONLines(data, body) : try parseCSV(data, body)
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

        mutating func add(_ row: ValidRow) {
            let scan = row.scanStart.map { scanIndex(Scan(start: $0, end: row.scanEnd ?? $0, node: row.node.flatMap { $0.isEmpty ? nil : $0 })) }
            guard let r = row.report else { return } // an empty-scan row only records the scan
            sightings.append(Sighting(time: row.time, rpiLow: Sighting.word(r.rpi, 0), rpiHigh: Sighting.word(r.rpi, 8),
                                      aemBits: UInt32(truncatingIfNeeded: Sighting.word(r.aem, 0)),
                                      rssi: Int8(r.rssi), rssiCorrection: Int8(row.rssiCorrection), scanIndex: scan,
                                      address: row.address.flatMap(SightingsFile.addressBits)))
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
        var site: String?
        var address: String? = nil
    }

    /// A row after validation; `report` is nil on an empty-scan row.
    struct ValidRow {
        var time: Double
        var scanStart: Double?
        var scanEnd: Double?
        var rssiCorrection: Int
        var node: String?
        var site: String?
        var address: String? = nil
        var report: (rpi: [UInt8], aem: [UInt8], rssi: Int)?
    }

    static func parseCSV(_ data: Data, _ body: (Row) throws -> Void) throws -> Bool {
        // A file without a single '"' has no quoting to honour, so such a file (the usual
        // export: hex, numbers, plain names) is split on bytes; any file with quotes goes
        // through CSVRows (RFC 4180 quoting).
        // memchr on the raw bytes: Data's byte iterator was 6% of a whole `gaenctl match`.
        if !hasQuote(data) {
            return try parseUnquotedCSV(data, body)
        }
        var rows = CSVRows(String(decoding: data, as: UTF8.self))
        guard let header = rows.next(), !header.isEmpty else { throw SightingsFormatError.empty }
        let columns = try Columns(header: header)
        var line = 1 // rows, as the reader counts them (a quoted field may hold line breaks)
        while let fields = rows.next() {
            line += 1
            if fields.count == 1, fields[0].isEmpty { continue } // blank line
            try body(columns.row(fields, line: line))
        }
        return columns.start != nil
    }

    /// Splits lines on LF (a CR before it is dropped) and fields on commas, on raw bytes.
    static func parseUnquotedCSV(_ data: Data, _ body: (Row) throws -> Void) throws -> Bool {
        var columns: Columns? = nil
        var line = 0
        var fields: [String] = []
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let bytes = raw.bindMemory(to: UInt8.self)
            var lineStart = 0
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count && bytes[lineEnd] != 0x0a { lineEnd += 1 }
                let next = lineEnd + 1
                if lineEnd > lineStart && bytes[lineEnd - 1] == 0x0d { lineEnd -= 1 }
                line += 1
                defer { lineStart = next }
                if lineEnd == lineStart { continue } // blank line
                fields.removeAll(keepingCapacity: true)
                var fieldStart = lineStart
                for i in lineStart...lineEnd where i == lineEnd || bytes[i] == 0x2c {
                    fields.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[fieldStart..<i]), as: UTF8.self))
                    fieldStart = i + 1
                }
                if let c = columns {
                    try body(c.row(fields, line: line))
                } else {
                    columns = try Columns(header: fields)
                }
            }
        }
        guard let columns else { throw SightingsFormatError.empty }
        return columns.start != nil
    }

    /// Where each known column is, found by name in the header.
    struct Columns {
        var count: Int
        var time: Int, rpi: Int, aem: Int, rssi: Int
        var start: Int?, end: Int?, correction: Int?, node: Int?, site: Int?, address: Int?

        init(header: [String]) throws {
            let names = header.map { $0.trimmingWhitespaces() }
            guard !(names.count == 1 && names[0].isEmpty) else { throw SightingsFormatError.empty }
            func column(_ name: String) -> Int? { names.firstIndex(of: name) }
            guard let t = column("time") else { throw SightingsFormatError.missingColumn("time") }
            guard let r = column("rpi") else { throw SightingsFormatError.missingColumn("rpi") }
            guard let a = column("aem") else { throw SightingsFormatError.missingColumn("aem") }
            guard let s = column("rssi") else { throw SightingsFormatError.missingColumn("rssi") }
            start = column("scan_start"); end = column("scan_end")
            if (start == nil) != (end == nil) {
                throw SightingsFormatError.missingColumn(start == nil ? "scan_start" : "scan_end")
            }
            count = names.count; time = t; rpi = r; aem = a; rssi = s
            correction = column("rssi_correction"); node = column("node"); site = column("site"); address = column("address")
        }

        func row(_ fields: [String], line: Int) throws -> Row {
            guard fields.count == count else {
                throw SightingsFormatError.malformedCSV(line: line, reason: "expected \(count) fields as in the header, got \(fields.count)")
            }
            func f(_ c: Int?) -> String? { c.map { fields[$0] } }
            return Row(line: line, time: fields[time], rpi: fields[rpi], aem: fields[aem], rssi: fields[rssi],
                       scanStart: f(start), scanEnd: f(end), rssiCorrection: f(correction), node: f(node), site: f(site),
                       address: f(address))
        }
    }

    /// The JSON-lines form: `{"time","rpi","aem","rssi","scanStart","scanEnd","rssiCorrection","node","site","address"}`.
    struct JSONRow: Decodable {
        var address: String?
        var time: Double
        var rpi: String?
        var aem: String?
        var rssi: Int?
        var scanStart: Double?
        var scanEnd: Double?
        var rssiCorrection: Int?
        var node: String?
        var site: String?
    }

    static func parseJSONLines(_ data: Data, _ body: (Row) throws -> Void) throws -> Bool {
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
            try body(Row(line: line, time: String(row.time), rpi: row.rpi ?? "", aem: row.aem ?? "",
                         rssi: row.rssi.map(String.init) ?? "", scanStart: num(row.scanStart), scanEnd: num(row.scanEnd),
                         rssiCorrection: row.rssiCorrection.map(String.init), node: row.node, site: row.site, address: row.address))
        }
        return sawScan && !sawNoScan
    }

    static func validate(_ row: Row) throws -> ValidRow {
        // ASCII blanks only (NSString's trimming is slow on hundreds of thousands of rows).
        func trim(_ s: String) -> String {
            let u = s.utf8
            guard u.first == 0x20 || u.first == 0x09 || u.last == 0x20 || u.last == 0x09 else { return s }
            return String(s.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        func bad(_ column: String, _ value: String, _ expected: String) -> SightingsFormatError {
            .badField(line: row.line, column: column, value: String(value.prefix(48)), expected: expected)
        }
        func seconds(_ column: String, _ s: String) throws -> Double {
            guard let v = Double(trim(s)), v.isFinite, v >= 0 else {
                throw bad(column, s, "Unix seconds")
            }
            return v
        }
        let time = try seconds("time", row.time ?? "")
        var start: Double? = nil, end: Double? = nil
        if let s = row.scanStart, let e = row.scanEnd, !(s.isEmpty && e.isEmpty) {
            start = try seconds("scan_start", s)
            end = try seconds("scan_end", e)
            guard end! >= start! else { throw bad("scan_end", e, "a time not before scan_start \(s)") }
        }
        var correction = 0
        if let c = row.rssiCorrection.map(trim), !c.isEmpty {
            guard let v = Int(c), (-100...100).contains(v) else { throw bad("rssi_correction", c, "an integer dB in -100...100") }
            correction = v
        }
        var valid = ValidRow(time: time, scanStart: start, scanEnd: end, rssiCorrection: correction, node: row.node, site: row.site)
        let rpiText = trim(row.rpi ?? "")
        let aemText = trim(row.aem ?? "")
        let rssiText = trim(row.rssi ?? "")
        if rpiText.isEmpty {
            // An empty-scan row records only the scan; a half-filled report is an error, not a scan.
            if !aemText.isEmpty { throw bad("aem", aemText, "empty, as rpi is empty (an empty-scan row)") }
            if !rssiText.isEmpty { throw bad("rssi", rssiText, "empty, as rpi is empty (an empty-scan row)") }
            if let a = row.address, !trim(a).isEmpty { throw bad("address", a, "empty, as rpi is empty (an empty-scan row)") }
            return valid
        }
        guard let rpiBytes = hexBytes(rpiText, count: RollingProximityIdentifier.length) else {
            throw bad("rpi", rpiText, "32 hex digits")
        }
        guard let aemBytes = hexBytes(aemText, count: AssociatedEncryptedMetadata.length) else {
            throw bad("aem", aemText, "8 hex digits")
        }
        guard let rssi = Int(rssiText), (-127...20).contains(rssi) else { throw bad("rssi", rssiText, "an integer dBm in -127...20") }
        valid.report = (rpiBytes, aemBytes, rssi)
        let addressText = trim(row.address ?? "")
        if !addressText.isEmpty {
            guard let a = normalisedAddress(addressText) else { throw bad("address", addressText, "a Bluetooth address such as 5A:12:34:56:78:9A") }
            valid.address = a
        }
        return valid
    }

    /// A normalised address as `Sighting.address` keeps it (most significant byte first in the text).
    static func addressBits(_ s: String) -> UInt64? {
        UInt64(s.split(separator: ":").joined(), radix: 16)
    }

    /// `AA:BB:CC:DD:EE:FF` in upper case, from six colon-separated hex bytes in either case.
    static func normalisedAddress(_ s: String) -> String? {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { return nil }
        return parts.map { $0.uppercased() }.joined(separator: ":")
    }

    /// Exactly `count` bytes of hex (either case), or nil. Rows need a byte-level decoder:
    /// Data(hex:) walks Characters and took a third of the time of reading an export.
    static func hexBytes(_ s: String, count: Int) -> [UInt8]? {
        // On the string's own UTF-8 storage (native strings have it): copying the digits into
        // an array first cost an allocation per field.
        if let r = s.utf8.withContiguousStorageIfAvailable({ hexBytes(UnsafeRawBufferPointer($0), count: count) }) { return r }
        return Array(s.utf8).withUnsafeBytes { hexBytes($0, count: count) }
    }

    static func hexBytes(_ text: UnsafeRawBufferPointer, count: Int) -> [UInt8]? {
        var digits = text
        if digits.count == count * 2 + 2, digits[0] == 0x30, digits[1] | 0x20 == 0x78 { digits = UnsafeRawBufferPointer(rebasing: digits[2...]) }
        guard digits.count == count * 2 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            guard let h = value(digits[2 * i]), let l = value(digits[2 * i + 1]) else { return nil }
            out[i] = h << 4 | l
        }
        return out
    }
}

/// The one writer of the sightings export (docs/sightings-format.md), beside its reader: the
/// daemon's `ExportSightings`, `gaenctl simulate` and the toolkit write rows through it, so every
/// producer writes the same columns in the same form (times with 3 decimals at most, hex in lower
/// case, the address as `AA:BB:CC:DD:EE:FF`, empty fields for an empty scan).
public struct SightingsFileWriter: Sendable {
    public enum Format: String, Sendable { case csv, jsonl }

    public static let csvHeader = ["time", "rpi", "aem", "rssi", "scan_start", "scan_end", "rssi_correction", "node", "site", "address"]

    public let format: Format
    public init(format: Format) { self.format = format }

    /// The first line of a CSV file (nothing for JSON lines).
    public var header: String { format == .csv ? Self.csvHeader.joined(separator: ",") + "\n" : "" }

    /// One row, with its newline.
    public func row(_ r: SightingsRecord) -> String {
        let rpi = r.rpi?.hexString, aem = r.aem?.hexString
        switch format {
        case .csv:
            return [Self.time(r.time), rpi ?? "", aem ?? "", r.rssi.map(String.init) ?? "", r.scanStart.map(Self.time) ?? "",
                    r.scanEnd.map(Self.time) ?? "", String(r.rssiCorrection), Self.csvField(r.node ?? ""), Self.csvField(r.site ?? ""),
                    r.address ?? ""].joined(separator: ",") + "\n"
        case .jsonl:
            func str(_ s: String?) -> String { s.map(JSONValue.quoted) ?? "null" }
            return "{\"time\":\(Self.time(r.time)),\"rpi\":\(str(rpi)),\"aem\":\(str(aem)),\"rssi\":\(r.rssi.map(String.init) ?? "null"),"
                + "\"scanStart\":\(r.scanStart.map(Self.time) ?? "null"),\"scanEnd\":\(r.scanEnd.map(Self.time) ?? "null"),"
                + "\"rssiCorrection\":\(r.rssiCorrection),\"node\":\(str(r.node ?? "")),\"site\":\(str(r.site ?? "")),\"address\":\(str(r.address))}\n"
        }
    }

    /// Unix seconds with at most 3 decimals, trailing zeros dropped ("1700000000.25").
    public static func time(_ t: Double) -> String {
        let ms = (t * 1000).rounded()
        guard ms.isFinite, abs(ms) < 9e15 else { return String(t) }
        let i = Int64(ms)
        let whole = i / 1000, frac = abs(i % 1000)
        guard frac != 0 else { return String(whole) }
        var f = String(frac)
        f = String(repeating: "0", count: 3 - f.count) + f
        while f.hasSuffix("0") { f.removeLast() }
        return (i < 0 && whole == 0 ? "-" : "") + String(whole) + "." + f
    }

    public static func csvField(_ s: String) -> String {
        s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) ? "\"" + s.replacing(scalar: "\"", with: "\"\"") + "\"" : s
    }
}
