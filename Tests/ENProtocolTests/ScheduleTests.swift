import Foundation
import Testing
@testable import ENProtocol

/// Runs a NodeSchedule on a virtual clock: the simulation loop `gaenctl simulate` also runs.
struct VirtualNode {
    var schedule: NodeSchedule
    var random: SeededRandom
    var wall: Double
    var mono: Double = 0
    var synchronized = true
    var log: [(wall: Double, mono: Double, action: ScheduleAction)] = []

    init(schedule: NodeSchedule = NodeSchedule(), seed: UInt64 = 1, wall: Double) {
        self.schedule = schedule
        self.random = SeededRandom(seed: seed)
        self.wall = wall
    }

    mutating func step() throws {
        let actions = try schedule.advance(to: ClockReading(wall: wall, monotonic: mono, synchronized: synchronized), random: &random)
        for a in actions { log.append((wall, mono, a)) }
    }

    /// Runs until monotonic time `end`, jumping from deadline to deadline.
    mutating func run(for seconds: Double) throws {
        let end = mono + seconds
        try step()
        while schedule.nextDeadline <= end {
            let dt = max(0, schedule.nextDeadline - mono)
            mono += dt
            wall += dt
            try step()
        }
        wall += end - mono
        mono = end
    }

    var rotations: [(wall: Double, mono: Double, slot: AdvertisingSlot)] {
        log.compactMap { if case .rotate(let s) = $0.action { return ($0.wall, $0.mono, s) } else { return nil } }
    }
    var scanStarts: [(mono: Double, window: ScanWindow)] {
        log.compactMap { if case .startScan(let w) = $0.action { return ($0.mono, w) } else { return nil } }
    }
    var finishedScans: [CompletedScan] {
        log.compactMap { if case .finishScan(let c) = $0.action { return c } else { return nil } }
    }
}

@Suite("Node schedule")
struct ScheduleTests {
    // 2026-11-20 23:00:00 UTC, an hour before a day boundary.
    static let start: Double = 1_795_734_000

