#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `SightingsFile.parse`'s reader of unquoted CSV (the usual export): rows go from the file's
/// raw bytes straight into compact sightings, with no String per field, no [UInt8] per hex
/// field and no Row in between. It takes only the plain forms the writer produces (decimal
/// times, 32 and 8 hex digits, small integers, `AA:BB:...` addresses, no blanks); any row with
/// another form goes through `validate` as before, so every file is accepted or rejected, and
/// read, exactly as the String path reads it (`SightingsFileTests` compare the two).
extension SightingsFile {
    /// Whether `data` holds a '"' (then CSVRows honours the quoting).
    static func hasQuote(_ data: Data) -> Bool {
        data.withUnsafeBytes { $0.isEmpty ? false : memchr($0.baseAddress!, 0x22, $0.count) != nil }
    }

    /// Reads an unquoted CSV file into `builder`; returns whether it has scan columns.
    static func parseUnquotedCSV(_ data: Data, into builder: inout Builder) throws -> Bool {
        var columns: Columns? = nil
        var line = 0
        var commas: [Int] = []
        var lastNode: (start: Int, count: Int, value: String)? = nil
        var lastScan: (scan: Scan, index: Int32)? = nil
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            let n = raw.count
            var lineStart = 0
            while lineStart < n {
                let nl = memchr(base + lineStart, 0x0a, n - lineStart)
                var lineEnd = nl.map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? n
                let next = lineEnd + 1
                if lineEnd > lineStart && base[lineEnd - 1] == 0x0d { lineEnd -= 1 }
                line += 1
                defer { lineStart = next }
                if lineEnd == lineStart { continue } // blank line
                commas.removeAll(keepingCapacity: true)
                var i = lineStart
                while i < lineEnd, let c = memchr(base + i, 0x2c, lineEnd - i) {
                    let at = UnsafeRawPointer(c) - UnsafeRawPointer(base)
                    commas.append(at)
                    i = at + 1
                }
                // Field k of the line as [start, end).
                func field(_ k: Int) -> (Int, Int) {
                    (k == 0 ? lineStart : commas[k - 1] + 1, k < commas.count ? commas[k] : lineEnd)
                }
                func strings() -> [String] {
                    (0...commas.count).map { k in
                        let (s, e) = field(k)
                        return String(decoding: UnsafeBufferPointer(start: base + s, count: e - s), as: UTF8.self)
                    }
                }
                guard let c = columns else {
                    columns = try Columns(header: strings())
                    continue
                }
                if commas.count + 1 == c.count, let row = plainRow(base, c, field) {
                    var scan: Int32? = nil
                    if let (start, end) = row.scan {
                        var node: String? = nil
                        if let k = c.node {
                            let (s, e) = field(k)
                            if e > s {
                                if let l = lastNode, l.count == e - s, memcmp(base + l.start, base + s, e - s) == 0 {
                                    node = l.value
                                } else {
                                    let v = String(decoding: UnsafeBufferPointer(start: base + s, count: e - s), as: UTF8.self)
                                    lastNode = (s, e - s, v)
                                    node = v
                                }
                            }
                        }
                        // Rows of one scan come together: most rows reuse the last scan's index.
                        let sc = Scan(start: start, end: end, node: node)
                        if let l = lastScan, l.scan == sc {
                            scan = l.index
                        } else {
                            scan = builder.scanIndex(sc)
                            lastScan = (sc, scan!)
                        }
                    }
                    builder.sightings.append(Sighting(time: row.time, rpiLow: row.rpi.0, rpiHigh: row.rpi.1, aemBits: row.aem,
                                                      rssi: row.rssi, rssiCorrection: row.correction, scanIndex: scan, address: row.address))
                } else {
                    // Any other form, or an error: the String path, with its messages.
                    builder.add(try validate(c.row(strings(), line: line)))
                    lastScan = nil
                }
            }
        }
        guard let columns else { throw SightingsFormatError.empty }
        return columns.start != nil
    }

    /// One row in the plain forms, or nil (then the String path reads it).
    struct PlainRow {
        var time: Double
        var scan: (Double, Double)?
        var rpi: (UInt64, UInt64)
        var aem: UInt32
        var rssi: Int8
        var correction: Int8
        var address: UInt64?
    }

    @inline(__always)
    static func plainRow(_ p: UnsafePointer<UInt8>, _ c: Columns, _ field: (Int) -> (Int, Int)) -> PlainRow? {
        let (ts, te) = field(c.time)
        guard let time = decimal(p, ts, te) else { return nil }
        var scan: (Double, Double)? = nil
        if let sc = c.start, let ec = c.end {
            let (ss, se) = field(sc), (es, ee) = field(ec)
            if se > ss || ee > es {
                guard let s = decimal(p, ss, se), let e = decimal(p, es, ee), e >= s else { return nil }
                scan = (s, e)
            }
        }
        var correction = 0
        if let k = c.correction {
            let (s, e) = field(k)
            if e > s {
                guard let v = integer(p, s, e), (-100...100).contains(v) else { return nil }
                correction = v
            }
        }
        let (rs, re) = field(c.rpi), (As, ae) = field(c.aem), (ss, se) = field(c.rssi)
        guard re - rs == 32, ae - As == 8,
              let low = hexWord(p + rs, bytes: 8), let high = hexWord(p + rs + 16, bytes: 8), let aem = hexWord(p + As, bytes: 4),
              let rssi = integer(p, ss, se), (-127...20).contains(rssi)
        else { return nil }
        var address: UInt64? = nil
        if let k = c.address {
            let (s, e) = field(k)
            if e > s {
                guard let a = plainAddress(p + s, count: e - s) else { return nil }
                address = a
            }
        }
        return PlainRow(time: time, scan: scan, rpi: (low, high), aem: UInt32(truncatingIfNeeded: aem), rssi: Int8(rssi),
                        correction: Int8(correction), address: address)
    }

    /// `[0-9]+(\.[0-9]+)?` with at most 15 digits in all, or nil. The digits as one integer
    /// M < 2^53 divided by 10^k (k <= 22; both exact doubles) is correctly rounded (Clinger's
    /// fast path), the same double Double(String) gives.
    @inline(__always)
    static func decimal(_ p: UnsafePointer<UInt8>, _ s: Int, _ e: Int) -> Double? {
        guard e > s, e - s <= 16 else { return nil }
        var m: UInt64 = 0, digits = 0, fraction = -1
        for i in s..<e {
            let b = p[i]
            if b &- 0x30 < 10 {
                m = m &* 10 &+ UInt64(b &- 0x30)
                digits += 1
                if fraction >= 0 { fraction += 1 }
            } else if b == 0x2e, fraction < 0, i > s {
                fraction = 0
            } else {
                return nil
            }
        }
        guard digits <= 15, fraction != 0 else { return nil }
        return fraction > 0 ? Double(m) / powersOfTen[fraction] : Double(m)
    }

    private static let powersOfTen: [Double] = (0...15).map { k in (0..<k).reduce(1.0) { x, _ in x * 10 } }

    /// `-?[0-9]{1,4}`, or nil.
    @inline(__always)
    static func integer(_ p: UnsafePointer<UInt8>, _ s: Int, _ e: Int) -> Int? {
        var i = s, negative = false
        if i < e && p[i] == 0x2d { negative = true; i += 1 }
        guard e > i, e - i <= 4 else { return nil }
        var v = 0
        while i < e {
            let d = p[i] &- 0x30
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
            i += 1
        }
        return negative ? -v : v
    }

    /// `bytes` bytes of hex (either case) as a little-endian word (byte 0 lowest), or nil.
    @inline(__always)
    static func hexWord(_ p: UnsafePointer<UInt8>, bytes: Int) -> UInt64? {
        var w: UInt64 = 0
        for i in 0..<bytes {
            guard let h = hexDigit(p[2 * i]), let l = hexDigit(p[2 * i + 1]) else { return nil }
            w |= UInt64(h << 4 | l) << (8 * UInt64(i))
        }
        return w
    }

    @inline(__always)
    static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }

    /// `hh:hh:hh:hh:hh:hh` (hex in either case, most significant byte first): what
    /// `normalisedAddress` accepts without blanks, as `Sighting.address` keeps it; nil otherwise.
    static func plainAddress(_ p: UnsafePointer<UInt8>, count: Int) -> UInt64? {
        guard count == 17 else { return nil }
        var v: UInt64 = 0
        for i in 0..<17 {
            if i % 3 == 2 {
                if p[i] != 0x3a { return nil }
            } else {
                guard let d = hexDigit(p[i]) else { return nil }
                v = v << 4 | UInt64(d)
            }
        }
        return v
    }
}
