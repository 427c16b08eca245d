#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// Why a CSV file could not be read.
public enum CSVError: Error, Equatable, CustomStringConvertible {
    case empty(file: String)
    case missingColumn(file: String, column: String, header: [String])
    case badValue(file: String, line: Int, column: String, expected: String, actual: String)
    case unterminatedQuote(file: String, line: Int)

    public var description: String {
        switch self {
        case .empty(let f): return "\(f): empty file, expected a header line"
        case .missingColumn(let f, let c, let h):
            return "\(f): no column '\(c)' in the header (found: \(h.joined(separator: ",")))"
        case .badValue(let f, let l, let c, let e, let a):
            return "\(f):\(l): column '\(c)' expected \(e), got '\(a)'"
        case .unterminatedQuote(let f, let l): return "\(f):\(l): quoted field never closed"
        }
    }
}

/// A minimal RFC 4180 reader over raw bytes (quotes, doubled quotes, CRLF or LF).
/// Written here rather than using a CSV package because the trial benchmark reads about a
/// million rows and wants numbers parsed straight from the bytes, without a String per field.
public struct CSVReader {
    public let file: String
    package let bytes: [UInt8]
    public private(set) var header: [String] = []
    private var columnIndex: [String: Int] = [:]

    public init(bytes: [UInt8], file: String) throws {
        self.file = file
        self.bytes = bytes
        var headerFields: [String] = []
        var found = false
        try Self.scan(bytes, file: file) { row in
            headerFields = (0..<row.count).map { row.string($0).trimmingWhitespaces() }
            found = true
            return false
        }
        guard found else { throw CSVError.empty(file: file) }
        header = headerFields
        for (i, name) in headerFields.enumerated() where columnIndex[name] == nil { columnIndex[name] = i }
    }

    /// The file's rows; a gzip file (`.csv.gz`) is inflated first.
    public init(contentsOf url: URL) throws {
        try self.init(bytes: try Gzip.contents(of: url), file: url.path)
    }

    public func column(_ name: String) -> Int? { columnIndex[name] }

    public func requireColumn(_ name: String) throws -> Int {
        guard let i = columnIndex[name] else { throw CSVError.missingColumn(file: file, column: name, header: header) }
        return i
    }

    /// Calls `body` for every data row (the header skipped, blank lines skipped).
    public func forEachRow(_ body: (CSVRow) throws -> Void) throws {
        var first = true
        try Self.scan(bytes, file: file) { row in
            if first { first = false; return true }
            try body(row)
            return true
        }
    }

    /// The tokenizer: fields as byte ranges, unescaped only when a caller asks for a String.
    /// Lines are counted from 1 at the start of `bytes` (a piece of a file counts from its start).
    package static func scan(_ bytes: [UInt8], file: String, _ body: (CSVRow) throws -> Bool) throws {
        try bytes.withUnsafeBufferPointer { buf in
            var row = CSVRow(buffer: buf, file: file)
            var i = 0
            let n = buf.count
            var line = 1
            while i < n {
                row.reset(line: line)
                // One record.
                while true {
                    if i < n, buf[i] == UInt8(ascii: "\"") {
                        let start = i + 1
                        let quoteLine = line
                        var j = start
                        var escaped = false
                        while true {
                            guard j < n else { throw CSVError.unterminatedQuote(file: file, line: quoteLine) }
                            if buf[j] == UInt8(ascii: "\"") {
                                if j + 1 < n, buf[j + 1] == UInt8(ascii: "\"") { escaped = true; j += 2; continue }
                                break
                            }
                            if buf[j] == 0x0A { line += 1 }
                            j += 1
                        }
                        row.append(start, j, quoted: escaped)
                        i = j + 1
                        while i < n, buf[i] != UInt8(ascii: ","), buf[i] != 0x0A { i += 1 }
                    } else {
                        let start = i
                        while i < n, buf[i] != UInt8(ascii: ","), buf[i] != 0x0A { i += 1 }
                        var end = i
                        if end > start, buf[end - 1] == 0x0D { end -= 1 }
                        row.append(start, end, quoted: false)
                    }
                    if i < n, buf[i] == UInt8(ascii: ",") { i += 1; continue }
                    break
                }
                i += 1 // past the newline
                line += 1
                if row.count == 1, row.isEmpty(0) { continue } // blank line
                if try !body(row) { return }
            }
        }
    }
}

