/// A date of the proleptic Gregorian calendar (year, month 1...12, day 1...31) and its day
/// number, days since 1970-01-01. The conversions are Howard Hinnant's days_from_civil and
/// civil_from_days (public-domain algorithms): exact for every day, negative years included,
/// with no calendar tables and no time-zone data.
public struct CivilDate: Hashable, Sendable {
    public var year: Int64
    public var month: Int64
    public var day: Int64

    public init(year: Int64, month: Int64, day: Int64) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date of day number `days` (days since 1970-01-01).
    public init(daysSinceEpoch days: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// The day number (days since 1970-01-01). A day past its month's end counts on into the
    /// next month (2021-02-30 is 2021-03-02's number): `isValid` tells them apart.
    public var daysSinceEpoch: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Whether this is a real day of its month (not 2021-02-30, not month 13).
    public var isValid: Bool {
        (1...12).contains(month) && (1...31).contains(day) && CivilDate(daysSinceEpoch: daysSinceEpoch) == self
    }

    /// The date of a Unix time, UTC (a negative time's fraction counts toward the past).
    public init(unixSeconds: Double) {
        self.init(daysSinceEpoch: Int64((unixSeconds / 86_400).rounded(.down)))
    }
}
