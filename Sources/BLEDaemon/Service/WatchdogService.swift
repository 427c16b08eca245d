import HCIHost
import Logging
import PlatformSupport
import ServiceLifecycle
import Synchronization

/// The systemd watchdog's question: is the radio path live? It asks the schedule's heartbeat
/// (a lock, no await) and the radio owner (`RadioOwner.liveness`, a `RadioLivenessSource`, which asks the controller
/// session), never the node or anything that can wait behind long work (matching,
/// exports, caller I/O). The owner's answer is awaited in a task of its own for at most a
/// deadline; a question still unanswered is not asked again, so a wedged radio path is
/// reported as such at every check until it answers.
package final class RadioPathCheck: Sendable {
    let radio: any RadioLivenessSource
    let schedule: ScheduleHeartbeat
    let clock: any NodeClock
    private struct Questions {
        /// A question to the radio owner is in flight, and how far it got.
        var inFlight: LivenessProgress?
        /// The radio owner has answered at least once since start.
        var answered = false
        /// The last answer that came after its deadline: how long after it was asked (taken by
        /// `takeLateAnswer`).
        var lateAnswer: Duration?
    }

    private let questions = Mutex(Questions())
    package var radioHasAnswered: Bool { questions.withLock { $0.answered } }

    /// One check's result.
    package struct Outcome: Sendable {
        package var liveness: RadioPathLiveness
        /// The radio owner had answered no question yet when this check asked its own (or
        /// began waiting on the one still in flight). Read under the same lock as the question
        /// is started, so an answer landing later, even before the caller looks, does not
        /// change it.
        package var beforeFirstAnswer: Bool
    }

    /// Runs between the deadline's cancellation and the answer's reply (tests: a reply held back
    /// there must still win).
    private let beforeReply: (@Sendable () async -> Void)?

    package init(radio: any RadioLivenessSource, schedule: ScheduleHeartbeat, clock: any NodeClock,
                 beforeReply: (@Sendable () async -> Void)? = nil) {
        self.radio = radio
        self.schedule = schedule
        self.clock = clock
        self.beforeReply = beforeReply
    }

    package func check(within deadline: Duration) async -> Outcome {
        let s = schedule.liveness(now: clock.monotonicTime().seconds)
        guard s.live else { return Outcome(liveness: s, beforeFirstAnswer: !radioHasAnswered) }
        let (answer, progress, beforeFirstAnswer) = await askRadio(within: deadline)
        guard let answer else {
            return Outcome(liveness: RadioPathLiveness(live: false, reason: "the radio owner or its controller session did not answer within \(deadline) (\(progress.summary))",
                                                       unanswered: true),
                           beforeFirstAnswer: beforeFirstAnswer)
        }
        return Outcome(liveness: answer, beforeFirstAnswer: beforeFirstAnswer)
    }

    /// How long after it was asked the last late answer came, once (nil: none since the last call).
    package func takeLateAnswer() -> Duration? { questions.withLock { q in defer { q.lateAnswer = nil }; return q.lateAnswer } }

    /// The radio owner's answer, or nil when none came within `deadline`; and whether no
    /// question had been answered when this one was asked.
    private func askRadio(within deadline: Duration) async -> (RadioPathLiveness?, LivenessProgress, beforeFirstAnswer: Bool) {
        let (progress, start, beforeFirstAnswer) = questions.withLock { q -> (LivenessProgress, Bool, Bool) in
            if let waiting = q.inFlight { return (waiting, false, !q.answered) }
            let progress = LivenessProgress()
            q.inFlight = progress
            return (progress, true, !q.answered)
        }
        let reply = OneReply()
        let answer = await withCheckedContinuation { continuation in
            reply.set(continuation)
            let timer = Task {
                // Only a deadline that passed replies: a cancelled sleep means the answer came,
                // and its reply may not have landed yet. (Replying on cancellation lost prompt
                // answers to the race: an answer 5 ms after the question, reported as none.)
                guard (try? await Task.sleep(for: deadline)) != nil else { return }
                reply.resume(nil)
            }
            guard start else { return } // the last question is still unanswered: wait out the deadline
            Task { [self] in
                let asked = ContinuousClock.now
                let answer = await radio.liveness(progress: progress)
                let took = ContinuousClock.now - asked
                questions.withLock { q in
                    q.inFlight = nil
                    q.answered = true
                }
                timer.cancel()
                await beforeReply?()
                if !reply.resume(answer) { questions.withLock { $0.lateAnswer = took } }
            }
        }
        return (answer, progress, beforeFirstAnswer)
    }

    /// A continuation resumed once, by the answer or by the deadline, whichever comes first.
    private final class OneReply: Sendable {
        private let continuation = Mutex<CheckedContinuation<RadioPathLiveness?, Never>?>(nil)
        func set(_ c: CheckedContinuation<RadioPathLiveness?, Never>) { continuation.withLock { $0 = c } }
        /// True when this call resumed it (false: the other side came first).
        @discardableResult
        func resume(_ value: RadioPathLiveness?) -> Bool {
            guard let c = continuation.withLock({ $0.take() }) else { return false }
            c.resume(returning: value)
            return true
        }
    }
}

