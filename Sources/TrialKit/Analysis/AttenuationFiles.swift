import Foundation
import PlatformSupport
#if canImport(Glibc)
import Glibc
import TrialFormats
#endif

/// `trial report --attenuations` over many files on every core: the files are read in pieces
/// cut at row ends, each piece is parsed, checked, counted and its attenuation rows rendered on
/// a worker thread (straight from the bytes: no String per field, no Observation per row), and
/// the pieces are merged on the calling thread in input order. Whatever the threads do, the
/// report, the rows written and the first error reported are those of reading the rows one by
/// one (TrialPipeline.forEachObservation); Tests/TrialKitTests/AttenuationFilesTests.swift
/// compares the two. A bounded number of pieces is in flight, so memory does not grow with rows.
extension TrialStream {
    /// Reads attenuation files (CSV, gzip or not; JSON lines files are read as
    /// `addAttenuations(fileAt:)` does) and writes their analysed rows to `rows` (not through
    /// `onObservation`).
    /// - Parameters:
    ///   - pieceSize: bytes per piece (a row longer than that makes its piece longer).
    ///   - threads: worker threads (pieces in flight: one more).
    public func addAttenuationFiles(_ urls: [URL], rows: AttenuationRowsWriter?, pieceSize: Int = 4 << 20,
                                    threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        let format: AttenuationPieceParser.Output = rows == nil ? .none : (rows!.jsonLines ? .jsonLines : .csv)
        let settings = AttenuationPieceParser.Settings(groundTruth: groundTruth, siteFilter: siteFilter, output: format,
                                                       daily: rows?.daily != nil)
        let results = PieceResults<AttenuationPieceParser.Result>()
        var pending: [(piece: AttenuationPiece, index: Int)] = []
        var submitted = 0
        // The site in force before a piece is known only once the pieces before it are merged;
        // workers assume the first site the reader has seen, and a piece whose rows depended on
        // a wrong guess is parsed again here.
        var siteGuess = siteFilter
        var fileLines = 0

        func merge() throws {
            let (piece, index) = pending.removeFirst()
            let lineShift = piece.hasHeader ? 0 : fileLines
            var out: AttenuationPieceParser.Result
            do {
                out = try results.take(index).get()
                if out.dependsOnSiteBefore, out.assumedSite != site {
                    out = try AttenuationPieceParser.parse(piece, settings: settings, siteBefore: site)
                }
            } catch { throw AttenuationPieceParser.shifted(error, lines: lineShift) }
            fileLines = lineShift + out.newlines
            counts.rows += out.rows; counts.reports += out.rows; counts.matched += out.rows
            counts.withoutGroundTruth += out.withoutGroundTruth
            counts.withGroundTruth += out.withGroundTruth
            if site == nil, let s = out.firstSite { site = s }
            sites.formUnion(out.sites)
            tally.merge(out.tally)
            try rows?.append(piece: out.lines, daily: out.daily)
        }
        func drain() throws { while !pending.isEmpty { try merge() } }

        do {
            for url in urls {
                attenuationInput = true
                let reader = try PieceReader(url: url, pieceSize: pieceSize)
                guard var first = try reader.next() else { throw CSVError.empty(file: url.path) }
                func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0a || b == 0x0d || b == 0x09 }
                while first.allSatisfy(blank), let more = try reader.next() { first += more }
                if first.first(where: { !blank($0) }) == UInt8(ascii: "{") {
                    try drain()
                    while let more = try reader.next() { first += more }
                    // A line's own site, else the report's (as the CSV pieces write them).
                    var own: String?
                    let c = try TrialPipeline.forEachObservation(attenuationJSONLines: Data(first), file: url.path, groundTruth: groundTruth, site: siteFilter,
                                                                 firstSite: { s in if site == nil { site = s } }, everySite: { sites.insert($0) },
                                                                 rowSite: { own = $0 }) { o in
                        counts.withGroundTruth += 1
                        tally.add(o)
                        try rows?.append(o, site: own ?? site)
                    }
                    if siteGuess == nil { siteGuess = site }
                    counts.rows += c.rows; counts.reports += c.reports; counts.matched += c.matched
                    counts.withoutGroundTruth += c.withoutGroundTruth
                    continue
                }
                let header = try CSVReader(bytes: first, file: url.path)
                let columns = try AttenuationColumns(header)
                if siteGuess == nil { siteGuess = header.firstSite(columns) }
                var next: [UInt8]? = first
                var hasHeader = true
                while let bytes = next {
                    let piece = AttenuationPiece(bytes: bytes, file: url.path, columns: columns, hasHeader: hasHeader)
                    hasHeader = false
                    while pending.count > max(1, threads) { try merge() }
                    let index = submitted, guess = siteGuess
                    submitted += 1
                    pending.append((piece, index))
                    DispatchQueue.global().async {
                        results.put(index, Result { try AttenuationPieceParser.parse(piece, settings: settings, siteBefore: guess) })
                    }
                    next = try reader.next()
                }
            }
            try drain()
        } catch {
            // Let the workers finish with what they hold before the error is reported.
            for p in pending { _ = results.take(p.index) }
            throw error
        }
    }
}

