import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import TrialTime

/// `--trial-clock FILE`, shared by the commands that take "now" or "today" from the clock
/// (`app sync`, `app submit`, `collect`, `keys publish`): in a rehearsal they read the trial's
/// time from the same file as gaend (`trial_clock:`), so every process agrees on the day.
/// Only wall times follow it: timeouts and retries stay real.
struct TrialClockOption: ParsableArguments {
    @Option(help: ArgumentHelp("A rehearsal's trial clock file (scale and epoch, docs/runbook.md): today and now are the trial's, as gaend's with the same file.",
                               valueName: "FILE"))
    var trialClock: String?

    /// The clock, read now (nil without the option); a file that cannot be used is the
    /// command's failure, with the file and the reason.
    func load() throws -> TrialClock? {
        guard let trialClock else { return nil }
        do { return try TrialClock.load(path: trialClock, now: Date().timeIntervalSince1970) } catch {
            throw CommandFailure("--trial-clock: \(error)")
        }
    }
}

extension Optional where Wrapped == TrialClock {
    /// Now, in the trial's time when there is a trial clock, else the real time.
    var now: Double {
        let real = Date().timeIntervalSince1970
        return self?.trialTime(real: real) ?? real
    }
}
