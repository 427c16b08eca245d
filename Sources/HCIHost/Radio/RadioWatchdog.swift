#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol
import Logging
import PlatformSupport
import Synchronization

/// Notices continuous scanning that went silent. Real controllers (BCM43455 among them) stop
/// delivering reports without any error; "silent" means no report for far longer than the
/// recent report rhythm makes plausible. An empty environment never triggers it: without a
/// history of reports there is no rhythm to miss.
package struct ScanStallDetector: Sendable {
    /// Never call a stall shorter than this (seconds).
    package var minimumStall: Double
    /// A stall is this many mean gaps without a report.
    package var gapFactor: Double
    /// Reports needed before the rhythm is trusted.
    package var minimumHistory: Int
    private var gaps: [Double] = []
    private var lastReport: Double?

    package init(minimumStall: Double = 5, gapFactor: Double = 10, minimumHistory: Int = 8) {
        self.minimumStall = minimumStall
        self.gapFactor = gapFactor
        self.minimumHistory = minimumHistory
    }

    package mutating func report(at time: Double) {
        if let last = lastReport, time >= last {
            gaps.append(time - last)
            if gaps.count > 32 { gaps.removeFirst(gaps.count - 32) }
        }
        lastReport = time
    }

    /// The silence that counts as a stall now, or nil while the rhythm is unknown.
    package var stallThreshold: Double? {
        guard gaps.count >= minimumHistory else { return nil }
        return max(minimumStall, gapFactor * gaps.reduce(0, +) / Double(gaps.count))
    }

    package func isStalled(now: Double) -> Bool {
        guard let threshold = stallThreshold, let last = lastReport else { return false }
        return now - last > threshold
    }

    /// Starts a new silence window at `time` (after scanning was re-enabled or the controller
    /// restarted), keeping the learned rhythm.
    package mutating func restartWindow(at time: Double) { lastReport = time }
}

/// How one finished scan counts for `EmptyScanDetector`.
package enum ScanVerdict: Sendable, Equatable {
    /// The controller reported something during it: reports kept, reports still queued for
    /// the owner when it ended, or reports that reached the owner only after it ended.
    case heard
    /// It ran on time (on air from its start, ended when planned, the host not lagging) and
    /// the controller reported nothing: evidence of a deaf controller.
    case empty
    /// It ran late or short, or the host lagged during it: a starved host, not the
    /// controller, may explain its silence, so it proves nothing either way.
    case late
}

/// Notices periodic scans that keep coming back empty where scans used to see advertisers:
/// after `emptyRun` on-time empty scans in a row, when at least `busyNeeded` of the `history`
/// judged scans before them heard something. Scans that ran late neither count nor break the
/// run, but each one in the run asks for one more on-time empty scan (up to twice
/// `emptyRun`): a host late once may be late again. After a restart for deafness the busy
/// history is the episode's, so a restart that did not help is noticed by the next run alone
/// (`restarted()`), until a scan hears something again.
package struct EmptyScanDetector: Sendable {
    package var emptyRun: Int
    package var history: Int
    package var busyNeeded: Int
    /// Judged scans (true: heard), oldest first; late scans are not in it.
    private var judged: [Bool] = []
    /// Late scans since the last judged scan that heard something.
    private var lateInRun = 0
    /// The current run of empty scans followed a busy history (judged at its first scan).
    private var runFollowsBusy = false
    /// The controller was restarted for this episode and nothing has been heard since.
    package private(set) var afterRestart = false

    package init(emptyRun: Int = 3, history: Int = 6, busyNeeded: Int = 4) {
        self.emptyRun = emptyRun
        self.history = history
        self.busyNeeded = busyNeeded
    }

    /// On-time empty scans in a row needed now.
    package var needed: Int { emptyRun + min(emptyRun, lateInRun) }

    /// Records a finished scan; true when the controller looks deaf (the caller restarts it,
    /// then calls `restarted()`; until then every further empty scan says so again).
    package mutating func record(_ verdict: ScanVerdict) -> Bool {
        switch verdict {
        case .late:
            lateInRun += 1
            return false
        case .heard:
            append(true)
            lateInRun = 0
            afterRestart = false
            return false
        case .empty:
            append(false)
            let run = judged.reversed().prefix { !$0 }.count
            if run == 1 {
                let before = judged.dropLast(1).suffix(history)
                runFollowsBusy = before.count == history && before.filter { $0 }.count >= busyNeeded
            }
            return run >= needed && (afterRestart || runFollowsBusy)
        }
    }

    /// A report reached the owner after the last scan ended: that scan heard something.
    package mutating func heardLate() {
        if lateInRun > 0 {
            append(true)
        } else if let last = judged.indices.last, !judged[last] {
            judged[last] = true
        } else {
            return
        }
        lateInRun = 0
        afterRestart = false
    }

    /// The controller was restarted: the next decision needs a new run of empty scans.
    package mutating func restarted() {
        judged.removeAll()
        lateInRun = 0
        afterRestart = true
    }

    private mutating func append(_ heard: Bool) {
        judged.append(heard)
        let keep = history + 1
        if judged.count > keep { judged.removeFirst(judged.count - keep) }
    }
}

