import Foundation
import Testing

@Suite struct DeriveCommandTests {
    @Test func derivesTheVectorKeyWithAEMs() throws {
        let r = try CLI.run("gaenctl", ["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125",
                                        "--interval", "2642976", "--metadata", "40080000"])
        #expect(r.status == 0, "\(r.stderr)")
        let obj = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(obj["rpik"] as? String == "185ad91db69ec7dd048960f1f3ba6175")
        #expect(obj["aemk"] as? String == "d57c46af7a1d83965b9bed8bd152936a")
        let intervals = try #require(obj["intervals"] as? [[String: Any]])
        #expect(intervals.count == 144)
        #expect(intervals[0]["rpi"] as? String == "8be6cd371c5c891604bfbe49df845096")
        #expect(intervals[0]["aem"] as? String == "72033874")
        #expect(intervals[143]["interval"] as? Int == 2642976 + 143)
    }

    @Test func timeSelectsTheUTCDayAndNoAEMWithoutMetadata() throws {
        let r = try CLI.run("gaenctl", ["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125",
                                        "--time", "2020-04-02T23:59:59Z", "--count", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        let obj = try #require(try CLI.json(r.stdout) as? [String: Any])
        let first = try #require((obj["intervals"] as? [[String: Any]])?.first)
        #expect(first["interval"] as? Int == 2642976)
        #expect(first["aem"] == nil)
    }

    @Test func badInputIsAClearErrorAndNonZeroExit() throws {
        let short = try CLI.run("gaenctl", ["derive", "--tek", "75c7", "--interval", "1"])
        #expect(short.status != 0)
        #expect(short.stderr.contains("16 bytes"))
        let both = try CLI.run("gaenctl", ["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "1", "--time", "2020-04-02T00:00:00Z"])
        #expect(both.status != 0)
        #expect(both.stderr.contains("exactly one of --interval or --time"))
        let badTime = try CLI.run("gaenctl", ["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--time", "yesterday"])
        #expect(badTime.status != 0)
        #expect(badTime.stderr.contains("ISO 8601"))
    }
}
