import ENProtocol
import Foundation

/// Times as users type them and datasets log them: Unix seconds (`1700000000`, `1700000000.25`)
/// or ISO 8601 (`2026-11-20T08:00:00Z`, with fractional seconds, with an offset such as `+01:00`
/// or `+0100`, `T` or a space between date and time, or a bare date `2026-11-20`, meaning its
/// midnight UTC). A date and time without a zone (`2020-05-11 12:40:06.223`, as many logs write
/// them) is read in the zone given (`zone:`; gaenctl's `--timezone`) and refused without one:
/// guessing UTC or the machine's zone would shift every row silently. Every gaenctl option and
/// importer that takes a time reads it through here, so they all accept the same forms.
///
/// Parsed by hand from the bytes: a formatter object per row cost ~300 µs, 110 s for a 350k-row
/// table.
public enum TimeInput {
    public struct Invalid: Error, CustomStringConvertible {
        public let text: String
        /// The text was a date and time without a zone and no zone was given.
        public let zoneless: Bool

        public init(text: String, zoneless: Bool = false) { self.text = text; self.zoneless = zoneless }

        public var description: String {
            if zoneless {
                return "'\(text)' has no time zone: give one (--timezone UTC, --timezone Europe/Zurich, ...) or write it with Z or an offset"
            }
            return "'\(text)' is neither Unix seconds (e.g. 1700000000.5) nor an ISO 8601 time (e.g. 2026-11-20T08:00:00Z, 2026-11-20T09:00:00.25+01:00, 2026-11-20)"
        }
    }

    /// Unix seconds of `text`; zone-less times are read in `zone` (refused when nil).
    public static func parse(_ text: String, zone: TimeZone? = nil) throws -> Double {
        var s = text
        return try s.withUTF8 { buf in
            var z = ZoneCache(zone)
            return try parse(buf, zone: &z, text: text)
        }
    }

    /// A time zone with the offset of the last hour it was asked about remembered: log rows come
    /// in time order, so the zone database is consulted about once an hour of data.
    public struct ZoneCache {
        let zone: TimeZone?
        var hour = Int64.min
        var offset = 0

        public init(_ zone: TimeZone?) { self.zone = zone }

        /// Seconds east of UTC in force at local wall-clock time `local` (seconds since
        /// 1970-01-01 00:00 of that wall clock).
        mutating func offset(atLocal local: Int64) -> Int? {
            guard let zone else { return nil }
            let h = local >= 0 ? local / 3600 : (local - 3599) / 3600
            if h == hour { return offset }
            // Two passes settle the offset across a change (the second uses the UTC instant the first gives).
            let first = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local)))
            let second = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local - Int64(first))))
            hour = h; offset = second
            return second
        }
    }

    /// The byte-level parser the CSV importers call per row (no String, no formatter).
    public static func parse(_ b: UnsafeBufferPointer<UInt8>, zone: inout ZoneCache, text: @autoclosure () -> String) throws -> Double {
        var start = 0, end = b.count
        while start < end, b[start] == 0x20 || b[start] == 0x09 { start += 1 }
        while end > start, b[end - 1] == 0x20 || b[end - 1] == 0x09 { end -= 1 }
        guard start < end else { throw Invalid(text: text()) }
        if let v = number(b, start, end) { return v }
        guard let v = try iso(b, start, end, zone: &zone) else { throw Invalid(text: text()) }
        return v
    }

    /// [+-]digits[.digits]: Unix seconds. Exponents are refused (1e9 is a typo more often than a time).
    static func number(_ b: UnsafeBufferPointer<UInt8>, _ s: Int, _ e: Int) -> Double? {
        var i = s
        if b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
        var digits = 0, dots = 0
        while i < e {
            let c = b[i]
            if c >= 0x30 && c <= 0x39 { digits += 1 } else if c == UInt8(ascii: ".") { dots += 1 } else { return nil }
            i += 1
        }
        guard digits > 0, dots <= 1 else { return nil }
        let str = String(decoding: UnsafeBufferPointer(rebasing: b[s..<e]), as: UTF8.self)
        guard let v = Double(str), v.isFinite else { return nil }
        return v
    }

    static func digits(_ b: UnsafeBufferPointer<UInt8>, _ i: Int, _ n: Int, _ e: Int) -> Int? {
        guard i + n <= e else { return nil }
        var v = 0
        for k in i..<(i + n) {
            let c = b[k]
            guard c >= 0x30 && c <= 0x39 else { return nil }
            v = v * 10 + Int(c - 0x30)
        }
        return v
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    static func days(year: Int, month: Int, day: Int) -> Int64 {
        CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)).daysSinceEpoch
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func iso(_ b: UnsafeBufferPointer<UInt8>, _ s: Int, _ e: Int, zone: inout ZoneCache) throws -> Double? {
        guard let year = digits(b, s, 4, e), s + 4 < e, b[s + 4] == UInt8(ascii: "-"),
              let month = digits(b, s + 5, 2, e), s + 7 < e, b[s + 7] == UInt8(ascii: "-"),
              let day = digits(b, s + 8, 2, e),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        let date = days(year: year, month: month, day: day) * 86_400
        var i = s + 10
        // A bare date: its midnight UTC (a day, not an instant of a log).
        if i == e { return Double(date) }
        guard b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == 0x20 else { return nil }
        i += 1
        guard let hh = digits(b, i, 2, e), i + 2 < e, b[i + 2] == UInt8(ascii: ":"), let mm = digits(b, i + 3, 2, e),
              hh <= 23, mm <= 59 else { return nil }
        i += 5
        var ss = 0
        // The fraction as an integer of `fractionDigits` digits (up to 9; more are dropped).
        var fraction: Int64 = 0
        var fractionDigits = 0
        if i < e, b[i] == UInt8(ascii: ":") {
            guard let v = digits(b, i + 1, 2, e), v <= 60 else { return nil }
            ss = v
            i += 3
            if i < e, b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",") {
                i += 1
                var any = false
                while i < e, b[i] >= 0x30, b[i] <= 0x39 {
                    if fractionDigits < 9 { fraction = fraction * 10 + Int64(b[i] - 0x30); fractionDigits += 1 }
                    any = true; i += 1
                }
                guard any else { return nil }
            }
        }
        let local = date + Int64(hh * 3600 + mm * 60 + ss)
        // The zone: Z, +HH:MM, +HHMM, +HH, or none.
        let offset: Int
        if i == e {
            guard let o = zone.offset(atLocal: local) else {
                throw Invalid(text: String(decoding: UnsafeBufferPointer(rebasing: b[s..<e]), as: UTF8.self), zoneless: true)
            }
            offset = o
        } else if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            guard i + 1 == e else { return nil }
            offset = 0
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            guard let oh = digits(b, i + 1, 2, e), oh <= 23 else { return nil }
            var j = i + 3
            var om = 0
            if j < e {
                if b[j] == UInt8(ascii: ":") { j += 1 }
                guard let v = digits(b, j, 2, e), v <= 59, j + 2 == e else { return nil }
                om = v
            }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        let whole = local - Int64(offset)
        guard fractionDigits > 0 else { return Double(whole) }
        // One division of exact integers: the double nearest the decimal, as Double("…") gives.
        let scale = pow10[fractionDigits]
        let scaled = whole.multipliedReportingOverflow(by: scale)
        if !scaled.overflow, abs(scaled.partialValue) < 1 << 53 {
            return Double(scaled.partialValue + fraction) / Double(scale)
        }
        return Double(whole) + Double(fraction) / Double(scale)
    }

    static let pow10: [Int64] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000]
}
