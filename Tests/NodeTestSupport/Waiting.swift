import HCIHost

/// What a wait below throws when its condition does not come true in time.
package struct WaitTimedOut: Error, CustomStringConvertible {
    package let description: String
}

/// Waits (in real time) until `count` tasks sleep on the manual clock.
package func waitForSleepers(_ clock: ManualClock, _ count: Int = 1) async throws {
    var spins = 0
    while clock.sleeperCount < count {
        spins += 1
        if spins > 200_000 { throw CancellationError() }
        try await Task.sleep(nanoseconds: 20_000)
    }
}

/// Polls `condition` (the code under test works on its own tasks) for up to 30 s.
package func waitUntil(_ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(2))
    }
    if try await condition() { return }
    throw WaitTimedOut(description: "condition not met within 30 s")
}

extension ManualClock {
    /// Lets the tasks sleeping on this clock run through `seconds` of its time: waits until
    /// one sleeps, moves the clock to the earliest deadline (never past the end), again until
    /// the end, then waits for a sleeper once more so the last wake-up has been handled.
    package func run(for seconds: Double) async throws {
        let end = monotonicTime().seconds + seconds
        while monotonicTime().seconds < end {
            try await waitForSleepers(self)
            advance(to: min(nextDeadline!, MonotonicInstant(seconds: end)))
        }
        try await waitForSleepers(self)
    }
}
