import ENProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TrialFormats

/// One piece of sightings parsed, matched, joined and rendered on a worker thread: what
/// TrialStream.addSightings and AttenuationRowsWriter.append do for its rows.
enum SightingsPieceParser {
    enum Output: Sendable { case none, csv, jsonLines }

    struct Settings: Sendable {
        var table: RPITable
        var names: [String]
        var nameID: [Int32]
        var groundTruth: GroundTruth
        var siteFilter: String?
        var output: Output
        var daily: Bool
    }

    struct Hearing: Sendable { var scan: Int32; var id: Int32; var attenuation: Double }

    struct Result: Sendable {
        /// Rows of the piece as forEachPiece counts them (newlines outside quotes).
        var lines = 0
        var rows = 0, emptyScans = 0, reports = 0, matched = 0, implausible = 0
        var withGroundTruth = 0, withoutGroundTruth = 0
        var firstSite: String?
        var sites: Set<String> = []
        var weakest = -Double.infinity
        var wholeDecibels = true
        /// Every scan of the piece in order of first appearance, what each heard, and every
        /// hearing in order (replayed when a scan began in an earlier piece).
        var scanKeys: [TrialStream.ScanKey] = []
        var heard: [[TrialStream.Heard]] = []
        var hearings: [Hearing] = []
        var tally = ObservationTally.Part()
        /// Attenuation rows rendered (a wrong site guess renders them again).
        var rendered = 0
        var text: [UInt8] = []
        var daily: [AttenuationPieceParser.DailyRows] = []
    }

    static func countLines(_ bytes: [UInt8], quotes: Bool) -> Int {
        bytes.withUnsafeBufferPointer { b in
            guard var p = b.baseAddress.map(UnsafeRawPointer.init) else { return 0 }
            if !quotes || memchr(p, 0x22, b.count) == nil {
                var n = 0
                let end = p + b.count
                while p < end, let hit = memchr(p, 0x0A, end - p) { n += 1; p = UnsafeRawPointer(hit) + 1 }
                return n
            }
            var n = 0, quoted = false
            for x in b { if x == 0x22 { quoted.toggle() } else if x == 0x0A, !quoted { n += 1 } }
            return n
        }
    }

    /// A row reduced to what the report uses: names as indices into the piece's name list, the
    /// RPI as two words (no String or Data per row).
    struct Row {
        var time: Double
        var scanStart: Double? // nil: no scan
        var rpiLow: UInt64 = 0, rpiHigh: UInt64 = 0
        var aem: UInt32 = 0
        var rssi: Int32 = 0
        var correction: Int32 = 0
        var report = false
        var node: Int32 = -1, site: Int32 = -1
    }

    /// The rows and their distinct names.
    struct Rows {
        var rows: [Row] = []
        var names: [String] = []
        var nameIndex: [String: Int32] = [:]
        mutating func name(_ s: String?) -> Int32 {
            guard let s, !s.isEmpty else { return -1 }
            if let i = nameIndex[s] { return i }
            names.append(s); nameIndex[s] = Int32(names.count - 1)
            return Int32(names.count - 1)
        }
    }