/// One CSV record: accessors parse straight from the bytes.
public struct CSVRow {
    let buffer: UnsafeBufferPointer<UInt8>
    let file: String
    private var starts: [Int] = []
    private var ends: [Int] = []
    private var escaped: [Bool] = []
    public private(set) var line = 0

    init(buffer: UnsafeBufferPointer<UInt8>, file: String) {
        self.buffer = buffer
        self.file = file
        starts.reserveCapacity(16); ends.reserveCapacity(16); escaped.reserveCapacity(16)
    }

    mutating func reset(line: Int) {
        self.line = line
        starts.removeAll(keepingCapacity: true); ends.removeAll(keepingCapacity: true); escaped.removeAll(keepingCapacity: true)
    }

    mutating func append(_ start: Int, _ end: Int, quoted: Bool) {
        starts.append(start); ends.append(end); escaped.append(quoted)
    }

    public var count: Int { starts.count }

    public func isEmpty(_ i: Int) -> Bool { i >= count || starts[i] >= ends[i] }

    /// The field's raw bytes (quotes removed, doubled quotes not undone), without a String.
    public func withBytes<R>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        guard i < count else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(rebasing: buffer[starts[i]..<ends[i]]))
    }

    /// Whether the field was quoted with doubled quotes inside (its bytes are not its text).
    func isEscaped(_ i: Int) -> Bool { i < count && escaped[i] }

    /// The field's text as bytes to `body`: the bytes themselves, or the unescaped text's.
    package func withText<R>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        guard isEscaped(i) else { return try withBytes(i, body) }
        var s = string(i)
        return try s.withUTF8(body)
    }

    public func string(_ i: Int) -> String {
        guard i < count else { return "" }
        let s = String(decoding: UnsafeBufferPointer(rebasing: buffer[starts[i]..<ends[i]]), as: UTF8.self)
        return escaped[i] ? s.replacing("\"\"", with: "\"") : s
    }

    /// The field as a Double; nil when empty. Fast path for plain decimals, else Foundation.
    public func double(_ i: Int, column: String) throws -> Double? {
        guard i < count, starts[i] < ends[i] else { return nil }
        if let v = Self.parseDecimal(buffer, starts[i], ends[i]) { return v }
        let s = string(i).trimmingWhitespaces()
        if s.isEmpty { return nil }
        guard let v = Double(s), v.isFinite else {
            throw CSVError.badValue(file: file, line: line, column: column, expected: "a number", actual: s)
        }
        return v
    }

    public func requireDouble(_ i: Int, column: String) throws -> Double {
        guard let v = try double(i, column: column) else {
            throw CSVError.badValue(file: file, line: line, column: column, expected: "a number", actual: "")
        }
        return v
    }

    /// The field as an Int; nil when empty.
    public func int(_ i: Int, column: String) throws -> Int? {
        guard let v = try double(i, column: column) else { return nil }
        guard v == v.rounded(), abs(v) < 1e15 else {
            throw CSVError.badValue(file: file, line: line, column: column, expected: "an integer", actual: string(i))
        }
        return Int(v)
    }

    /// Hex digits decoded into bytes; nil when empty; throws on odd length or a non-hex digit.
    public func hexBytes(_ i: Int, column: String, expectedCount: Int) throws -> Data? {
        guard i < count, starts[i] < ends[i] else { return nil }
        let s = starts[i], e = ends[i]
        guard e - s == expectedCount * 2 else {
            throw CSVError.badValue(file: file, line: line, column: column,
                                    expected: "\(expectedCount * 2) hex digits", actual: string(i))
        }
        var out = [UInt8](repeating: 0, count: expectedCount)
        var ok = true
        for k in 0..<expectedCount {
            guard let hi = Self.hexValue(buffer[s + 2 * k]), let lo = Self.hexValue(buffer[s + 2 * k + 1]) else { ok = false; break }
            out[k] = hi << 4 | lo
        }
        guard ok else {
            throw CSVError.badValue(file: file, line: line, column: column, expected: "hex digits", actual: string(i))
        }
        return Data(out)
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// [-]digits[.digits] exactly; anything else (exponents, spaces, more than 15 significant
    /// digits) returns nil for Foundation's parser. Within 15 digits the mantissa and the power
    /// of ten are exact doubles, so one division gives the correctly rounded value, the same as
    /// Double(String) (an earlier version stopped at 9 decimals: 1.500000000000001 read as 1.5).
    static func parseDecimal(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Double? {
        var i = start
        var negative = false
        if b[i] == UInt8(ascii: "-") { negative = true; i += 1 } else if b[i] == UInt8(ascii: "+") { i += 1 }
        guard i < end else { return nil }
        var mantissa: Int64 = 0
        var digits = 0
        while i < end, b[i] >= 0x30, b[i] <= 0x39 {
            mantissa = mantissa * 10 + Int64(b[i] - 0x30); digits += 1; i += 1
            if digits > 15 { return nil }
        }
        var fracDigits = 0
        if i < end, b[i] == UInt8(ascii: ".") {
            i += 1
            while i < end, b[i] >= 0x30, b[i] <= 0x39 {
                mantissa = mantissa * 10 + Int64(b[i] - 0x30); digits += 1; fracDigits += 1; i += 1
                if digits > 15 { return nil }
            }
        }
        guard i == end, digits > 0 else { return nil }
        let v = fracDigits == 0 ? Double(mantissa) : Double(mantissa) / pow10[fracDigits]
        return negative ? -v : v
    }

    private static let pow10: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]
}

