import Dispatch
import Foundation
import HCIHost
import Logging
import NodeTestSupport
import Synchronization
import Testing
@testable import BLEDaemon

/// The watchdog's start-up grace (`WatchdogService`): a late first answer of the radio owner
/// is fed, whenever it lands; a start that never answers, and a late answer once the owner has
/// answered, are not.
@Suite("Watchdog: the start-up grace")
struct WatchdogGraceTests {
    /// WATCHDOG_USEC of these tests (feed interval and answer deadline: half of it; grace: all
    /// of it). Short for a test, yet each outcome has a whole interval of slack for a loaded
    /// machine's scheduling delay (a second was seen with two test runs side by side).
    static let watchdogSeconds = 4.0
    static var interval: Duration { .seconds(watchdogSeconds / 2) }

    /// The radio owner's place: answers live, each question after its scripted wait.
    final class ScriptedRadio: RadioLivenessSource {
        enum Wait: Sendable {
            case none
            /// No answer until `release()` (after the test's service has ended).
            case forever
            case until(@Sendable () async -> Void)
        }

        private let script: Mutex<[Wait]>
        private let afterScript: Wait
        private let released = Mutex(false)

        init(_ script: [Wait], then afterScript: Wait) {
            self.script = Mutex(script)
            self.afterScript = afterScript
        }

        func release() { released.withLock { $0 = true } }

