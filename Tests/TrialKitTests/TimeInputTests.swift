import Foundation
import Testing
@testable import TrialKit

/// The hand-written time parser: the forms datasets log, zones, and zone-less times refused.
@Suite struct TimeInputTests {
    @Test func zonesAndForms() throws {
        #expect(try TimeInput.parse("2020-05-11T12:40:06.223Z") == 1_589_200_806.223)
        #expect(try TimeInput.parse("2020-05-11 12:40:06.223+00:00") == 1_589_200_806.223)
        #expect(try TimeInput.parse("2020-05-11T14:40:06+0200") == 1_589_200_806)
        #expect(try TimeInput.parse("2020-05-11T08:40:06-04") == 1_589_200_806)
        #expect(try TimeInput.parse("2020-05-11T12:40Z") == 1_589_200_800)
        #expect(try TimeInput.parse("2020-02-29") == 1_582_934_400)
        #expect(try TimeInput.parse("1969-12-31T23:59:59Z") == -1)
        #expect(try TimeInput.parse(" 1589200806.5 ") == 1_589_200_806.5)
        for bad in ["2020-02-30", "2020-13-01", "2020-05-11T25:00Z", "2020-05-11T12:40:06.Z", "2020-05-11T12:40:06Q", "1e9", "12:40", ""] {
            #expect(throws: TimeInput.Invalid.self, "\(bad)") { try TimeInput.parse(bad) }
        }
    }

    @Test func zonelessTimesAreRefusedOrReadInTheZoneGiven() throws {
        do {
            _ = try TimeInput.parse("2020-05-11 12:40:06.223")
            Issue.record("a zone-less time was accepted")
        } catch let e as TimeInput.Invalid {
            #expect(e.zoneless && e.description.contains("no time zone"))
        }
        let zurich = try #require(TimeZone(identifier: "Europe/Zurich"))
        // Summer (UTC+2) and winter (UTC+1), and both sides of the spring change.
        #expect(try TimeInput.parse("2020-05-11 12:40:06.223", zone: zurich) == 1_589_193_606.223)
        #expect(try TimeInput.parse("2020-01-15 12:00:00", zone: zurich) == 1_579_086_000)
        #expect(try TimeInput.parse("2020-03-29 01:59:59", zone: zurich) == 1_585_443_599)
        #expect(try TimeInput.parse("2020-03-29 03:00:00", zone: zurich) == 1_585_443_600)
        // An explicit offset wins over the zone given.
        #expect(try TimeInput.parse("2020-05-11T12:40:06Z", zone: zurich) == 1_589_200_806)
    }

    @Test func theByteParserCachesTheOffsetPerHourWithoutMixingHours() throws {
        let ny = try #require(TimeZone(identifier: "America/New_York"))
        var cache = TimeInput.ZoneCache(ny)
        // Summer time, the day after the autumn change, and the next: each hour gets its own offset.
        let lines = ["2020-10-31 23:30:00", "2020-11-01 03:30:00", "2020-11-02 09:00:00"]
        var out: [Double] = []
        for l in lines {
            var s = l
            out.append(try s.withUTF8 { try TimeInput.parse($0, zone: &cache, text: l) })
        }
        #expect(out == [1_604_201_400, 1_604_219_400, 1_604_325_600])
    }
}