/// The columns of an attenuation CSV (TrialPipeline.forEachObservation's).
struct AttenuationColumns: Sendable {
    let time: Int, attenuation: Int
    let receiver: Int?, transmitter: Int?, distance: Int?, rpi: Int?, rssi: Int?, rssiCorrection: Int?, txPower: Int?, site: Int?
    let txPowerName: String

    init(_ reader: CSVReader) throws {
        time = try reader.requireColumn("time")
        attenuation = try reader.requireColumn("attenuation")
        receiver = reader.column("receiver"); transmitter = reader.column("transmitter"); distance = reader.column("distance")
        rpi = reader.column("rpi"); rssi = reader.column("rssi"); rssiCorrection = reader.column("rssi_correction")
        txPower = reader.column("calibration_tx") ?? reader.column("tx_power")
        txPowerName = txPower.map { reader.header[$0] } ?? "tx_power"
        site = reader.column("site")
    }
}

extension CSVReader {
    /// The first site a row of these bytes names (the workers' guess of the report's site).
    func firstSite(_ columns: AttenuationColumns) -> String? {
        guard let c = columns.site else { return nil }
        var found: String?
        var header = true
        try? Self.scan(bytes, file: file) { row in
            if header { header = false; return true }
            if !row.isEmpty(c) { found = row.string(c); return false }
            return true // rows before the first site name none
        }
        return found
    }
}

/// A run of whole rows of one file.
struct AttenuationPiece: Sendable {
    var bytes: [UInt8]
    var file: String
    var columns: AttenuationColumns
    /// The file's first piece: its first row is the header.
    var hasHeader: Bool
}

/// One piece parsed, checked, counted and rendered: what TrialPipeline.forEachObservation and
/// AttenuationRowsWriter.append do row by row, straight from the bytes.
enum AttenuationPieceParser {
    enum Output: Sendable { case none, csv, jsonLines }

    struct Settings: Sendable {
        var groundTruth: GroundTruth
        var siteFilter: String?
        var output: Output
        var daily: Bool
    }

    struct DailyRows: Sendable {
        var board: String
        var time: Double
        var bytes: [UInt8] = []
        var rows = 0
    }

    struct Result: Sendable {
        var rows = 0, withGroundTruth = 0, withoutGroundTruth = 0
        var newlines = 0
        var firstSite: String?
        /// Every site the piece's rows name (a pooled report says so in its title).
        var sites: Set<String> = []
        var assumedSite: String?
        /// Some row was written with the site assumed for before the piece (`assumedSite`, or none
        /// until the piece's own first site).
        var dependsOnSiteBefore = false
        var tally = ObservationTally.Part()
        var lines: [UInt8] = []
        var daily: [DailyRows] = []
    }

    /// A receiver/transmitter pair seen in the piece, by its text.
    struct Pair {
        var rx: [UInt8], tx: [UInt8]
        var names: NodePair
        var part: Int32 = -1
        var receiver: Int32
    }

    struct BucketKey: Hashable { var receiver: Int32; var day: Int }

    /// Errors carry lines counted from the piece's start; `lines` is the file's lines before it.
    static func shifted(_ error: any Error, lines: Int) -> any Error {
        guard lines > 0, let e = error as? CSVError else { return error }
        switch e {
        case .badValue(let f, let l, let c, let x, let a): return CSVError.badValue(file: f, line: l + lines, column: c, expected: x, actual: a)
        case .unterminatedQuote(let f, let l): return CSVError.unterminatedQuote(file: f, line: l + lines)
        default: return e
        }
    }

