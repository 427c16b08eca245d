#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol
import Logging

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

/// Notices periodic scans that keep coming back empty where scans used to see advertisers:
/// after `emptyRun` empty scans in a row, when at least `busyNeeded` of the `history` scans
/// before them saw something.
package struct EmptyScanDetector: Sendable {
    package var emptyRun: Int
    package var history: Int
    package var busyNeeded: Int
    private var counts: [Int] = []

    package init(emptyRun: Int = 3, history: Int = 6, busyNeeded: Int = 4) {
        self.emptyRun = emptyRun
        self.history = history
        self.busyNeeded = busyNeeded
    }

    /// Records a finished scan's report count; true when the controller should be restarted.
    package mutating func record(reports: Int) -> Bool {
        counts.append(reports)
        if counts.count > emptyRun + history { counts.removeFirst(counts.count - emptyRun - history) }
        guard counts.count == emptyRun + history else { return false }
        let recent = counts.suffix(emptyRun), before = counts.prefix(history)
        guard recent.allSatisfy({ $0 == 0 }), before.filter({ $0 > 0 }).count >= busyNeeded else { return false }
        counts.removeAll() // one restart per episode; the history is learned again
        return true
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
/// late on demand).
package protocol RadioLivenessSource: Sendable {
    func liveness() async -> RadioPathLiveness
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
