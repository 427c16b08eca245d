import ENProtocol
import Foundation
import TrialFormats

/// Leith & Farrell's GAEN measurement datasets (Trinity College Dublin; e.g. the Dublin tram
/// dataset, github.com/doug-leith/dublintram_gaen_dataset, June 2020) to contacts
/// (`gaenctl trial import leith DIR`). A dataset is three whitespace-separated text files with
/// one prefix, `#` lines being comments:
///
/// - `<prefix>attenuations.txt`: one row per pair of handsets at one distance, one column per
///   attenuation range, the minutes the GAEN API reported in it; its comment names the ranges
///   ("The attenuation levels (in dB) are 48-50, 50-52, ..., 90-100.").
/// - `<prefix>distances.txt`: the estimated distance (metres) of each row.
/// - `<prefix>pairs.txt`: the indices of the two handsets of each row.
///
/// Each row becomes one contact through the histogram importer (HistogramImport: minutes at the
/// range's midpoint by default, at most 300 s per scan instance), labelled
/// `<prefix> row N: handsets A-B`. A row with no minutes at all is kept as a contact without
/// windows: the pair was measured and never heard, which replay must count (a close pair no
/// rule can notify).
public enum LeithImport {
    public struct Dataset: Sendable, Equatable {
        public var prefix: String
        public var attenuations: URL
        public var distances: URL
        public var pairs: URL
    }

