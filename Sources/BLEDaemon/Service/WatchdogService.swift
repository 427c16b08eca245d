import Logging
import ServiceLifecycle
import Synchronization

/// One answer of the radio path's liveness check.
public struct RadioPathLiveness: Sendable, Equatable {
    public var live: Bool
    public var reason: String
}

/// The systemd watchdog's question: is the radio path live? It asks the schedule's heartbeat
/// (a lock, no await) and the radio owner (`RadioOwner.liveness`, which asks the controller
/// session), never the node or anything that can wait behind long work (matching,
/// exports, caller I/O). The owner's answer is awaited in a task of its own for at most a
/// deadline; a question still unanswered is not asked again, so a wedged radio path is
/// reported as such at every check until it answers.
public final class RadioPathCheck: Sendable {
    let radio: RadioOwner
    let schedule: ScheduleHeartbeat
    let clock: any NodeClock
    /// The question to the radio owner in flight, if any.
    private let asking = Mutex<Bool>(false)

    public init(radio: RadioOwner, schedule: ScheduleHeartbeat, clock: any NodeClock) {
        self.radio = radio
        self.schedule = schedule
        self.clock = clock
    }

    public func check(within deadline: Duration) async -> RadioPathLiveness {
        let s = schedule.liveness(now: clock.monotonicTime().seconds)
        guard s.live else { return s }
        guard let answer = await askRadio(within: deadline) else {
            return RadioPathLiveness(live: false, reason: "the radio owner or its controller session did not answer within \(deadline)")
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
public struct WatchdogService: Service {
    let check: RadioPathCheck
    let notifier: SystemdNotifier
    let logger: Logger
    /// Where each feed is counted (the node's status reports it).
    var counters: NodeCounters? = nil

    public func run() async throws {
        guard let interval = notifier.watchdogInterval else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            var reported = false
            while !Task.isCancelled {
                // An answer later than the next feed is due counts as no answer.
                let answer = await check.check(within: interval)
                if answer.live {
                    if (try? notifier.watchdog()) != nil { counters?.watchdogFed() }
                    if reported { logger.notice("the radio path is live again; feeding the watchdog") }
                    reported = false
                } else if !reported {
                    logger.critical("the radio path is not live; no longer feeding the watchdog", metadata: ["reason": "\(answer.reason)"])
                    reported = true
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
