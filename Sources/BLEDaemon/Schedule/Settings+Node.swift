import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import NodeConfig
import PlatformSupport
import GaenStore
import TrialTime

/// From the configuration (GaendSettings) to the node core's policies: one place where
/// settings become the schedule, the store configuration, the clock and the sync check.
extension NodeSchedule {
    package init(settings: GaendSettings) throws {
        let a = settings.advertising
        let rotation = try RotationPolicy(minimumSeconds: a.rotationMinMinutes * 60, maximumSeconds: a.rotationMaxMinutes * 60)
        let s = settings.scanning
        let cadence: ScanCadence
        switch s.mode {
        case .random: cadence = .randomPeriod(s.periodMinSeconds...max(s.periodMinSeconds, s.periodMaxSeconds))
        case .fixed: cadence = .fixedPeriod(s.fixedPeriodSeconds)
        case .continuous: cadence = .continuous
        }
        self.init(rotation: rotation, scan: try ScanPolicy(duration: s.durationSeconds, cadence: cadence))
    }
}

extension StoreConfiguration {
    /// The store file is `store.sqlite` in the state directory.
    package init(settings: GaendSettings) {
        self.init(path: settings.stateDirectory.appendingPathComponent("store.sqlite"),
                  retentionDays: settings.store.retentionDays,
                  maximumBytes: settings.store.maxSizeMB > 0 ? Int64(settings.store.maxSizeMB) << 20 : nil,
                  maximumPendingBytes: settings.store.maxPendingMB << 20)
    }
}

extension GaendSettings {
    /// The clock the whole node runs on: the system clock, `--time-scale N` times faster, or a
    /// rehearsal's trial clock (its file read now, its checks as of the system's wall time).
    package func makeClock(base: any NodeClock = SystemClock()) throws -> any NodeClock {
        if let trialClockFile {
            guard timeScale == 1 else { throw ConfigError.invalid(setting: "trial_clock", reason: "give a trial clock or a time scale, not both: the trial clock has its own scale") }
            return ScaledClock(trialClock: try TrialClock.load(path: trialClockFile, now: base.wallTime()), base: base)
        }
        return timeScale == 1 ? SystemClock() : try ScaledClock(factor: timeScale)
    }

    /// The clock-sync check; `clock.requireSync: false` (`--ignore-clock-sync`) waives it. A
    /// scaled clock (a time scale or a trial clock) is never the system time, so it waives the
    /// check too.
    package func makeClockSync() -> any ClockSyncSource {
        let by = trialClockFile.map { "trial clock \($0)" } ?? (timeScale != 1 ? "--time-scale \(CFormat.string("%g", timeScale))"
            : "configuration: clock.require_sync false or --ignore-clock-sync")
        let scaled = timeScale != 1 || trialClockFile != nil
        return LinuxClockSync(waived: !clock.requireSync || scaled, waivedBy: by, timedated: TimedatedClockSync())
    }
}

extension RadioOwner.Configuration {
    /// Advertising interval, the scan stall limit and the controller probe period from the
    /// configuration (a controller silent for `controller_silence_seconds` is restarted: it is
    /// probed three times in that span).
    package init(settings: GaendSettings) {
        self.init()
        advertising = AdvertisingTiming(intervalMinMs: settings.advertising.intervalMinMs, intervalMaxMs: settings.advertising.intervalMaxMs)
        scanStallSeconds = settings.watchdog.scanStallSeconds
        controllerProbeInterval = .milliseconds(Int64(max(5, settings.watchdog.controllerSilenceSeconds / 3) * 1000))
    }
}