        func liveness(progress: LivenessProgress) async -> RadioPathLiveness {
            let wait = script.withLock { $0.isEmpty ? afterScript : $0.removeFirst() }
            switch wait {
            case .none: break
            case .forever: while !released.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(20)) }
            case .until(let condition): await condition()
            }
            return RadioPathLiveness(live: true, reason: "ok")
        }
    }

    /// A task executor whose jobs can be held back: the watchdog's loop runs on it, so a test
    /// can keep the loop from running (a starved board) while the radio owner's answer lands.
    /// The check's own tasks (the deadline, the question) do not inherit it and run on.
    final class GatedExecutor: TaskExecutor {
        private struct State {
            var closed = false
            var held: [UnownedJob] = []
        }

        private let state = Mutex(State())
        private let queue = DispatchQueue(label: "watchdog-grace-test.loop")

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let hold = state.withLock { s -> Bool in
                if s.closed { s.held.append(job) }
                return s.closed
            }
            if !hold { run(job) }
        }

        /// Jobs from now on wait for `open()`.
        func close() { state.withLock { $0.closed = true } }
        /// Runs the held jobs, in order, and every later one at once.
        func open() {
            let held = state.withLock { s -> [UnownedJob] in
                s.closed = false
                defer { s.held = [] }
                return s.held
            }
            for job in held { run(job) }
        }

        var heldJobs: Int { state.withLock { $0.held.count } }

        private func run(_ job: UnownedJob) {
            let executor = asUnownedTaskExecutor()
            queue.async { job.runSynchronously(on: executor) }
        }
    }

    /// The watchdog service under test with its own notify socket, feed log and captured log.
    struct Rig {
        let check: RadioPathCheck
        let service: WatchdogService
        let feeds: WatchdogLivenessTests.FeedLog
        let log: CapturedLog

        init(radio: ScriptedRadio) throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-grace-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            feeds = WatchdogLivenessTests.FeedLog(try SystemdNotifierTests.Listener(path: path))
            log = CapturedLog(level: .notice)
            let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "\(Int(WatchdogGraceTests.watchdogSeconds * 1_000_000))",
                                                         "WATCHDOG_PID": "\(getpid())"])
            // The schedule is not started: its heartbeat is live, so each check asks the radio.
            check = RadioPathCheck(radio: radio, schedule: ScheduleHeartbeat(rotationMaxMinutes: 20),
                                   clock: ManualClock(wall: 1_700_000_000, monotonic: 100))
            service = WatchdogService(check: check, notifier: notifier, logger: log.logger)
        }

        /// When a run of the service started, said its critical message (if it did, within
        /// six intervals), and ended two intervals after that message.
        struct CriticalRun {
            let said: Bool
            let started, critical, end: ContinuousClock.Instant
        }

        /// Runs the service until it says the radio path is not live, then two more checks.
        func runUntilCritical() async throws -> CriticalRun {
            let started = ContinuousClock.now
            let feeding = Task { try await service.run() }
            let said = try await WatchdogGraceTests.eventually(within: WatchdogGraceTests.interval * 6) { !criticals.isEmpty }
            let critical = ContinuousClock.now
            try await Task.sleep(for: WatchdogGraceTests.interval * 2) // two more checks, neither fed
            let end = ContinuousClock.now
            feeding.cancel()
            _ = try? await feeding.value
            return CriticalRun(said: said, started: started, critical: critical, end: end)
        }

        var graceNotices: [CapturedLog.Entry] { log.records.filter { $0.level == .notice && $0.message.contains("start-up grace") } }
        var criticals: [CapturedLog.Entry] { log.records.filter { $0.level == .critical } }
    }

    /// Waits (polling, at most `limit`) until `condition` holds; false if it never did.
    static func eventually(within limit: Duration, _ condition: () -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test("a first answer that lands after the deadline, before the starved loop looks again, is fed within the grace")
    func lateFirstAnswerIsFed() async throws {
        let gate = GatedExecutor()
        // The first question: the loop is held from the moment it is asked; the answer comes
        // once the deadline has passed and resumed the loop with no answer (that resumption
        // waits behind the gate), so it lands before the loop decides.
        let radio = ScriptedRadio([.until {
            gate.close()
            let asked = ContinuousClock.now
            while gate.heldJobs == 0 || ContinuousClock.now - asked < Self.interval + .milliseconds(200) {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }], then: .none)
        let rig = try Rig(radio: radio)
        defer { rig.feeds.stop() }
        let started = ContinuousClock.now
        let feeding = Task(executorPreference: gate) { try await rig.service.run() }
        try await waitUntil { rig.check.radioHasAnswered }
        let answered = ContinuousClock.now
        gate.open()
        // The late first check is fed at once; the next one, answered in time, is fed too.
        let fedOn = try await Self.eventually(within: Self.interval * 4) { rig.feeds.feeds(from: started, to: .now).count >= 2 }
        feeding.cancel()
        _ = try? await feeding.value

        #expect(answered - started > Self.interval, "the answer came \(answered - started) after the start, not after the deadline")
        #expect(rig.criticals.isEmpty, "\(rig.criticals)")
        #expect(rig.graceNotices.count == 1, "\(rig.log.records)")
        #expect(fedOn, "feeds: \(rig.feeds.feeds(from: started, to: .now).map { $0 - started })")
    }

    @Test("a start whose radio owner never answers is fed only within the grace, then said at critical level and not fed")
    func neverAnsweredIsFedOnlyWithinTheGrace() async throws {
        let radio = ScriptedRadio([], then: .forever)
        defer { radio.release() }
        let rig = try Rig(radio: radio)
        defer { rig.feeds.stop() }
        // The first check ends unanswered within the grace; the second (its question still
        // unanswered) ends after it.
        let run = try await rig.runUntilCritical()
        let (started, critical, end) = (run.started, run.critical, run.end)

        #expect(run.said)
        #expect(rig.criticals.count == 1, "\(rig.criticals)")
        #expect(rig.criticals.first?.message == "the radio path is not live; no longer feeding the watchdog")
        #expect(rig.graceNotices.count == 1, "\(rig.log.records)")
        // Fed once, within WatchdogSec of the start (so systemd restarts it at most two
        // watchdog timeouts after the start; a second's allowance for the feed's delivery to
        // the listener's thread), and never after the critical message.
        let fed = rig.feeds.feeds(from: started, to: end)
        #expect(fed.count == 1, "feeds: \(fed.map { $0 - started })")
        if let last = fed.last { #expect(last - started < .seconds(Self.watchdogSeconds + 1), "last feed \(last - started) after the start") }
        #expect(rig.feeds.feeds(from: critical, to: end).isEmpty)
    }

    @Test("once the radio owner has answered in time, a late answer is said at critical level and not fed")
    func lateAnswerAfterATimelyOneIsNotFed() async throws {
        let radio = ScriptedRadio([.none], then: .forever)
        defer { radio.release() }
        let rig = try Rig(radio: radio)
        defer { rig.feeds.stop() }
        let run = try await rig.runUntilCritical()
        let (started, critical, end) = (run.started, run.critical, run.end)

        #expect(run.said)
        #expect(rig.check.radioHasAnswered)
        #expect(rig.criticals.count == 1, "\(rig.criticals)")
        #expect(rig.criticals.first?.metadata["reason"]?.description.contains("did not answer within") == true, "\(rig.criticals)")
        #expect(rig.graceNotices.isEmpty, "\(rig.log.records)")
        // Fed for the timely answer only.
        #expect(rig.feeds.feeds(from: started, to: end).count == 1, "feeds: \(rig.feeds.feeds(from: started, to: end).map { $0 - started })")
        #expect(rig.feeds.feeds(from: critical, to: end).isEmpty)
    }
}
