import HCIHost
import NodeTestSupport
import Synchronization
import Testing
@testable import BLEDaemon

/// A question the radio owner leaves unanswered says where it waits, and the late answer's
/// delay is kept for the log line that says the path is live again (`RadioPathCheck`).
/// Nothing here is timed: the answer is held back until the test lets it go.
@Suite("Watchdog: where an unanswered question waits")
struct WatchdogQuestionTests {
    /// Answers after reaching `stage`, once `release()` is called (the first question only;
    /// later ones at once).
    final class HeldRadio: RadioLivenessSource {
        let stage: LivenessProgress.Stage
        private let released = Mutex(false)
        private let asked = Mutex(0)

        init(holdingAt stage: LivenessProgress.Stage) { self.stage = stage }

        func release() { released.withLock { $0 = true } }
        var questions: Int { asked.withLock { $0 } }

        func liveness(progress: LivenessProgress) async -> RadioPathLiveness {
            let first = asked.withLock { n in n += 1; return n == 1 }
            if first {
                if stage != .asked { progress.reached(stage) }
                while !released.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
            }
            return RadioPathLiveness(live: true, reason: "ok")
        }
    }

    static func check(_ radio: HeldRadio) -> RadioPathCheck {
        RadioPathCheck(radio: radio, schedule: ScheduleHeartbeat(rotationMaxMinutes: 20), clock: ManualClock(wall: 1_700_000_000, monotonic: 100))
    }

    @Test("the reason names the stage the question reached", arguments: [
        (LivenessProgress.Stage.asked, "the radio owner had not begun the question"),
        (.waitingForSession, "the radio owner was waiting for its controller session, since "),
        (.sessionAnswered, "the controller session had answered; the radio owner had not yet, since "),
    ])
    func reasonNamesTheStage(stage: LivenessProgress.Stage, text: String) async throws {
        let radio = HeldRadio(holdingAt: stage)
        defer { radio.release() }
        let check = Self.check(radio)
        let outcome = await check.check(within: .milliseconds(200))
        #expect(!outcome.liveness.live)
        #expect(outcome.liveness.unanswered)
        #expect(outcome.liveness.reason.hasPrefix("the radio owner or its controller session did not answer within 0.2 seconds ("), "\(outcome.liveness.reason)")
        #expect(outcome.liveness.reason.contains(text), "\(outcome.liveness.reason)")
        // The question still in flight is not asked again: the next check waits on the same one.
        let again = await check.check(within: .milliseconds(50))
        #expect(again.liveness.reason.contains(text), "\(again.liveness.reason)")
        #expect(radio.questions == 1)
    }

    @Test("a late answer's delay is kept once, for the next live check")
    func lateAnswerIsKept() async throws {
        let radio = HeldRadio(holdingAt: .waitingForSession)
        let check = Self.check(radio)
        let outcome = await check.check(within: .milliseconds(200))
        #expect(outcome.liveness.unanswered)
        #expect(check.takeLateAnswer() == nil) // still unanswered
        radio.release()
        try await waitUntil { check.radioHasAnswered }
        // The late answer is written just after the question is marked answered.
        var late: Duration?
        for _ in 0..<1000 where late == nil {
            late = check.takeLateAnswer()
            if late == nil { try await Task.sleep(for: .milliseconds(5)) }
        }
        let delay = try #require(late)
        #expect(delay >= .milliseconds(200), "late answer after \(delay)")
        #expect(check.takeLateAnswer() == nil) // taken once
        let next = await check.check(within: .seconds(30))
        #expect(next.liveness.live)
        #expect(check.takeLateAnswer() == nil) // answered in time: nothing late
    }
}

/// The answer and the deadline race for one reply: an answer that comes at once must win every
/// time. The deadline's task is cancelled when the answer comes; a cancelled deadline once
/// replied "no answer" itself, ahead of the answer (seen in the test bed: an answer 5 ms after
/// the question, reported as none within 15 s).
@Suite("Watchdog: a prompt answer always wins")
struct WatchdogPromptAnswerTests {
    final class PromptRadio: RadioLivenessSource {
        func liveness(progress: LivenessProgress) async -> RadioPathLiveness {
            progress.reached(.waitingForSession)
            await Task.yield()
            progress.reached(.sessionAnswered)
            return RadioPathLiveness(live: true, reason: "ok")
        }
    }

    @Test("a prompt answer whose reply is held back after the deadline was cancelled still wins")
    func heldReplyStillWins() async throws {
        // The answering task cancels the deadline, then is held (as a preempted thread would be)
        // long enough for the cancelled deadline's task to run.
        let check = RadioPathCheck(radio: PromptRadio(), schedule: ScheduleHeartbeat(rotationMaxMinutes: 20),
                                   clock: ManualClock(wall: 1_700_000_000, monotonic: 100),
                                   beforeReply: { try? await Task.sleep(for: .milliseconds(100)) })
        for _ in 0..<3 {
            let outcome = await check.check(within: .seconds(60))
            #expect(outcome.liveness.live, "\(outcome.liveness.reason)")
        }
        #expect(check.takeLateAnswer() == nil)
    }

    @Test("thousands of prompt answers, from several checks at once, are all live")
    func promptAnswersAreLive() async throws {
        let checks = (0..<4).map { _ in
            RadioPathCheck(radio: PromptRadio(), schedule: ScheduleHeartbeat(rotationMaxMinutes: 20), clock: ManualClock(wall: 1_700_000_000, monotonic: 100))
        }
        let unanswered = await withTaskGroup(of: [String].self) { group in
            for check in checks {
                group.addTask {
                    var failures: [String] = []
                    for _ in 0..<2500 {
                        let outcome = await check.check(within: .seconds(60))
                        if !outcome.liveness.live { failures.append(outcome.liveness.reason) }
                    }
                    return failures
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(unanswered.isEmpty, "\(unanswered.count) of 10000 prompt answers lost, e.g. \(unanswered.first ?? "")")
    }
}