    static func parse(_ piece: AttenuationPiece, settings: Settings, siteBefore: String?) throws -> Result {
        var out = Result()
        out.assumedSite = siteBefore
        let c = piece.columns
        let filter = settings.siteFilter.map { Array($0.utf8) }
        var inForce = settings.siteFilter ?? siteBefore
        func siteBytes(_ s: String?) -> [UInt8] { Array(("," + CSVWriter.escape(s ?? "")).utf8) }
        var siteField = siteBytes(inForce)
        var pairs: [Pair] = []
        var pairByHash: [UInt64: Int32] = [:]
        var receivers: [String: Int32] = [:]
        var buckets: [BucketKey: Int] = [:]
        var numbers = ExactNumberBytes()
        var line: [UInt8] = []
        line.reserveCapacity(256)
        out.newlines = piece.bytes.withUnsafeBufferPointer { b in
            var n = 0
            guard var p = b.baseAddress.map(UnsafeRawPointer.init) else { return 0 }
            let end = p + b.count
            while p < end, let hit = memchr(p, 0x0A, end - p) { n += 1; p = UnsafeRawPointer(hit) + 1 }
            return n
        }

        func pairIndex(_ row: CSVRow) -> Int {
            func text(_ i: Int?) -> [UInt8] { i.map { c in row.withText(c) { Array($0) } } ?? [] }
            let h: UInt64 = {
                var h: UInt64 = 0xcbf2_9ce4_8422_2325
                func mix(_ b: UnsafeBufferPointer<UInt8>) { for x in b { h = (h ^ UInt64(x)) &* 0x0000_0100_0000_01b3 } }
                if let r = c.receiver { row.withText(r, mix) }
                h = (h ^ 0xff) &* 0x0000_0100_0000_01b3
                h = (h ^ 0x1) &* 0x0000_0100_0000_01b3
                if let t = c.transmitter { row.withText(t, mix) }
                return h
            }()
            func matches(_ p: Pair) -> Bool {
                func same(_ i: Int?, _ bytes: [UInt8]) -> Bool {
                    guard let i else { return bytes.isEmpty }
                    return row.withText(i) { b in b.count == bytes.count && (b.isEmpty || memcmp(b.baseAddress!, bytes, b.count) == 0) }
                }
                return same(c.receiver, p.rx) && same(c.transmitter, p.tx)
            }
            if let i = pairByHash[h], matches(pairs[Int(i)]) { return Int(i) }
            if let i = pairs.firstIndex(where: matches) { return i }
            let rx = text(c.receiver), tx = text(c.transmitter)
            let names = NodePair(receiver: String(decoding: rx, as: UTF8.self), transmitter: String(decoding: tx, as: UTF8.self))
            let r: Int32
            if let known = receivers[names.receiver] { r = known } else { r = Int32(receivers.count); receivers[names.receiver] = r }
            pairs.append(Pair(rx: rx, tx: tx, names: names, receiver: r))
            if pairByHash[h] == nil { pairByHash[h] = Int32(pairs.count - 1) }
            return pairs.count - 1
        }

        func csvField(_ row: CSVRow, _ i: Int?) {
            guard let i else { return }
            row.withText(i) { b in
                if b.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) {
                    line += CSVWriter.escape(String(decoding: b, as: UTF8.self)).utf8
                } else {
                    line += b
                }
            }
        }
        func int(_ v: Int?) { if let v { ByteFormat.appendInt(Int64(v), to: &line) } }

