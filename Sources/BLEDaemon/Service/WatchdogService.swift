import HCIHost
import Logging
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
    /// The question to the radio owner in flight, if any.
    private let asking = Mutex<Bool>(false)
    /// The radio owner has answered at least once since start.
    private let answeredOnce = Mutex<Bool>(false)
    package var radioHasAnswered: Bool { answeredOnce.withLock { $0 } }

    package init(radio: any RadioLivenessSource, schedule: ScheduleHeartbeat, clock: any NodeClock) {
        self.radio = radio
        self.schedule = schedule
        self.clock = clock
    }

    package func check(within deadline: Duration) async -> RadioPathLiveness {
        let s = schedule.liveness(now: clock.monotonicTime().seconds)
        guard s.live else { return s }
        guard let answer = await askRadio(within: deadline) else {
            return RadioPathLiveness(live: false, reason: "the radio owner or its controller session did not answer within \(deadline)", unanswered: true)
        }
        return answer
    }

    /// The radio owner's answer, or nil when none came within `deadline`.
    private func askRadio(within deadline: Duration) async -> RadioPathLiveness? {
        let start = asking.withLock { inFlight -> Bool in
            guard !inFlight else { return false }
            inFlight = true
            return true
        }
        let reply = OneReply()
        return await withCheckedContinuation { continuation in
            reply.set(continuation)
            let timer = Task {
                try? await Task.sleep(for: deadline)
                reply.resume(nil)
            }
            guard start else { return } // the last question is still unanswered: wait out the deadline
            Task { [self] in
                let answer = await radio.liveness()
                asking.withLock { $0 = false }
                answeredOnce.withLock { $0 = true }
                timer.cancel()
                reply.resume(answer)
            }
        }
    }

    /// A continuation resumed once, by the answer or by the deadline, whichever comes first.
    private final class OneReply: Sendable {
        private let continuation = Mutex<CheckedContinuation<RadioPathLiveness?, Never>?>(nil)
        func set(_ c: CheckedContinuation<RadioPathLiveness?, Never>) { continuation.withLock { $0 = c } }
        func resume(_ value: RadioPathLiveness?) { continuation.withLock { $0.take() }?.resume(returning: value) }
    }
}

/// Feeds the systemd watchdog while the radio path is live (`RadioPathCheck`). A path that
/// is not live stops being fed, and systemd restarts gaend.
///
/// Start-up grace: until the radio owner's first answer, and for at most the watchdog's own
/// timeout (WatchdogSec) from start, an answer that is merely late does not stop the feeding
/// (it is said at notice level): a start on a loaded board may be slow to answer once. A start
/// that never answers is still caught: after the grace it is not fed, and systemd restarts
/// gaend at most two watchdog timeouts after it started. Once the owner has answered, every
/// late answer counts.
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
                let answer = await check.check(within: interval)
                if answer.live {
                    if (try? notifier.watchdog()) != nil { counters?.watchdogFed() }
                    if reported { logger.notice("the radio path is live again; feeding the watchdog") }
                    reported = false
                } else if answer.unanswered, !check.radioHasAnswered, ContinuousClock.now - started < grace {
                    try? notifier.watchdog()
                    if !graceSaid {
                        logger.notice("the radio owner has not answered yet since start; fed during the start-up grace",
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