    @Test("rotation periods over three simulated days are all within 10-20 minutes, and spread out")
    func rotationPeriods() throws {
        var node = VirtualNode(wall: Self.start)
        try node.run(for: 3 * 86_400)
        let r = node.rotations
        let gaps = zip(r.dropFirst(), r).map { $0.mono - $1.mono }
        #expect(gaps.count > 200)
        #expect(gaps.allSatisfy { (600...1200).contains($0) })
        // Uniform 10-20 min: mean near 15 min, both ends of the range used.
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        #expect(abs(mean - 900) < 40)
        #expect(gaps.min()! < 660 && gaps.max()! > 1140)
        // Each rotation's slot is the interval (and so the day) of the wall time at the rotation.
        for rot in r { #expect(rot.slot.interval == ENIntervalNumber(unixSeconds: rot.wall)) }
    }

    @Test("default scan cadence: 4 s scans starting every 210-300 s, every scan recorded")
    func scanCadence() throws {
        var node = VirtualNode(wall: Self.start)
        try node.run(for: 86_400)
        let starts = node.scanStarts
        let gaps = zip(starts.dropFirst(), starts).map { $0.mono - $1.mono }
        #expect(gaps.allSatisfy { (210...300).contains($0) })
        #expect((288...412).contains(starts.count)) // 86400/300 ... 86400/210
        let done = node.finishedScans
        #expect(done.count >= starts.count - 1)
        #expect(done.allSatisfy { abs(($0.endWall - $0.startWall) - 4) < 1e-9 })
    }

    @Test("fixed and continuous cadences")
    func otherCadences() throws {
        var fixed = VirtualNode(schedule: NodeSchedule(scan: try ScanPolicy(duration: 2, cadence: .fixedPeriod(60))), wall: Self.start)
        try fixed.run(for: 3600)
        let fg = zip(fixed.scanStarts.dropFirst(), fixed.scanStarts).map { $0.mono - $1.mono }
        #expect(fg.count == 60 && fg.allSatisfy { $0 == 60 }) // starts at 0, 60, ..., 3600
        #expect(fixed.finishedScans.allSatisfy { $0.endWall - $0.startWall == 2 })

        var cont = VirtualNode(schedule: NodeSchedule(scan: try ScanPolicy(duration: 30, cadence: .continuous)), wall: Self.start)
        try cont.run(for: 600)
        let scans = cont.finishedScans
        #expect(scans.count == 20)
        // Back to back: each scan ends where the next one starts.
        for (a, b) in zip(scans, scans.dropFirst()) { #expect(a.endWall == b.startWall) }
    }

    @Test("settings outside the allowed ranges are refused with the setting named")
    func invalidSettings() {
        #expect(throws: ScheduleConfigError.invalidRange(setting: "scan duration", allowed: "2...4 s", actual: "5.0 s")) {
            try ScanPolicy(duration: 5)
        }
        #expect(throws: ScheduleConfigError.self) { try ScanPolicy(duration: 4, cadence: .fixedPeriod(3)) }
        #expect(throws: ScheduleConfigError.self) { try ScanPolicy(duration: 4, cadence: .randomPeriod(1...300)) }
        #expect(throws: ScheduleConfigError.self) { try RotationPolicy(minimumSeconds: 10, maximumSeconds: 5) }
    }

    @Test("a day rollover changes the key day at the first rotation after midnight, without a forced rotation")
    func dayRollover() throws {
        var node = VirtualNode(wall: Self.start)
        try node.run(for: 2 * 3600)
        let days = node.rotations.map(\.slot.day)
        let firstDay = UTCDay(unixSeconds: Self.start)
        #expect(days.first == firstDay)
        #expect(Set(days) == [firstDay, firstDay.advanced(by: 1)])
        // Days only go forward with the clock, and no rotation gap is shorter than 10 min.
        #expect(zip(days, days.dropFirst()).allSatisfy { $0 <= $1 })
        let r = node.rotations
        #expect(zip(r.dropFirst(), r).allSatisfy { $0.mono - $1.mono >= 600 })
    }

    @Test("a forward clock step of three days: no rotation storm, skipped days get no key slot")
    func forwardStep() throws {
        var node = VirtualNode(wall: Self.start)
        try node.run(for: 3600)
        let before = node.rotations.count
        node.wall += 3 * 86_400 + 1234
        try node.run(for: 3600)
        let after = Array(node.rotations.dropFirst(before))
        // One hour of monotonic time holds at most 6 rotations whatever the wall clock did.
        #expect(after.count <= 6)
        let allGaps = zip(node.rotations.dropFirst(), node.rotations).map { $0.mono - $1.mono }
        #expect(allGaps.allSatisfy { (600...1200).contains($0) })
        let days = Set(node.rotations.map(\.slot.day))
        let d0 = UTCDay(unixSeconds: Self.start)
        #expect(days.isSubset(of: [d0, d0.advanced(by: 1), d0.advanced(by: 3), d0.advanced(by: 4)]))
        #expect(!days.contains(d0.advanced(by: 2)))
    }

    @Test("a backward clock step: no storm, no negative scan durations, earlier day's slot reused")
    func backwardStep() throws {
        var node = VirtualNode(wall: Self.start + 3000) // 23:50
        try node.run(for: 1800) // past midnight
        let scansBefore = node.finishedScans.count
        node.wall -= 7200 // back to 22:20 the previous day
        try node.run(for: 3 * 3600)
        let r = node.rotations
        #expect(zip(r.dropFirst(), r).allSatisfy { (600...1200).contains($0.mono - $1.mono) })
        #expect(node.finishedScans.allSatisfy { $0.endWall >= $0.startWall })
        #expect(node.finishedScans.count > scansBefore)
        // The day went back: the earlier day's slot appears again (the store reuses its key).
        let days = r.map(\.slot.day)
        let d0 = UTCDay(unixSeconds: Self.start)
        #expect(days.contains(d0.advanced(by: 1)))
        #expect(days.last == d0.advanced(by: 1))
        #expect(days.contains(d0))
    }

    @Test("a wall step in the middle of a scan cannot make it end before it started")
    func stepDuringScan() throws {
        var schedule = NodeSchedule()
        var rng = SeededRandom(seed: 7)
        let a = try schedule.advance(to: ClockReading(wall: Self.start, monotonic: 100), random: &rng)
        guard case .startScan(let w)? = a.last else { Issue.record("no scan started: \(a)"); return }
        let b = try schedule.advance(to: ClockReading(wall: Self.start - 3600, monotonic: 104), random: &rng)
        #expect(b == [.finishScan(CompletedScan(startWall: w.startWall, endWall: w.startWall + 4))])
        #expect(w.wallTime(atMonotonic: 102.5) == Self.start + 2.5)
    }

    @Test("unsynchronised clock: nothing on air, no scans; resumes at once when synchronised")
    func clockSync() throws {
        var node = VirtualNode(wall: Self.start)
        node.synchronized = false
        try node.run(for: 600)
        #expect(node.log.isEmpty)
        node.synchronized = true
        try node.run(for: 10)
        #expect(node.rotations.count == 1 && node.scanStarts.count == 1)
        node.synchronized = false
        try node.run(for: 60)
        #expect(node.log.contains { $0.action == .stopAdvertising })
        #expect(node.finishedScans.count == 1) // the running scan still ended and was recorded
        let count = node.log.count
        try node.run(for: 3600)
        #expect(node.log.count == count)
    }

    @Test("a late wake-up fires each timer once and measures the next period from then")
    func lateWakeUp() throws {
        var schedule = NodeSchedule()
        var rng = SeededRandom(seed: 3)
        _ = try schedule.advance(to: ClockReading(wall: Self.start, monotonic: 0), random: &rng)
        let actions = try schedule.advance(to: ClockReading(wall: Self.start + 86_400, monotonic: 86_400), random: &rng)
        #expect(actions.filter { if case .rotate = $0 { true } else { false } }.count == 1)
        #expect(actions.filter { if case .startScan = $0 { true } else { false } }.count == 1)
        #expect(schedule.nextRotation! >= 86_400 + 600)
    }

    @Test("monotonic readings that go back are clamped")
    func monotonicClamp() throws {
        var schedule = NodeSchedule()
        var rng = SeededRandom(seed: 3)
        _ = try schedule.advance(to: ClockReading(wall: Self.start, monotonic: 1000), random: &rng)
        let a = try schedule.advance(to: ClockReading(wall: Self.start, monotonic: 10), random: &rng)
        #expect(a.isEmpty)
    }
}