    public struct Failure: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// The datasets in `dir`: every `*attenuations.txt` with its `*distances.txt` and `*pairs.txt`.
    public static func datasets(in dir: URL) throws -> [Dataset] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() } catch {
            throw Failure(reason: "\(dir.path): cannot list: \(error.localizedDescription)")
        }
        var out: [Dataset] = []
        for n in names where n.hasSuffix("attenuations.txt") {
            let prefix = String(n.dropLast("attenuations.txt".count))
            var missing: [String] = []
            for part in ["distances.txt", "pairs.txt"] where !names.contains(prefix + part) { missing.append(prefix + part) }
            guard missing.isEmpty else { throw Failure(reason: "\(dir.path): \(n) has no \(missing.joined(separator: " and ")) beside it") }
            out.append(Dataset(prefix: prefix, attenuations: dir.appendingPathComponent(n),
                               distances: dir.appendingPathComponent(prefix + "distances.txt"), pairs: dir.appendingPathComponent(prefix + "pairs.txt")))
        }
        guard !out.isEmpty else {
            throw Failure(reason: "\(dir.path): no *attenuations.txt (a Leith & Farrell dataset: <prefix>attenuations.txt, <prefix>distances.txt, <prefix>pairs.txt)")
        }
        return out
    }

    /// A text matrix: its comment lines and its rows of numbers (with their line numbers).
    struct Matrix {
        var comments: [String] = []
        var rows: [(line: Int, values: [Double])] = []
    }

    static func matrix(_ url: URL, columns: Int?) throws -> Matrix {
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw Failure(reason: "\(url.path): cannot read: \(error.localizedDescription)")
        }
        var m = Matrix()
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            if line.hasPrefix("#") { m.comments.append(String(line.dropFirst())); continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            var values: [Double] = []
            for f in fields {
                guard let v = Double(f), v.isFinite else {
                    throw Failure(reason: "\(url.path) line \(i + 1): expected numbers, got '\(f)'")
                }
                values.append(v)
            }
            if let columns, values.count != columns {
                throw Failure(reason: "\(url.path) line \(i + 1): expected \(columns) numbers, got \(values.count)")
            }
            m.rows.append((i + 1, values))
        }
        return m
    }

    /// The attenuation ranges named in the attenuations file's comment ("... levels (in dB)
    /// are 48-50, 50-52, ..., 90-100.").
    static func ranges(inComments comments: [String]) -> [(low: Double, high: Double)]? {
        let text = comments.joined(separator: " ")
        guard let r = text.range(of: "levels (in dB) are") ?? text.range(of: "levels (dB) are") else { return nil }
        var list = text[r.upperBound...]
        if let end = list.range(of: ". ") ?? list.range(of: ".\n") { list = list[..<end.lowerBound] }
        if list.hasSuffix(".") { list = list.dropLast() }
        var out: [(Double, Double)] = []
        for item in list.split(separator: ",") {
            let parts = item.trimmingCharacters(in: .whitespaces).split(separator: "-").map { String($0).trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let lo = Double(parts[0]), let hi = Double(parts[1].replacingOccurrences(of: "dB", with: "")), lo < hi else { return nil }
            out.append((lo, hi))
        }
        return out.isEmpty ? nil : out
    }

    /// One dataset as the histogram CSV of HistogramImport (label, distance, LOW-HIGH columns).
    /// `ranges` overrides the ones named in the file's comment.
    public static func histogramCSV(_ d: Dataset, ranges given: [(low: Double, high: Double)]? = nil) throws -> String {
        let att = try matrix(d.attenuations, columns: nil)
        guard let ranges = given ?? ranges(inComments: att.comments) else {
            throw Failure(reason: "\(d.attenuations.path): its comment names no attenuation ranges (\"levels (in dB) are 48-50, 50-52, ...\"); give them with --ranges")
        }
        for r in att.rows where r.values.count != ranges.count {
            throw Failure(reason: "\(d.attenuations.path) line \(r.line): expected \(ranges.count) numbers (one per attenuation range), got \(r.values.count)")
        }
        let dist = try matrix(d.distances, columns: 1), pairs = try matrix(d.pairs, columns: 2)
        guard dist.rows.count == att.rows.count, pairs.rows.count == att.rows.count else {
            throw Failure(reason: "\(d.prefix)*: \(att.rows.count) rows of attenuations, \(dist.rows.count) distances, \(pairs.rows.count) pairs: expected one each per row")
        }
        var csv = CSVWriter(header: ["label", "distance"] + ranges.map { "\(Format.exact($0.low))-\(Format.exact($0.high))" })
        for (i, row) in att.rows.enumerated() {
            func handset(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e9 ? String(Int(v)) : Format.exact(v) }
            let p = pairs.rows[i].values
            for (k, v) in row.values.enumerated() where v < 0 {
                throw Failure(reason: "\(d.attenuations.path) line \(row.line): minutes must be >= 0, got \(Format.exact(v)) in column \(k + 1)")
            }
            let label = "\(d.prefix.trimmingCharacters(in: CharacterSet(charactersIn: "_-. "))) row \(i + 1): handsets \(handset(p[0]))-\(handset(p[1]))"
            csv.appendRow([label, Format.exact(dist.rows[i].values[0])] + row.values.map(Format.exact))
        }
        return csv.text
    }

    /// The day the windows are dated: `given` (an option), else the one date (YYYY-MM-DD) the
    /// datasets' comment lines name. The rules weigh a window by its day (days since exposure,
    /// the configuration in force), so no day is assumed: without either, the import stops.
    /// Returns the day and where it came from, for the command to print.
    public static func measurementDay(in dir: URL, given: UTCDay?) throws -> (day: UTCDay, source: String) {
        if let given { return (given, "--date") }
        var found: [String: String] = [:]
        for d in try datasets(in: dir) {
            for url in [d.attenuations, d.distances, d.pairs] {
                let m = try matrix(url, columns: nil)
                for c in m.comments {
                    var rest = Substring(c)
                    while let r = rest.range(of: #"\b(19|20)\d\d-[01]\d-[0-3]\d\b"#, options: .regularExpression) {
                        let s = String(rest[r])
                        if UTCDay(isoDate: s) != nil, found[s] == nil { found[s] = url.lastPathComponent }
                        rest = rest[r.upperBound...]
                    }
                }
            }
        }
        if found.count == 1, let e = found.first { return (UTCDay(isoDate: e.key)!, "the comment of \(e.value)") }
        if found.count > 1 {
            throw Failure(reason: "\(dir.path): the comments name several dates (\(found.keys.sorted().joined(separator: ", "))); give the measurement day with --date YYYY-MM-DD")
        }
        throw Failure(reason: "\(dir.path): the dataset names no date in its comments; give the day the measurements were taken with --date YYYY-MM-DD (windows are dated by it, and the rules weigh a window by its day)")
    }

    /// Every dataset in `dir` to contacts, dated `options.defaultDay` (else measurementDay's).
    public static func contacts(in dir: URL, ranges: [(low: Double, high: Double)]? = nil,
                                options: HistogramImport.Options) throws -> ([Contact], ImportCounts) {
        let r = try dated(in: dir, ranges: ranges, options: options, date: options.defaultDay)
        return (r.contacts, r.counts)
    }

    /// The contacts with the day they are dated and where it came from (measurementDay), found
    /// after the files are checked, so a broken dataset is named as such first.
    public static func dated(in dir: URL, ranges: [(low: Double, high: Double)]? = nil, options: HistogramImport.Options,
                             date: UTCDay?) throws -> (contacts: [Contact], counts: ImportCounts, day: UTCDay, daySource: String) {
        var options = options
        options.keepRowsWithoutMinutes = true
        let texts = try datasets(in: dir).map { d in (d, try histogramCSV(d, ranges: ranges)) }
        let (day, source) = try measurementDay(in: dir, given: date)
        options.defaultDay = day
        var contacts: [Contact] = []
        var total = ImportCounts()
        for (d, text) in texts {
            let (c, counts) = try HistogramImport.contacts(CSVReader(bytes: Array(text.utf8), file: d.attenuations.path), options: options)
            contacts += c
            total.add(counts)
        }
        return (contacts, total, day, source)
    }
}