/// Backoff between controller restarts of one deafness episode, in node seconds: a restart
/// that did not bring reports back is retried, first after `initial`, doubling to `maximum`.
package struct RestartBackoff: Sendable, Equatable {
    package var initial: Double
    package var maximum: Double
    package init(initial: Double = 300, maximum: Double = 3600) {
        self.initial = initial
        self.maximum = maximum
    }
    /// The wait after restart number `attempt` (1-based) before the next may follow.
    package func delay(after attempt: Int) -> Double {
        min(maximum, initial * Double(1 << min(max(attempt - 1, 0), 30)))
    }
}

/// Probes the controller with a harmless command at a fixed period; when it does not answer,
/// restarts it (reconnect, Reset, bring-up), after which the owner restores advertising and
/// scanning from the session's `.reconnected` event.
package struct ControllerWatchdog: Sendable {
    package var probeInterval: Duration

    package init(probeInterval: Duration = .seconds(20)) { self.probeInterval = probeInterval }

    /// Runs until cancelled; `answered` after each probe the controller answered.
    package func run(session: HCIControllerSession, logger: Logger, answered: @Sendable () async -> Void = {}) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: probeInterval) } catch { return }
            do {
                _ = try await session.send(HCIReadBDAddr())
                await answered()
            } catch HCISessionError.commandTimedOut {
                logger.error("controller did not answer a probe; restarting it")
                await session.restart(reason: "controller silent")
            } catch {
                // Not running (recovering or stopped) or a transport loss the session handles.
            }
        }
    }
}

/// Whoever the watchdog's radio-path check asks: the radio owner (tests answer in its place,
/// late on demand). It marks how far the question got in `progress`, so that a question left
/// unanswered says where it waits.
package protocol RadioLivenessSource: Sendable {
    func liveness(progress: LivenessProgress) async -> RadioPathLiveness
}

/// How far one liveness question got, and when: written by whoever answers it, read by the
/// check when no answer came in time (a lock, never an await, so it is readable while the
/// answer is stuck).
package final class LivenessProgress: Sendable {
    package enum Stage: Sendable, Equatable, CustomStringConvertible {
        /// Asked; the radio owner has not begun it (its actor or the thread pool is busy).
        case asked
        /// The radio owner began it and asks its controller session.
        case waitingForSession
        /// The controller session answered; the owner is finishing the answer.
        case sessionAnswered

        package var description: String {
            switch self {
            case .asked: "the radio owner had not begun the question"
            case .waitingForSession: "the radio owner was waiting for its controller session"
            case .sessionAnswered: "the controller session had answered; the radio owner had not yet"
            }
        }
    }

    private let asked: ContinuousClock.Instant
    private let state: Mutex<(stage: Stage, at: ContinuousClock.Instant)>

    package init(asked: ContinuousClock.Instant = .now) {
        self.asked = asked
        state = Mutex((.asked, asked))
    }

    package func reached(_ stage: Stage) { state.withLock { $0 = (stage, .now) } }

    /// Where the question is and since how long after it was asked, for a log line.
    package var summary: String {
        let (stage, at) = state.withLock { $0 }
        guard stage != .asked else { return "\(stage)" }
        return "\(stage), since \(CFormat.fixed((at - asked).seconds, decimals: 3)) s after it was asked"
    }
}

/// One answer of the radio path's liveness check.
package struct RadioPathLiveness: Sendable, Equatable {
    package var live: Bool
    package var reason: String
    /// Not live because the radio owner gave no answer in time (not because it said so).
    package var unanswered = false

    package init(live: Bool, reason: String, unanswered: Bool = false) {
        self.live = live
        self.reason = reason
        self.unanswered = unanswered
    }
}
