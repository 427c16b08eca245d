import ENProtocol
import Foundation
import GaenApp
import HCIHost
import HTTPClient
import KeyDistribution
import Synchronization
import Testing
import TrialTime

/// The rehearsal's one trial clock: its file, its checks, and every process reading the same
/// trial time from it (a restarted node, the app's days, the publisher's submission times).
@Suite struct TrialClockTests {
    // Real 2026-11-28T18:40:00Z is trial 2026-03-02T00:00:00Z, 480 times faster.
    static let r0 = TrialClock.isoTime("2026-11-28T18:40:00Z")!
    static let t0 = TrialClock.isoTime("2026-03-02T00:00:00Z")!
    static func clock(now: Double = r0 + 60) throws -> TrialClock { try TrialClock(scale: 480, realEpoch: r0, trialEpoch: t0, now: now) }

    @Test("trial time is the epoch plus the real time since the real epoch, times the scale")
    func formula() throws {
        let c = try Self.clock()
        #expect(c.trialTime(real: Self.r0) == Self.t0)
        // 3 real minutes: a trial day (480 x 180 s = 86,400 s).
        #expect(c.trialTime(real: Self.r0 + 180) == Self.t0 + 86_400)
        #expect(c.realTime(trial: Self.t0 + 86_400) == Self.r0 + 180)
        #expect(TrialClock.isoTime(c.trialTime(real: Self.r0 + 187.5)) == "2026-03-03T01:00:00Z")
    }

