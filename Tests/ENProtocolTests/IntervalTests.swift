import Foundation
import Testing
@testable import ENProtocol

@Suite struct IntervalTests {
    @Test func intervalOfVectorKeyGenerationTime() {
        // Vector file: key generated at 2020-04-02T00:00:00Z = 1585785600 -> ENIN 2642976.
        let i = ENIntervalNumber(unixSeconds: Int64(1_585_785_600))
        #expect(i.rawValue == 2_642_976)
        #expect(i.dayStart == i)
        #expect(i.advanced(by: 143).dayStart == i)
        #expect(i.advanced(by: 144).dayStart == i.advanced(by: 144))
        #expect(i.utcDay.isoDate == "2020-04-02")
        #expect(i.littleEndianBytes == [0x20, 0x54, 0x28, 0x00])
    }

    @Test func fractionalAndNegativeSecondsFloor() {
        #expect(ENIntervalNumber(unixSeconds: 599.999).rawValue == 0)
        #expect(ENIntervalNumber(unixSeconds: 600.0).rawValue == 1)
        #expect(ENIntervalNumber(unixSeconds: Int64(-1)).rawValue == 0) // clamped: no negative intervals
    }

    @Test func isoDatesRoundTripAndRejectImpossibleDates() {
        for raw: Int32 in [-1, 0, 18_354, 19_000, 20_000, 60_000] {
            let d = UTCDay(raw)
            #expect(UTCDay(isoDate: d.isoDate) == d)
        }
        #expect(UTCDay(0).isoDate == "1970-01-01")
        #expect(UTCDay(isoDate: "2021-02-29") == nil)
        #expect(UTCDay(isoDate: "2020-02-29")?.isoDate == "2020-02-29")
        #expect(UTCDay(isoDate: "2020-13-01") == nil)
        #expect(UTCDay(isoDate: "20-01-01") == nil)
    }
}