/// Writes CSV text; fields that need it are quoted.
public struct CSVWriter {
    public private(set) var text: String = ""

    public init(header: [String]) {
        text.reserveCapacity(1 << 16)
        appendRow(header)
    }

    public mutating func appendRow(_ fields: [String]) {
        var first = true
        for f in fields {
            if !first { text.append(",") }
            first = false
            text.append(Self.escape(f))
        }
        text.append("\n")
    }

    /// Appends an already formatted line (the caller guarantees no quoting is needed).
    public mutating func appendRaw(_ line: String) {
        text.append(line)
        text.append("\n")
    }

    public static func escape(_ f: String) -> String {
        guard f.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return f }
        return "\"" + f.replacing("\"", with: "\"\"") + "\""
    }

    public func write(to url: URL) throws {
        try OutputFile.write(Data(text.utf8), to: url)
    }
}

/// Number formatting for the CSV and report files: fixed decimals, no locale, "nan" for NaN.
public enum Format {
    public static func fixed(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return v.isNaN ? "" : (v > 0 ? "inf" : "-inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (v * scale).rounded()
        if abs(r) < 9e15 {
            let i = Int64(r)
            let neg = i < 0
            let a = neg ? -i : i
            let s = Int64(scale)
            var out = neg ? "-" : ""
            out += String(a / s)
            if decimals > 0 {
                let f = String(a % s)
                out += "." + String(repeating: "0", count: decimals - f.count) + f
            }
            return out
        }
        return String(v)
    }

    /// The shortest decimal that reads back as exactly `v` (no exponent for the magnitudes of
    /// distances, attenuations and times), so a file the toolkit writes reads back unchanged.
    public static func exact(_ v: Double) -> String {
        guard v.isFinite else { return v.isNaN ? "" : (v > 0 ? "inf" : "-inf") }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

    /// A number computed from input (a product such as 3 ft x 0.3048) without the binary noise
    /// of the arithmetic: rounded to 12 significant digits, far below any measured precision,
    /// then written as the shortest decimal that reads back as that: 0.9144000000000001 is
    /// "0.9144". Numbers read straight from input are unchanged (they already are that shortest
    /// decimal).
    public static func clean(_ v: Double) -> String { exact(cleaned(v)) }

    /// `v` rounded to 12 significant digits (clean).
    public static func cleaned(_ v: Double) -> Double {
        guard v.isFinite, v != 0 else { return v }
        return Double(CFormat.string("%.12g", v)) ?? v
    }

    /// A number for people to read: `significant` significant digits (at least the units),
    /// trailing zeros dropped: 0.5500000000000007 is "0.55", 6.365728552176884 is "6.37", 12.5 is "12.5".
    public static func readable(_ v: Double, significant: Int = 3) -> String {
        guard v.isFinite else { return v.isNaN ? "n/a" : (v > 0 ? "inf" : "-inf") }
        guard v != 0 else { return "0" }
        let magnitude = Int(log10(abs(v)).rounded(.down))
        let decimals = max(0, min(12, significant - 1 - magnitude))
        var s = fixed(v, decimals)
        if s.contains(".") {
            while s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
        }
        return s == "-0" ? "0" : s
    }

    /// Unix seconds with millisecond precision, trailing zeros dropped ("1700000000.25").
    public static func time(_ t: Double) -> String {
        var s = fixed(t, 3)
        if s.contains(".") {
            while s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
        }
        return s
    }
}

/// `Format`'s numbers appended as bytes to a line being built: the simulator and the
/// attenuation files write tens of millions of rows, and building each through Strings (a dozen
/// concatenations and a String per number) took most of their time. Each gives exactly the text
/// of the `Format` function it names (a test compares them).
public enum ByteFormat {
    /// `Format.fixed(v, decimals)`.
    public static func appendFixed(_ v: Double, _ decimals: Int, to out: inout [UInt8]) {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (v * scale).rounded()
        guard v.isFinite, abs(r) < 9e15 else { out += Format.fixed(v, decimals).utf8; return }
        let i = Int64(r)
        if i < 0 { out.append(UInt8(ascii: "-")) }
        let a = i.magnitude, s = UInt64(scale)
        appendUInt(a / s, to: &out)
        guard decimals > 0 else { return }
        out.append(UInt8(ascii: "."))
        // The fraction zero-padded to `decimals` digits.
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: decimals))
        var f = a % s, k = out.count - 1
        while f > 0 { out[k] = UInt8(truncatingIfNeeded: 0x30 + f % 10); f /= 10; k -= 1 }
    }

