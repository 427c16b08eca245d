import Testing
@testable import ENProtocol

@Suite("Held time (retention never runs ahead of a time that has held)")
struct HeldTimeTests {
    let w0 = 1_700_000_000.0

    @Test("a steady clock moves the mark with it; a short restart gap is trusted at once")
    func steady() {
        var h = HeldTime(highWater: nil)
        let moved1 = h.observe(wall: w0, monotonic: 10)
        #expect(moved1)
        let moved2 = h.observe(wall: w0 + 5, monotonic: 15)
        #expect(moved2)
        #expect(h.highWater == w0 + 5 && !h.suspect)
        // A restart 6 hours later: a new time line, within the bound.
        var restarted = HeldTime(highWater: h.highWater)
        let moved3 = restarted.observe(wall: w0 + 6 * 3_600, monotonic: 3)
        #expect(moved3)
        #expect(!restarted.suspect && restarted.trustedNow(wall: w0 + 6 * 3_600) == w0 + 6 * 3_600)
    }

    @Test("+40 days is suspect and retention keeps the old time; coming back clears it")
    func forwardAndBack() {
        var h = HeldTime(highWater: nil, confirmation: 3_600)
        _ = h.observe(wall: w0, monotonic: 100)
        let ahead = w0 + 40 * 86_400
        let moved4 = h.observe(wall: ahead, monotonic: 105)
        #expect(!moved4)
        #expect(h.suspect)
        #expect(h.trustedNow(wall: ahead) == w0)
        // Half an hour on the stepped line is not enough.
        let moved5 = h.observe(wall: ahead + 1_800, monotonic: 1_905)
        #expect(!moved5)
        #expect(h.suspect && h.highWater == w0)
        // Back to the true time: trusted at once, the mark never went ahead.
        _ = h.observe(wall: w0 + 1_810, monotonic: 1_910)
        #expect(!h.suspect)
        #expect(h.highWater == w0 + 1_810)
    }

    @Test("a genuine jump that holds for the confirmation time is followed")
    func genuineJump() {
        var h = HeldTime(highWater: w0, confirmation: 3_600)
        let ahead = w0 + 40 * 86_400
        _ = h.observe(wall: ahead, monotonic: 0)
        #expect(h.suspect)
        let moved6 = h.observe(wall: ahead + 3_599, monotonic: 3_599)
        #expect(!moved6)
        let moved7 = h.observe(wall: ahead + 3_600, monotonic: 3_600)
        #expect(moved7)
        #expect(!h.suspect && h.trustedNow(wall: ahead + 3_600) == ahead + 3_600)
    }

    @Test("a step back never lowers the mark; a second jump ahead restarts the confirmation")
    func backwardAndRepeated() {
        var h = HeldTime(highWater: nil, confirmation: 600)
        _ = h.observe(wall: w0, monotonic: 0)
        _ = h.observe(wall: w0 - 86_400, monotonic: 10)
        #expect(h.highWater == w0 && !h.suspect)
        #expect(h.trustedNow(wall: w0 - 86_400) == w0 - 86_400)
        _ = h.observe(wall: w0 + 10 * 86_400, monotonic: 20)
        _ = h.observe(wall: w0 + 10 * 86_400 + 500, monotonic: 520)
        _ = h.observe(wall: w0 + 20 * 86_400, monotonic: 530)  // jumps again: a new line
        _ = h.observe(wall: w0 + 20 * 86_400 + 200, monotonic: 730)
        #expect(h.suspect && h.highWater == w0)
        _ = h.observe(wall: w0 + 20 * 86_400 + 600, monotonic: 1_130)
        #expect(!h.suspect && h.highWater == w0 + 20 * 86_400 + 600)
    }
}