/// Feeds the systemd watchdog while the radio path is live (`RadioPathCheck`). A path that
/// is not live stops being fed, and systemd restarts gaend.
///
/// Start-up grace: a check whose question was asked before the radio owner's first answer,
/// and that ends within the watchdog's own timeout (WatchdogSec) from start, still feeds when
/// that answer is merely late (said once at notice level), whenever the answer then lands,
/// even between the deadline and this loop's look at the check: a start on a loaded board may
/// be slow to answer once. With the grace two feed intervals long, that is the first check
/// only. A start that never answers is still caught: after the grace it is not fed, and
/// systemd restarts gaend at most two watchdog timeouts after it started. A question asked
/// once the owner has answered one has no grace: every late answer to it counts.
package struct WatchdogService: Service {
    let check: RadioPathCheck
    let notifier: SystemdNotifier
    let logger: Logger
    /// Where each feed is counted (the node's status reports it).
    let counters: NodeCounters?

    package init(check: RadioPathCheck, notifier: SystemdNotifier, logger: Logger, counters: NodeCounters? = nil) {
        self.check = check
        self.notifier = notifier
        self.logger = logger
        self.counters = counters
    }

    package func run() async throws {
        guard let interval = notifier.watchdogInterval else {
            try? await gracefulShutdown()
            return
        }
        let started = ContinuousClock.now
        // WATCHDOG_USEC: the interval is half of it.
        let grace = interval * 2
        await cancelWhenGracefulShutdown {
            var reported = false, graceSaid = false
            while !Task.isCancelled {
                // An answer later than the next feed is due counts as no answer.
                let outcome = await check.check(within: interval)
                let answer = outcome.liveness
                if answer.live {
                    if (try? notifier.watchdog()) != nil { counters?.watchdogFed() }
                    let late = check.takeLateAnswer()
                    if reported {
                        var metadata: Logger.Metadata = [:]
                        // When the stuck question's answer finally came: a slow path, or one
                        // that never answered until something else moved.
                        if let late { metadata["late_answer.seconds"] = "\(CFormat.fixed(late.seconds, decimals: 3))" }
                        logger.notice("the radio path is live again; feeding the watchdog", metadata: metadata)
                    }
                    reported = false
                } else if answer.unanswered, outcome.beforeFirstAnswer, ContinuousClock.now - started < grace {
                    try? notifier.watchdog()
                    if !graceSaid {
                        logger.notice("the radio owner did not answer the first question in time; fed during the start-up grace",
                                      metadata: ["reason": "\(answer.reason)", "grace": "\(grace)"])
                        graceSaid = true
                    }
                } else if !reported {
                    logger.critical("the radio path is not live; no longer feeding the watchdog", metadata: ["reason": "\(answer.reason)"])
                    reported = true
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