    @Test("the file's text reads back as the same clock; ISO times are exact")
    func fileRoundTrip() throws {
        let c = try Self.clock()
        #expect(c.text.contains("scale: 480\nreal_epoch: 2026-11-28T18:40:00Z\ntrial_epoch: 2026-03-02T00:00:00Z\n"))
        #expect(try TrialClock.parse(c.text, now: Self.r0 + 60) == c)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trial-clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("clock").path
        try Data(c.text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(try TrialClock.load(path: path, now: Self.r0 + 60) == c)
        #expect(TrialClock.isoTime(1_772_409_600) == "2026-03-02T00:00:00Z")
        for bad in ["2026-02-30T00:00:00Z", "2026-03-02T24:00:00Z", "2026-03-02 00:00:00Z", "2026-03-02T00:00:00", "2026-03-02T00:00:00.5Z"] {
            #expect(TrialClock.isoTime(bad) == nil, "\(bad)")
        }
    }

    @Test("a scale outside 1...100000, an epoch in the future, a trial time before 2020 or after 2100 are refused, said plainly")
    func refusals() throws {
        func refusal(_ body: () throws -> TrialClock) -> String {
            do { _ = try body(); return "accepted" } catch { return "\(error)" }
        }
        #expect(refusal { try TrialClock(scale: 0.5, realEpoch: Self.r0, trialEpoch: Self.t0, now: Self.r0) }.contains("scale must be a number in 1...100000, got 0.5"))
        #expect(refusal { try TrialClock(scale: 100_001, realEpoch: Self.r0, trialEpoch: Self.t0, now: Self.r0) }.contains("1...100000"))
        #expect(refusal { try TrialClock(scale: .nan, realEpoch: Self.r0, trialEpoch: Self.t0, now: Self.r0) }.contains("scale must be"))
        #expect(refusal { try TrialClock(scale: 480, realEpoch: Self.r0 + 10, trialEpoch: Self.t0, now: Self.r0) }
            .contains("real_epoch 2026-11-28T18:40:10Z is in the future (this machine's clock says 2026-11-28T18:40:00Z)"))
        #expect(refusal { try TrialClock(scale: 480, realEpoch: Self.r0, trialEpoch: 1_500_000_000, now: Self.r0) }
            .contains("trial_epoch 2017-07-14T02:40:00Z is before 2020-01-01"))
        // 100000 times faster for a real year is far past 2100.
        #expect(refusal { try TrialClock(scale: 100_000, realEpoch: Self.r0, trialEpoch: Self.t0, now: Self.r0 + 365 * 86_400) }.contains("past 2100-01-01"))
        let good = try Self.clock().text
        for (text, message) in [
            (good.replacingOccurrences(of: "scale: 480", with: "scael: 480"), "line 3: unknown key 'scael' (scale, real_epoch, trial_epoch)"),
            (good.replacingOccurrences(of: "scale: 480\n", with: ""), "'scale' is missing"),
            (good.replacingOccurrences(of: "scale: 480", with: "scale: fast"), "line 3: scale 'fast' is not a number"),
            (good.replacingOccurrences(of: "2026-03-02T00:00:00Z", with: "2026-03-02"), "line 5: trial_epoch '2026-03-02' is not YYYY-MM-DDTHH:MM:SSZ"),
            ("- 1\n", "expected the keys scale, real_epoch and trial_epoch"),
        ] {
            #expect(refusal { try TrialClock.parse(text, now: Self.r0 + 60) } == message)
        }
        #expect(refusal { try TrialClock.load(path: "/nonexistent/clock", now: Self.r0) }.hasPrefix("trial clock /nonexistent/clock: cannot be opened: No such file or directory"))
    }

    /// The real clocks under a node, moved by hand: wall and monotonic advance together.
    final class RealClocks: NodeClock {
        let state = Mutex((wall: 0.0, mono: 0.0))
        init(wall: Double, mono: Double) { state.withLock { $0 = (wall, mono) } }
        func advance(_ s: Double) { state.withLock { $0.wall += s; $0.mono += s } }
        func wallTime() -> Double { state.withLock { $0.wall } }
        func monotonicTime() -> MonotonicInstant { MonotonicInstant(seconds: state.withLock { $0.mono }) }
        func sleep(until deadline: MonotonicInstant) async throws {}
    }

    @Test("a node restarted an hour later reads the trial time of a node that kept running, to the second")
    func restartedNodeRejoins() throws {
        let real = RealClocks(wall: Self.r0 + 10, mono: 5_000)
        let c = try Self.clock(now: Self.r0 + 10)
        let running = ScaledClock(trialClock: c, base: real)
        let scaledOnlyFirst = try ScaledClock(factor: 480, base: real)
        #expect(running.factor == 480)
        #expect(running.wallTime() == Self.t0 + 10 * 480)
        real.advance(3_600)
        // Restarted now: a new process, a new monotonic origin, the same file.
        let restarted = ScaledClock(trialClock: try TrialClock.load(text: c.text, now: real.wallTime()), base: real)
        #expect(restarted.wallTime() == running.wallTime())
        #expect(restarted.wallTime() == Self.t0 + 3_610 * 480)
        real.advance(7.25)
        #expect(restarted.wallTime() == running.wallTime())
        // Its timers run 480 times faster from its own start, as with --time-scale.
        #expect(restarted.monotonicTime().duration(since: MonotonicInstant(seconds: 5_000 + 3_600)) == 7.25 * 480)
        // --time-scale alone starts again from the real time at each start: the restarted node
        // is 479 x 3607.25 s (20 days) behind the one that kept running.
        let scaledOnlyRestarted = try ScaledClock(factor: 480, base: real)
        #expect(abs(scaledOnlyFirst.wallTime() - scaledOnlyRestarted.wallTime() - 3_607.25 * 479) < 0.001)
    }

    @Test("the app's days follow the trial clock: the provide calls of the trial's today count against its limit, the real today's do not")
    func appDaysFollowTheTrialClock() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trial-app-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try AppStateStore(directory: dir)
        let c = try Self.clock()
        let realNow = Self.r0 + 600 // trial 2026-03-05 08:00
        let trialNow = c.trialTime(real: realNow)
        var state = AppState()
        // Two calls on the trial's today, one on its yesterday.
        state.provideCalls = [Int64(trialNow) - 86_400, Int64(trialNow) - 3_600, Int64(trialNow) - 60]
        try store.save(state)
        let settings = SyncSettings(server: "https://127.0.0.1:9/keys", layout: .cwa(country: "DE"), trust: KeyExportTrustSet())
        let http = try HTTPSession()
        let trial = try SyncRun(settings: settings, store: store, http: http, now: { realNow }, trialClock: c, log: { _ in })
        #expect(trial.callsLeft(gaendRemaining: 6, perDay: 6) == 4)
        // Without the clock the real day (2026-11-28) has had none of them.
        let real = try SyncRun(settings: settings, store: store, http: http, now: { realNow }, log: { _ in })
        #expect(real.callsLeft(gaendRemaining: 6, perDay: 6) == 6)
    }

    @Test("the publisher dates a board's upload in trial time: its file's real modification time through the trial clock")
    func publisherSubmissionTimeFollowsTheTrialClock() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trial-inbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/board-a", withIntermediateDirectories: true)
        let c = try Self.clock()
        // Uploaded at real R0 + 200 s: trial 2026-03-03 02:40; the key is of trial 2026-03-02.
        let uploaded = Self.r0 + 200
        let keyDay = Int64(Self.t0) / 86_400
        let file = dir + "/board-a/keys.json"
        try JSONSerialization.data(withJSONObject: [["keyData": String(repeating: "ab", count: 16), "rollingStartIntervalNumber": keyDay * 144]])
            .write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: uploaded)], ofItemAtPath: file)
        let now = Int64(c.trialTime(real: Self.r0 + 240))
        var ledger = SubmissionLedger()
        let read = try Inbox.read(dir, ledger: &ledger, now: now, fileTime: { Int64(c.trialTime(real: Double($0)).rounded(.down)) })
        #expect(read.keys.count == 1)
        #expect(read.keys.first?.submittedAt == Int64(c.trialTime(real: uploaded)))
        // Read without the clock, the upload (real, months after the trial's now) is dated now: its own time is lost.
        var plain = SubmissionLedger()
        #expect(try Inbox.read(dir, ledger: &plain, now: now).keys.first?.submittedAt == now)
    }
}

extension TrialClock {
    static func load(text: String, now: Double) throws -> TrialClock { try parse(text, now: now) }
}
