/// ENIntervalNumber (ENIN): the number of 10-minute intervals since the Unix epoch, UTC.
/// GAEN Cryptography spec v1.2: ENIN = floor(unix_seconds / 600), encoded as LE uint32.
/// Pure: callers pass times in; nothing here reads a clock.
public struct ENIntervalNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// Seconds in one interval (spec: 10 minutes).
    public static let seconds: Int64 = 600
    /// TEKRollingPeriod: intervals a key is valid for (one UTC day).
    public static let perDay: UInt32 = 144

    /// The interval containing `unixSeconds` (fractions and negatives floor toward the past).
    public init(unixSeconds: Double) {
        let n = (unixSeconds / Double(Self.seconds)).rounded(.down)
        self.rawValue = UInt32(clamping: Int64(n))
    }

    public init(unixSeconds: Int64) {
        self.rawValue = UInt32(clamping: unixSeconds >= 0 ? unixSeconds / Self.seconds
                                                          : (unixSeconds - Self.seconds + 1) / Self.seconds)
    }

    /// Start of the interval in Unix seconds.
    public var unixSeconds: Int64 { Int64(rawValue) * Self.seconds }

    /// The rolling start of this interval's UTC day (the ENIN of 00:00 UTC).
    public var dayStart: ENIntervalNumber { ENIntervalNumber(rawValue - rawValue % Self.perDay) }

    /// The UTC day number (days since 1970-01-01) this interval falls in.
    public var utcDay: UTCDay { UTCDay(Int32(rawValue / Self.perDay)) }

    /// Little-endian encoding, as used in PaddedData.
    public var littleEndianBytes: [UInt8] {
        [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8),
         UInt8(truncatingIfNeeded: rawValue >> 16), UInt8(truncatingIfNeeded: rawValue >> 24)]
    }

    public func advanced(by n: Int) -> ENIntervalNumber {
        ENIntervalNumber(UInt32(clamping: Int64(rawValue) + Int64(n)))
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { String(rawValue) }
}

/// A UTC calendar day, as days since 1970-01-01. GAEN dates (exposure dates, summaries,
/// retention) are UTC days everywhere.
public struct UTCDay: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    public init(unixSeconds: Double) {
        self.rawValue = Int32((unixSeconds / 86_400).rounded(.down))
    }

    /// The first interval of the day (the rolling start number of its TEK).
    public var firstInterval: ENIntervalNumber { ENIntervalNumber(UInt32(clamping: Int64(rawValue) * 144)) }
    public var unixSeconds: Int64 { Int64(rawValue) * 86_400 }
    public var millisSinceEpoch: Int64 { unixSeconds * 1000 }

    /// ISO 8601 calendar date, e.g. 2020-04-02 (proleptic Gregorian, civil-from-days).
    public var isoDate: String {
        let date = CivilDate(daysSinceEpoch: Int64(rawValue))
        let (y, m, d) = (date.year, date.month, date.day)
        func pad(_ v: Int64, _ w: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    /// Parses YYYY-MM-DD.
    public init?(isoDate: String) {
        let parts = isoDate.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
              (1...12).contains(m), (1...31).contains(d) else { return nil }
        let date = CivilDate(year: y, month: m, day: d)
        // Reject dates such as 2021-02-30 that normalise to another day.
        guard date.isValid else { return nil }
        self.rawValue = Int32(date.daysSinceEpoch)
    }

    public func advanced(by n: Int) -> UTCDay { UTCDay(rawValue + Int32(n)) }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { isoDate }
}
