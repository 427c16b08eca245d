import Foundation
@testable import HCIHost
import NodeTestSupport
import Testing

actor Flag {
    var value = false
    func set() { value = true }
}

@Suite("Clocks")
struct ClockTests {
    @Test("manual clock: sleepers wake when time reaches their deadline, not on a wall step")
    func manualClock() async throws {
        let clock = ManualClock(wall: 1_000_000, monotonic: 50)
        let woke = Flag()
        let task = Task { try await clock.sleep(until: MonotonicInstant(seconds: 60)); await woke.set() }
        try await waitForSleepers(clock)
        clock.stepWall(by: 3600)
        clock.advance(by: 5)
        #expect(clock.sleeperCount == 1)
        #expect(await woke.value == false)
        clock.advance(by: 5)
        try await task.value
        #expect(await woke.value)
        #expect(clock.wallTime() == 1_000_000 + 3600 + 10 && clock.monotonicTime().seconds == 60)
        clock.stepWall(by: -7200)
        #expect(clock.wallTime() == 1_000_000 - 3600 + 10)
    }

    /// Sleeps on any standard clock, as generic code does.
    static func sleepOnClock<C: Clock>(_ clock: C, for d: C.Duration) async throws { try await clock.sleep(for: d) }

    @Test("a node clock is a standard Clock: now is its monotonic time, sleep(for:) its sleep, also scaled")
    func nodeClockIsAClock() async throws {
        let clock = ManualClock(wall: 1_000_000, monotonic: 50)
        let any: any NodeClock = clock
        #expect(any.now == MonotonicInstant(seconds: 50))
        #expect(MonotonicInstant(seconds: 50).advanced(by: .milliseconds(1500)) == MonotonicInstant(seconds: 51.5))
        #expect(MonotonicInstant(seconds: 50).duration(to: MonotonicInstant(seconds: 52.25)) == .milliseconds(2250))
        let woke = Flag()
        let task = Task { try await Self.sleepOnClock(clock, for: .seconds(5)); await woke.set() }
        try await waitForSleepers(clock)
        clock.advance(by: 4)
        #expect(!(await woke.value))
        clock.advance(by: 1)
        try await task.value
        #expect(await woke.value)
        // A scaled node clock as a Clock: 100 s of node time in about a second of real time.
        let scaled = try ScaledClock(factor: 100)
        let start = scaled.now, realStart = SystemClock().monotonicTime()
        try await Self.sleepOnClock(scaled, for: .seconds(100))
        #expect(scaled.now.duration(since: start) >= 100)
        #expect(SystemClock().monotonicTime().duration(since: realStart) < 10)
    }

    @Test("manual clock: a cancelled sleeper throws CancellationError and is removed")
    func cancellation() async throws {
        let clock = ManualClock(wall: 0)
        let task = Task { try await clock.sleep(until: MonotonicInstant(seconds: 1e9)) }
        try await waitForSleepers(clock)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("scaled clock: N times faster wall and monotonic time, sleeps shortened by N")
    func scaledClock() async throws {
        let base = ManualClock(wall: 1_700_000_000, monotonic: 10)
        let scaled = try ScaledClock(factor: 60, base: base)
        base.advance(by: 1)
        #expect(scaled.wallTime() == 1_700_000_060)
        #expect(scaled.monotonicTime().seconds == 70)
        let task = Task { try await scaled.sleep(until: MonotonicInstant(seconds: 70 + 600)) } // 10 scaled minutes
        try await waitForSleepers(base)
        #expect(base.nextDeadline?.seconds == 21) // 10 real seconds later
        base.advance(by: 10)
        try await task.value
        // A step of the real wall clock shows through as the same step; timers do not move.
        base.stepWall(by: 40 * 86_400)
        #expect(scaled.wallTime() == 1_700_000_000 + 11 * 60 + 40 * 86_400)
        #expect(scaled.monotonicTime().seconds == 10 + 11 * 60)
        #expect(throws: ClockError.invalidTimeScale(0)) { try ScaledClock(factor: 0) }
    }

    @Test("system clock: wall time near Foundation's, monotonic time moves forward")
    func systemClock() async throws {
        let clock = SystemClock()
        #expect(abs(clock.wallTime() - Date().timeIntervalSince1970) < 1)
        let a = clock.monotonicTime()
        try await clock.sleep(for: 0.02)
        #expect(clock.monotonicTime().duration(since: a) >= 0.02)
    }
}