        var header = piece.hasHeader
        var lastSite: [UInt8] = []
        // The site of the run of rows (a row that names its site keeps it in the rows written).
        var lastSiteText = "", lastSiteField: [UInt8] = []
        try CSVReader.scan(piece.bytes, file: piece.file) { row in
            if header { header = false; return true }
            var ownSite = false
            if let cs = c.site, !row.isEmpty(cs) {
                if let filter, !row.withText(cs, { $0.elementsEqual(filter) }) { return true }
                // Rows of one site come in runs: a site is looked up only where the run changes.
                if !row.withText(cs, { $0.elementsEqual(lastSite) }) {
                    let t = row.string(cs); lastSite = Array(t.utf8); out.sites.insert(t)
                    lastSiteText = t; lastSiteField = siteBytes(t)
                }
                ownSite = true
                if out.firstSite == nil {
                    let s = row.string(cs)
                    out.firstSite = s
                    if inForce == nil { inForce = s; siteField = siteBytes(s) }
                }
            }
            out.rows += 1
            let t = try row.requireDouble(c.time, column: "time")
            let a = try row.requireDouble(c.attenuation, column: "attenuation")
            guard Observation.plausibleAttenuation.contains(a) else {
                throw CSVError.badValue(file: piece.file, line: row.line, column: "attenuation",
                                        expected: "dB in \(Format.exact(Observation.plausibleAttenuation.lowerBound))...\(Format.exact(Observation.plausibleAttenuation.upperBound)) (127 and -127 are the 'RSSI not available' value, not a reading)",
                                        actual: row.string(c.attenuation))
            }
            let given = try c.distance.flatMap { try row.double($0, column: "distance") }
            if let given, given < 0 {
                throw CSVError.badValue(file: piece.file, line: row.line, column: "distance", expected: "metres >= 0 or empty", actual: row.string(c.distance!))
            }
            let p = pairIndex(row)
            guard let d = given ?? settings.groundTruth.distance(at: t, pair: pairs[p].names) else { out.withoutGroundTruth += 1; return true }
            let txPower = try c.txPower.flatMap { try row.int($0, column: c.txPowerName) }
            let rssi = try c.rssi.flatMap { try row.int($0, column: "rssi") }
            let correction = try c.rssiCorrection.flatMap { try row.int($0, column: "rssi_correction") }
            out.withGroundTruth += 1
            if pairs[p].part < 0 { pairs[p].part = Int32(out.tally.pairs.count); out.tally.pairs.append(pairs[p].names) }
            let part = pairs[p].part
            out.tally.cells[ObservationTally.Cell(pair: part, distance: d, attenuation: a), default: 0] += 1
            out.tally.distances.append(d); out.tally.attenuations.append(a); out.tally.pairOfRow.append(part)
            if out.tally.wholeDecibels, a != a.rounded() { out.tally.wholeDecibels = false }

            if settings.output == .none { return true }
            // A row written with a site not its own took the one in force before the piece, or
            // (none assumed) the piece's first: both hold only if the guess was right.
            if settings.siteFilter == nil, !ownSite { out.dependsOnSiteBefore = true }
            line.removeAll(keepingCapacity: true)
            switch settings.output {
            case .none: break
            case .csv:
                ByteFormat.appendTime(t, to: &line)
                line.append(0x2C); csvField(row, c.receiver)
                line.append(0x2C); csvField(row, c.transmitter)
                line.append(0x2C); numbers.append(d, to: &line)
                line.append(0x2C); numbers.append(a, to: &line)
                line += ownSite ? lastSiteField : siteField
                line.append(0x2C); if let r = c.rpi { row.withText(r) { line += $0 } }
                line.append(0x2C); int(txPower)
                line.append(0x2C); int(rssi)
                line.append(0x2C); int(correction)
                line.append(0x0A)
            case .jsonLines:
                let rpi = c.rpi.map { row.string($0) }.flatMap { $0.isEmpty ? nil : $0 }
                let o = Observation(time: t, receiver: pairs[p].names.receiver, transmitter: pairs[p].names.transmitter, distance: d,
                                    attenuation: a, rpi: rpi, txPower: txPower, rssi: rssi, rssiCorrection: correction)
                line += TrialReportWriter.attenuationJSONLine(o, site: ownSite ? lastSiteText : inForce).utf8
                line.append(0x0A)
            }
            if settings.daily {
                let key = BucketKey(receiver: pairs[p].receiver, day: Int((t / 86_400).rounded(.down)))
                let b: Int
                if let known = buckets[key] { b = known } else {
                    b = out.daily.count
                    buckets[key] = b
                    out.daily.append(DailyRows(board: pairs[p].names.receiver, time: t))
                }
                out.daily[b].bytes += line
                out.daily[b].rows += 1
            } else {
                out.lines += line
            }
            return true
        }
        return out
    }
}

/// `Format.exact(v)` appended as bytes to a row being built (the attenuation CSV's distance and
/// attenuation, in AttenuationPieceParser and SightingsPieceParser alike): whole values directly,
/// any other value's text made once per distinct value, as the rows repeat few of them.
struct ExactNumberBytes {
    private var texts: [UInt64: [UInt8]] = [:]

    mutating func append(_ v: Double, to line: inout [UInt8]) {
        if v.isFinite, v == v.rounded(), abs(v) < 1e15 { ByteFormat.appendInt(Int64(v), to: &line); return }
        if let b = texts[v.bitPattern] { line += b; return }
        let b = Array(Format.exact(v).utf8)
        texts[v.bitPattern] = b
        line += b
    }
}

/// A file read in pieces of about `pieceSize` bytes, each ending at the end of a row (a newline
/// outside quotes, as CSVReader reads them); a gzip file is inflated whole first.
final class PieceReader {
    let url: URL
    let pieceSize: Int
    private var fd: Int32 = -1
    private var inflated: [UInt8]?
    private var inflatedOffset = 0
    private var pending: [UInt8] = []
    private var atEnd = false