    /// `Format.time(t)`: milliseconds, trailing zeros dropped.
    public static func appendTime(_ t: Double, to out: inout [UInt8]) {
        let r = (t * 1000).rounded()
        guard t.isFinite, abs(r) < 9e15 else { out += Format.time(t).utf8; return }
        let i = Int64(r)
        if i < 0 { out.append(UInt8(ascii: "-")) }
        let a = i.magnitude
        appendUInt(a / 1000, to: &out)
        let f = a % 1000
        guard f != 0 else { return }
        out.append(UInt8(ascii: "."))
        out.append(UInt8(truncatingIfNeeded: 0x30 + f / 100))
        if f % 100 != 0 { out.append(UInt8(truncatingIfNeeded: 0x30 + f / 10 % 10)) }
        if f % 10 != 0 { out.append(UInt8(truncatingIfNeeded: 0x30 + f % 10)) }
    }

    /// `String(v)`.
    public static func appendInt(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        appendUInt(v.magnitude, to: &out)
    }

    public static func appendUInt(_ v: UInt64, to out: inout [UInt8]) {
        // The digits right to left into a buffer on the stack, then one append: a report renders
        // several numbers per row of millions, and an append per digit was a tenth of its time.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var k = 20, a = v
            repeat { k -= 1; digits[k] = UInt8(truncatingIfNeeded: 0x30 + a % 10); a /= 10 } while a > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[k..<20]))
        }
    }
}

/// Writes output files without Foundation's `Data.write`, which fsyncs every file on Linux:
/// a 50-node simulation writes about 2,500 files and spent 20 s waiting for the disk.
/// Output directories are written fresh, so durability per file is not needed; each file is
/// still renamed into place whole (AtomicOutputFile), so a failed run leaves no half file.
public enum OutputFile {
    public static func write(_ data: Data, to url: URL) throws {
        try AtomicOutputFile.write(data, to: url.path, durable: false)
    }
}
