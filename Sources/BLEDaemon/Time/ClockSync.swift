import Foundation
import HCIShim

/// Whether the system clock can be trusted for protocol time. Until it can, a board without
/// a real-time clock may believe it is 1970 or last week, and every RPI or sighting time it
/// produced would be useless or harmful, so the node neither advertises nor scans.
public enum ClockSyncStatus: Equatable, Sendable, CustomStringConvertible {
    /// The kernel or systemd-timesyncd says the clock is synchronised (the source says which).
    case synchronized(source: String)
    /// Nothing says the clock is synchronised.
    case unsynchronized(reason: String)
    /// The configuration waives the check (`--ignore-clock-sync`, a trial without network).
    case waived

    public var isUsable: Bool {
        switch self {
        case .synchronized, .waived: return true
        case .unsynchronized: return false
        }
    }

    public var description: String {
        switch self {
        case .synchronized(let s): return "synchronized (\(s))"
        case .unsynchronized(let r): return "unsynchronized: \(r)"
        case .waived: return "not checked (waived by configuration)"
        }
    }
}

/// Something that can tell whether the clock is synchronised; tests inject their own.
public protocol ClockSyncSource: Sendable {
    func status() -> ClockSyncStatus
}

/// Linux detection: the kernel's NTP state (adjtimex(): TIME_ERROR / STA_UNSYNC, set by any
/// NTP client that disciplines the kernel: chrony, ntpd, systemd-timesyncd) or the flag file
/// systemd-timesyncd touches once it has synchronised. Either one suffices.
public struct LinuxClockSync: ClockSyncSource {
    public var waived: Bool
    public var timesyncFlagPath: String

    public init(waived: Bool = false, timesyncFlagPath: String = "/run/systemd/timesync/synchronized") {
        self.waived = waived
        self.timesyncFlagPath = timesyncFlagPath
    }

    public func status() -> ClockSyncStatus {
        if waived { return .waived }
        let kernel = gaend_clock_kernel_synchronized()
        if kernel == 1 { return .synchronized(source: "kernel NTP state") }
        if FileManager.default.fileExists(atPath: timesyncFlagPath) {
            return .synchronized(source: timesyncFlagPath)
        }
        let kernelText = kernel == 0 ? "the kernel reports the clock unsynchronized (STA_UNSYNC)"
                                     : "adjtimex() failed with errno \(-kernel)"
        return .unsynchronized(reason: "\(kernelText) and \(timesyncFlagPath) does not exist")
    }
}

/// A fixed answer, for tests and simulations.
public struct FixedClockSync: ClockSyncSource {
    public var value: ClockSyncStatus
    public init(_ value: ClockSyncStatus) { self.value = value }
    public func status() -> ClockSyncStatus { value }
}