    init(url: URL, pieceSize: Int) throws {
        self.url = url
        self.pieceSize = max(1, pieceSize)
        fd = open(url.path, O_RDONLY | O_CLOEXEC)
        // Foundation's error says what went wrong in the words every other input uses.
        if fd < 0 { _ = try Data(contentsOf: url); throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
        try fill(upTo: 2)
        if Gzip.isGzip(pending) {
            while !atEnd { try fill(upTo: pending.count + (1 << 20)) }
            inflated = try Gzip.inflate(pending, file: url.path)
            pending = []
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Reads until `target` bytes are pending or the file ends.
    private func fill(upTo target: Int) throws {
        if let inflated {
            let n = min(target - pending.count, inflated.count - inflatedOffset)
            if n > 0 { pending += inflated[inflatedOffset..<(inflatedOffset + n)]; inflatedOffset += n }
            return
        }
        while pending.count < target, !atEnd {
            let want = target - pending.count
            let start = pending.count
            pending += repeatElement(0, count: want)
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("read") { pending.withUnsafeMutableBytes { read(fd, $0.baseAddress! + start, want) } }
            } catch {
                pending.removeSubrange(start...)
                _ = try Data(contentsOf: url)
                throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: url.path])
            }
            pending.removeSubrange((start + n)...)
            if n == 0 { atEnd = true }
        }
    }

    /// The next piece; nil at the end of the file.
    func next() throws -> [UInt8]? {
        var target = pieceSize
        while true {
            try fill(upTo: target)
            if pending.count < target { // the file's end
                guard !pending.isEmpty else { return nil }
                defer { pending = [] }
                return pending
            }
            if let cut = Self.lastRowEnd(pending) {
                let piece = Array(pending[..<cut])
                pending.removeSubrange(..<cut)
                return piece
            }
            target = pending.count * 2 // a row longer than a piece
        }
    }

    /// The offset after the last newline that ends a row (not inside a quoted field), or nil.
    static func lastRowEnd(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { b -> Int? in
            let n = b.count
            guard n > 0 else { return nil }
            if memchr(b.baseAddress!, 0x22, n) == nil {
                var i = n - 1
                while i >= 0 { if b[i] == 0x0A { return i + 1 }; i -= 1 }
                return nil
            }
            var lastEnd: Int?
            var fieldStart = true
            var i = 0
            while i < n {
                let ch = b[i]
                if fieldStart, ch == 0x22 {
                    var j = i + 1
                    while true {
                        guard j < n, j + 1 < n || b[j] != 0x22 else { return lastEnd } // open or undecidable here
                        if b[j] == 0x22 {
                            if b[j + 1] == 0x22 { j += 2; continue }
                            break
                        }
                        j += 1
                    }
                    i = j + 1
                    fieldStart = false
                    continue
                }
                if ch == 0x0A { lastEnd = i + 1; fieldStart = true } else { fieldStart = ch == 0x2C }
                i += 1
            }
            return lastEnd
        }
    }
}

/// The workers' results by piece index, taken in order by the merging thread (NSCondition:
/// the merging thread sleeps until its piece is done).
final class PieceResults<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var done: [Int: Result<Value, any Error>] = [:]

    func put(_ index: Int, _ result: Result<Value, any Error>) {
        condition.lock()
        done[index] = result
        condition.broadcast()
        condition.unlock()
    }

    func take(_ index: Int) -> Result<Value, any Error> {
        condition.lock()
        defer { condition.unlock() }
        while done[index] == nil { condition.wait() }
        return done.removeValue(forKey: index)!
    }
}

extension TrialStream {
    /// The calibration tables an attenuation CSV names in its `calibration_table` column (as
    /// `trial import dp3t` writes it), from the file's first piece only: a figure's footer
    /// names them without a second pass over the rows. Empty for files without the column.
    public static func calibrationTables(named url: URL, pieceSize: Int = 1 << 20) -> [String] {
        guard let reader = try? PieceReader(url: url, pieceSize: pieceSize), var bytes = try? reader.next() else { return [] }
        // Up to the last whole line of the piece.
        if let end = bytes.lastIndex(of: 0x0a) { bytes.removeSubrange((end + 1)...) }
        guard let csv = try? CSVReader(bytes: bytes, file: url.path), let c = csv.column("calibration_table") else { return [] }
        var seen: [String] = []
        try? csv.forEachRow { row in
            let t = row.string(c)
            if !t.isEmpty, !seen.contains(t) { seen.append(t) }
        }
        return seen
    }
}
