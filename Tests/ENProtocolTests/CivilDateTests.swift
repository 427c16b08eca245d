import ENProtocol
import Foundation
import Testing

/// The one civil-date conversion (UTCDay, the daily export layout, `gaenctl collect`, time
/// input) against the system's Gregorian calendar, and at the edges where the algorithm's
/// arithmetic changes (before the epoch, century and 400-year leap days).
@Suite struct CivilDateTests {
    static let gregorian: Calendar = {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "UTC")!
        return c
    }()

    @Test func roundTripsEveryDayAgainstTheSystemCalendar() {
        // Every day from 1900 to 2200 (and a day number for each), in both directions.
        for days in Int64(-25_567)...Int64(84_000) {
            let date = CivilDate(daysSinceEpoch: days)
            let c = Self.gregorian.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(days) * 86_400))
            #expect(date == CivilDate(year: Int64(c.year!), month: Int64(c.month!), day: Int64(c.day!)), "day \(days)")
            #expect(date.daysSinceEpoch == days)
            #expect(date.isValid)
        }
    }

    @Test func edges() {
        #expect(CivilDate(daysSinceEpoch: 0) == CivilDate(year: 1970, month: 1, day: 1))
        #expect(CivilDate(daysSinceEpoch: -1) == CivilDate(year: 1969, month: 12, day: 31))
        #expect(CivilDate(year: 2000, month: 2, day: 29).isValid) // divisible by 400
        #expect(!CivilDate(year: 2100, month: 2, day: 29).isValid) // divisible by 100 only
        #expect(!CivilDate(year: 2021, month: 2, day: 30).isValid)
        #expect(!CivilDate(year: 2021, month: 13, day: 1).isValid)
        #expect(CivilDate(year: 2021, month: 2, day: 30).daysSinceEpoch == CivilDate(year: 2021, month: 3, day: 2).daysSinceEpoch)
        #expect(CivilDate(year: 0, month: 3, day: 1).daysSinceEpoch == -719_468) // the algorithm's own origin
        #expect(CivilDate(unixSeconds: -0.001) == CivilDate(year: 1969, month: 12, day: 31))
        #expect(CivilDate(unixSeconds: 86_399.999) == CivilDate(year: 1970, month: 1, day: 1))
        #expect(UTCDay(isoDate: "2020-04-02")?.isoDate == "2020-04-02")
        #expect(UTCDay(isoDate: "2021-02-29") == nil)
    }
}