    static func parse(_ piece: SightingsPiece, settings: Settings, siteBefore: String?) throws -> Result {
        var out = Result()
        out.lines = countLines(piece.bytes, quotes: !piece.jsonLines)
        // Blank lines only (forEachPiece leaves such a piece out; its lines still count).
        if !piece.first, piece.bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) { return out }
        // The usual export straight from the bytes; anything else it does not take (quotes, blanks
        // around a field, a bad value) goes through ENProtocol's reader, whose errors are the report's.
        var rows: Rows
        if let fast = fastRows(piece) { rows = fast } else {
            rows = Rows()
            for r in try SightingsFile.records(Data(piece.header + piece.bytes)) {
                var row = Row(time: r.time, scanStart: r.scanStart)
                if let rpi = r.rpi, let aem = r.aem, let rssi = r.rssi {
                    let k = RPITable.Key(rpi.bytes)
                    row.rpiLow = k.low; row.rpiHigh = k.high
                    row.aem = aem.bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                    row.rssi = Int32(rssi); row.report = true
                }
                row.correction = Int32(r.rssiCorrection)
                row.node = rows.name(r.node); row.site = rows.name(r.site)
                rows.rows.append(row)
            }
        }
        return try analyse(rows, piece: piece, settings: settings, siteBefore: siteBefore, into: out)
    }

    /// 10^0 ... 10^15, each exact as a Double (5^k < 2^53 for k <= 22).
    static let exactPowersOfTen: [Double] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

    /// A time field as ENProtocol's reader takes it (digits and points, at most 15 characters,
    /// what `Double(String)` reads, finite and not negative), nil otherwise.
    static func decimalSeconds(_ t: UnsafeBufferPointer<UInt8>) -> Double? {
        guard !t.isEmpty, t.count <= 15 else { return nil }
        // Digits with at most one point between digits: at most 15 digits make an integer below
        // 2^53 and a power of ten up to 10^14, both exact as Doubles, so the one division is
        // correctly rounded: the Double strtod gives, without a String (strtod was a tenth of
        // `trial report --sightings`).
        var mantissa: UInt64 = 0, point = -1, plain = true
        for (k, c) in t.enumerated() {
            if c >= 0x30, c <= 0x39 { mantissa = mantissa * 10 + UInt64(c - 0x30) }
            else if c == 0x2E, point < 0, k > 0, k < t.count - 1 { point = k }
            else { plain = false; break }
        }
        if plain { return point < 0 ? Double(mantissa) : Double(mantissa) / exactPowersOfTen[t.count - 1 - point] }
        // Anything else as before: the same acceptance as the reader's.
        guard t.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }) else { return nil }
        guard let v = Double(String(decoding: t, as: UTF8.self)), v.isFinite, v >= 0 else { return nil }
        return v
    }

    /// The rows of a CSV piece without quotes whose every field reads as ENProtocol's reader
    /// reads it (parseUnquotedCSV, validate); nil when any does not.
    static func fastRows(_ piece: SightingsPiece) -> Rows? {
        if piece.jsonLines { return nil }
        let all = piece.header + piece.bytes
        return all.withUnsafeBufferPointer { b -> Rows? in
            guard let base = b.baseAddress, b.count > 0, memchr(base, 0x22, b.count) == nil else { return nil }
            var rows = Rows()
            var columns: [Int] = [] // time, rpi, aem, rssi, scan_start, scan_end, rssi_correction, node, site, address
            var count = 0
            var starts: [Int] = [], ends: [Int] = []
            var lineStart = 0
            func text(_ f: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: b[starts[f]..<ends[f]]) }
            func blank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }
            func hex(_ c: UInt8) -> UInt64? {
                switch c {
                case 0x30...0x39: return UInt64(c - 0x30)
                case 0x61...0x66: return UInt64(c - 0x61 + 10)
                default: return nil
                }
            }
            func int(_ t: UnsafeBufferPointer<UInt8>) -> Int? {
                guard !t.isEmpty, t.count <= 6 else { return nil }
                var i = 0, neg = false, v = 0
                if t[0] == 0x2D { neg = true; i = 1 } else if t[0] == 0x2B { i = 1 }
                guard i < t.count else { return nil }
                while i < t.count { guard t[i] >= 0x30, t[i] <= 0x39 else { return nil }; v = v * 10 + Int(t[i] - 0x30); i += 1 }
                return neg ? -v : v
            }
            func seconds(_ t: UnsafeBufferPointer<UInt8>) -> Double? { decimalSeconds(t) }
            // The node and site columns: the last name each held (rows of a file repeat them).
            var lastNames: [(bytes: [UInt8], index: Int32)] = [([], -1), ([], -1)]
            func name(_ column: Int, slot: Int) -> Int32 {
                let t = text(column)
                if t.isEmpty { return -1 }
                if lastNames[slot].index >= 0, lastNames[slot].bytes.elementsEqual(t) { return lastNames[slot].index }
                let i = rows.name(String(decoding: t, as: UTF8.self))
                lastNames[slot] = (Array(t), i)
                return i
            }
            while lineStart < b.count {
                var lineEnd = lineStart
                if let hit = memchr(base + lineStart, 0x0A, b.count - lineStart) {
                    lineEnd = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - base
                } else { lineEnd = b.count }
                let next = lineEnd + 1
                if lineEnd > lineStart, b[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                defer { lineStart = next }
                if lineEnd == lineStart { continue }
                starts.removeAll(keepingCapacity: true); ends.removeAll(keepingCapacity: true)
                var fs = lineStart
                var i = lineStart
                while i < lineEnd {
                    if b[i] == 0x2C { starts.append(fs); ends.append(i); fs = i + 1 }
                    i += 1
                }
                starts.append(fs); ends.append(lineEnd)
                if columns.isEmpty {
                    var names: [String] = []
                    for f in 0..<starts.count {
                        let t = text(f)
                        if let c = t.first, blank(c) { return nil }
                        if let c = t.last, blank(c) { return nil }
                        names.append(String(decoding: t, as: UTF8.self))
                    }
                    func col(_ n: String) -> Int { names.firstIndex(of: n) ?? -1 }
                    columns = ["time", "rpi", "aem", "rssi", "scan_start", "scan_end", "rssi_correction", "node", "site", "address"].map(col)
                    if columns[0...3].contains(-1) || (columns[4] < 0) != (columns[5] < 0) { return nil }
                    count = names.count
                    continue
                }
                guard starts.count == count else { return nil }
                guard let time = seconds(text(columns[0])) else { return nil }
                var row = Row(time: time, scanStart: nil)
                if columns[4] >= 0 {
                    let s = text(columns[4]), e = text(columns[5])
                    if !(s.isEmpty && e.isEmpty) {
                        guard let start = seconds(s), let end = seconds(e), end >= start else { return nil }
                        row.scanStart = start
                    }
                }
                if columns[6] >= 0, !text(columns[6]).isEmpty {
                    guard let c = int(text(columns[6])), (-100...100).contains(c) else { return nil }
                    row.correction = Int32(c)
                }
                let rpi = text(columns[1]), aem = text(columns[2]), rssi = text(columns[3])
                let address = columns[9] >= 0 ? text(columns[9]) : UnsafeBufferPointer(rebasing: b[0..<0])
                if rpi.isEmpty {
                    guard aem.isEmpty, rssi.isEmpty, address.isEmpty else { return nil }
                } else {
                    guard rpi.count == 32, aem.count == 8 else { return nil }
                    func word(_ w: Int) -> UInt64? {
                        var v: UInt64 = 0
                        for k in 0..<8 { // little-endian words, as RPITable.Key loads the bytes
                            guard let hi = hex(rpi[w * 16 + 2 * k]), let lo = hex(rpi[w * 16 + 2 * k + 1]) else { return nil }
                            v |= (hi << 4 | lo) << (8 * UInt64(k))
                        }
                        return v
                    }
                    guard let low = word(0), let high = word(1) else { return nil }
                    var a: UInt32 = 0
                    for k in 0..<4 {
                        guard let hi = hex(aem[2 * k] | 0x20), let lo = hex(aem[2 * k + 1] | 0x20) else { return nil }
                        a |= UInt32(hi << 4 | lo) << (8 * UInt32(k))
                    }
                    guard let r = int(rssi), (-127...20).contains(r) else { return nil }
                    // The address is not used, but a bad one is the reader's error.
                    if !address.isEmpty {
                        guard address.count == 17 else { return nil }
                        for k in 0..<17 {
                            if k % 3 == 2 { guard address[k] == 0x3A else { return nil } } else {
                                guard hex(address[k] | 0x20) != nil else { return nil }
                            }
                        }
                    }
                    row.rpiLow = low; row.rpiHigh = high; row.aem = a; row.rssi = Int32(r); row.report = true
                }
                if columns[7] >= 0 { row.node = name(columns[7], slot: 0) }
                if columns[8] >= 0 { row.site = name(columns[8], slot: 1) }
                rows.rows.append(row)
            }
            return columns.isEmpty ? nil : rows
        }
    }

    static func analyse(_ input: Rows, piece: SightingsPiece, settings: Settings, siteBefore: String?, into result: Result) throws -> Result {
        var out = result
        var names = input.names
        // Rows without a node take the file's receiver; with a site filter, other sites' rows go.
        var receiver: Int32 = -1
        if let r = piece.receiver {
            if let i = names.firstIndex(of: r) { receiver = Int32(i) } else { names.append(r); receiver = Int32(names.count - 1) }
        }
        let filter: Int32? = settings.siteFilter.map { f in names.firstIndex(of: f).map(Int32.init) ?? -2 }
        var rows = input.rows
        if filter != nil || receiver >= 0 {
            rows = []
            rows.reserveCapacity(input.rows.count)
            for var r in input.rows {
                if let filter, r.site >= 0, r.site != filter { continue }
                if r.node < 0 { r.node = receiver }
                rows.append(r)
            }
        }
        func text(_ i: Int32) -> String? { i < 0 ? nil : names[Int(i)] }
        out.firstSite = rows.first(where: { $0.site >= 0 }).map { names[Int($0.site)] }
        let site = siteBefore ?? out.firstSite
        var last: Int32 = -1
        for r in rows where r.site >= 0 && r.site != last { last = r.site; out.sites.insert(names[Int(r.site)]) }
        out.rows = rows.count
        struct ScanID: Hashable { var node: Int32; var start: Double }
        var scanIndex: [ScanID: Int32] = [:]
        // Each row's scan (-1: none), found once here; a scan's rows come together, so the
        // last one found is tried first.
        var scanOfRow = [Int32](repeating: -1, count: rows.count)
        var lastScan: (id: ScanID, index: Int32)?
        for (n, r) in rows.enumerated() {
            if r.report { out.reports += 1 } else { out.emptyScans += 1 }
            if let start = r.scanStart {
                let k = ScanID(node: r.node, start: start)
                if let lastScan, lastScan.id == k { scanOfRow[n] = lastScan.index; continue }
                let index: Int32
                if let known = scanIndex[k] { index = known } else {
                    index = Int32(out.scanKeys.count)
                    scanIndex[k] = index
                    out.scanKeys.append(TrialStream.ScanKey(node: text(r.node) ?? "", start: start)); out.heard.append([])
                }
                scanOfRow[n] = index
                lastScan = (k, index)
            }
        }
        // Each row's site field: the sighting's own site (a pooled report's rows keep theirs),
        // else the site in force; rendered again only where the run of one site changes.
        var fieldSite: Int32 = .min, field: [UInt8] = []
        func siteField(_ i: Int32) -> [UInt8] {
            if i != fieldSite {
                fieldSite = i
                field = Array(("," + CSVWriter.escape((i >= 0 ? names[Int(i)] : site) ?? "")).utf8)
            }
            return field
        }
        struct CacheKey: Hashable { var low: UInt64, high: UInt64, aem: UInt32 }
        var cache: [CacheKey: BluetoothMetadata] = [:]
        // Per (receiver, transmitter) pair met in the piece: its names, its ground truth, its
        // index in the tally and its rendered names, found by index, not by hashing names per row.
        struct PairSlot {
            var pair: NodePair
            var timeline: GroundTruth.Timeline
            var part: Int32 = -1 // its index in the tally, once it has a row with ground truth
            var prefix: [UInt8]
            var receiver: Int32 // its receiver's index among the piece's daily buckets
        }
        var slots: [PairSlot] = []
        let transmitterCount = settings.names.count
        // A row of slots per receiver that matched (-1: pair not met yet), allocated when it
        // first matches, so memory follows the matched receivers, not every name in the piece;
        // rowOf[node + 1] is where its row starts in slotOf (node -1 is "no node").
        var rowOf = [Int32](repeating: -1, count: names.count + 1)
        var slotOf: [Int32] = []
        var pairIndex: [NodePair: Int32] = [:]
        var buckets: [AttenuationPieceParser.BucketKey: Int] = [:]
        var lastBucket: (key: AttenuationPieceParser.BucketKey, index: Int)?
        var receivers: [String: Int32] = [:]
        var numbers = ExactNumberBytes()
        var line: [UInt8] = []
        line.reserveCapacity(256)
        let digits = Array("0123456789abcdef".utf8)
        let tolerance = Int64(settings.table.tolerance)
        for (n, r) in rows.enumerated() where r.report {
            guard let e = settings.table.table[RPITable.Key(low: r.rpiLow, high: r.rpiHigh)] else { continue }
            let i = Int64(ENIntervalNumber(unixSeconds: r.time).rawValue)
            guard abs(i - Int64(e.interval)) <= tolerance else { continue }
            let ck = CacheKey(low: r.rpiLow, high: r.rpiHigh, aem: r.aem)
            let md: BluetoothMetadata
            if let m = cache[ck] { md = m } else {
                let rpi = try RollingProximityIdentifier(bytes: withUnsafeBytes(of: (r.rpiLow, r.rpiHigh)) { Data($0) })
                let aem = try AssociatedEncryptedMetadata(bytes: withUnsafeBytes(of: r.aem) { Data($0) })
                md = try GAENKeySchedule.decryptMetadata(aem, rpi: rpi, aemk: settings.table.keys[e.key].aemk)
                cache[ck] = md
            }
            guard BluetoothMetadata.plausibleTxPower.contains(Int(md.txPower)) else { out.implausible += 1; continue }
            out.matched += 1
            // As ProjectMatcher: TX power - (the row's RSSI + its correction).
            let attenuation = Double(Int(md.txPower)) - Double(Int(r.rssi) + Int(r.correction))
            out.weakest = max(out.weakest, attenuation)
            if attenuation != attenuation.rounded() { out.wholeDecibels = false }
            if r.scanStart != nil {
                let si = scanOfRow[n], id = settings.nameID[e.transmitter]
                out.hearings.append(Hearing(scan: si, id: id, attenuation: attenuation))
                if let h = out.heard[Int(si)].firstIndex(where: { $0.id == id }) {
                    out.heard[Int(si)][h].sum += attenuation; out.heard[Int(si)][h].count += 1
                } else {
                    out.heard[Int(si)].append(TrialStream.Heard(id: id, sum: attenuation, count: 1))
                }
            }
            if rowOf[Int(r.node + 1)] < 0 {
                rowOf[Int(r.node + 1)] = Int32(slotOf.count)
                slotOf.append(contentsOf: repeatElement(-1, count: transmitterCount))
            }
            let at = Int(rowOf[Int(r.node + 1)]) + e.transmitter
            if slotOf[at] < 0 {
                let pair = NodePair(receiver: text(r.node) ?? "", transmitter: settings.names[e.transmitter])
                let rx: Int32
                if let known = receivers[pair.receiver] { rx = known } else { rx = Int32(receivers.count); receivers[pair.receiver] = rx }
                slotOf[at] = Int32(slots.count)
                slots.append(PairSlot(pair: pair, timeline: settings.groundTruth.timeline(for: pair),
                                      prefix: Array(("," + CSVWriter.escape(pair.receiver) + "," + CSVWriter.escape(pair.transmitter) + ",").utf8),
                                      receiver: rx))
            }
            let slot = Int(slotOf[at])
            let pair = slots[slot].pair
            guard let d = slots[slot].timeline.distance(at: r.time) else { out.withoutGroundTruth += 1; continue }
            out.withGroundTruth += 1
            if slots[slot].part < 0 {
                if let known = pairIndex[pair] { slots[slot].part = known } else {
                    slots[slot].part = Int32(out.tally.pairs.count); pairIndex[pair] = slots[slot].part; out.tally.pairs.append(pair)
                }
            }
            let p = slots[slot].part
            out.tally.cells[ObservationTally.Cell(pair: p, distance: d, attenuation: attenuation), default: 0] += 1
            out.tally.distances.append(d); out.tally.attenuations.append(attenuation); out.tally.pairOfRow.append(p)
            if out.tally.wholeDecibels, attenuation != attenuation.rounded() { out.tally.wholeDecibels = false }
            if settings.output == .none { continue }
            line.removeAll(keepingCapacity: true)
            if settings.output == .jsonLines {
                let rpi = withUnsafeBytes(of: (r.rpiLow, r.rpiHigh)) { Data($0) }.hexString
                let o = Observation(time: r.time, receiver: pair.receiver, transmitter: pair.transmitter, distance: d, attenuation: attenuation,
                                    rpi: rpi, txPower: Int(md.txPower), rssi: Int(r.rssi), rssiCorrection: Int(r.correction))
                line += TrialReportWriter.attenuationJSONLine(o, site: r.site >= 0 ? names[Int(r.site)] : site).utf8
            } else {
                // TrialReportWriter.attenuationLine, as bytes.
                ByteFormat.appendTime(r.time, to: &line)
                line += slots[slot].prefix
                numbers.append(d, to: &line); line.append(0x2C); numbers.append(attenuation, to: &line)
                line += siteField(r.site)
                line.append(0x2C)
                // The RPI's 32 hex digits in one append.
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { text in
                    for k in 0..<16 {
                        let byte = Int(((k < 8 ? r.rpiLow : r.rpiHigh) >> (8 * UInt64(k % 8))) & 0xff)
                        text[2 * k] = digits[byte >> 4]; text[2 * k + 1] = digits[byte & 15]
                    }
                    line.append(contentsOf: UnsafeBufferPointer(text))
                }
                line.append(0x2C); ByteFormat.appendInt(Int64(md.txPower), to: &line)
                line.append(0x2C); ByteFormat.appendInt(Int64(r.rssi), to: &line)
                line.append(0x2C); ByteFormat.appendInt(Int64(r.correction), to: &line)
            }
            line.append(0x0A)
            out.rendered += 1
            if settings.daily {
                let key = AttenuationPieceParser.BucketKey(receiver: slots[slot].receiver, day: Int((r.time / 86_400).rounded(.down)))
                let b: Int
                if let lastBucket, lastBucket.key == key { b = lastBucket.index }
                else if let known = buckets[key] { b = known } else {
                    b = out.daily.count
                    buckets[key] = b
                    out.daily.append(AttenuationPieceParser.DailyRows(board: pair.receiver, time: r.time))
                }
                lastBucket = (key, b)
                out.daily[b].bytes += line
                out.daily[b].rows += 1
            } else {
                out.text += line
            }
        }
        return out
    }
}

