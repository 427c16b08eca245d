import DBusCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import PlatformSupport
import HCIShim
import Synchronization

/// Linux detection, the first that answers:
/// 1. the kernel's NTP state (adjtimex(): TIME_ERROR / STA_UNSYNC, kept by any NTP client
///    that disciplines the kernel: chrony, ntpd, systemd-timesyncd);
/// 2. where adjtimex() is refused (the shipped unit's ProtectClock=yes denies the @clock
///    system calls, reads included), systemd-timedated's `NTPSynchronized` property over the
///    system bus: timedated reads the same kernel state outside our sandbox, so chrony and
///    ntpd count as well as timesyncd;
/// 3. the flag file systemd-timesyncd touches once it has synchronised.
package struct LinuxClockSync: ClockSyncSource {
    package var waived: Bool
    /// What waived the check, for status and the journal.
    package var waivedBy: String
    package var timesyncFlagPath: String
    /// Asked only when adjtimex() is refused; nil: not asked.
    package var timedated: TimedatedClockSync?
    /// The kernel reading (1 synchronised, 0 not, -errno): injectable for tests.
    var kernelState: @Sendable () -> Int32

    package init(waived: Bool = false, waivedBy: String = "configuration", timesyncFlagPath: String = "/run/systemd/timesync/synchronized",
                timedated: TimedatedClockSync? = nil) {
        self.waived = waived
        self.waivedBy = waivedBy
        self.timesyncFlagPath = timesyncFlagPath
        self.timedated = timedated
        kernelState = { gaend_clock_kernel_synchronized() }
    }

    init(kernelState: @escaping @Sendable () -> Int32, timedated: TimedatedClockSync?, timesyncFlagPath: String) {
        waived = false
        waivedBy = "configuration"
        self.timesyncFlagPath = timesyncFlagPath
        self.timedated = timedated
        self.kernelState = kernelState
    }

    /// Under the shipped unit adjtimex() is refused (ProtectClock=yes): wait for timedated's
    /// first answer (a few milliseconds; at most `timeout`), else the first check would log
    /// "clock not synchronized" only because timedated had not been asked yet.
    package func prepare() async {
        guard !waived, kernelState() < 0, let timedated else { return }
        await timedated.firstAnswer(timeout: .seconds(5))
    }

    package func status() -> ClockSyncStatus {
        if waived { return .waived(by: waivedBy) }
        let kernel = kernelState()
        if kernel == 1 { return .synchronized(source: "kernel NTP state") }
        var reasons = [kernel == 0 ? "the kernel reports the clock unsynchronized (STA_UNSYNC)" : "adjtimex() failed with errno \(-kernel)"]
        var timedatedSilent = false
        if kernel < 0, let timedated {
            switch timedated.answer() {
            case .synchronized: return .synchronized(source: "systemd-timedated (NTPSynchronized)")
            case .unsynchronized: reasons.append("systemd-timedated reports NTPSynchronized=false")
            case .unknown(let why): reasons.append("systemd-timedated: \(why)")
            case .pending(let why):
                reasons.append("systemd-timedated: \(why)")
                timedatedSilent = true
            }
        }
        if FileManager.default.fileExists(atPath: timesyncFlagPath) {
            return .synchronized(source: timesyncFlagPath)
        }
        reasons.append("\(timesyncFlagPath) does not exist")
        // Without adjtimex timedated is the one source that knows; the flag file exists only
        // where timesyncd (not chrony or ntpd) keeps the clock.
        return timedatedSilent ? .unknown(reason: reasons.joined(separator: "; ")) : .unsynchronized(reason: reasons.joined(separator: "; "))
    }
}

/// systemd-timedated's view of the clock (org.freedesktop.timedate1, property
/// NTPSynchronized), asked in the background and cached, so `status()` never waits on the
/// bus: the schedule calls it every few seconds on the radio's path.
package final class TimedatedClockSync: @unchecked Sendable {
    package enum Answer: Equatable, Sendable {
        case synchronized, unsynchronized
        /// timedated cannot be asked (not on the bus, a refused or malformed answer).
        case unknown(String)
        /// Not asked yet, or the call timed out (bus activation under load): an answer may come.
        case pending(String)
    }

    private let bus: BusAddress
    private let interval: Duration
    static let notAsked = "not asked yet"
    /// The latest answer and the background task that asks.
    private let state = Mutex<(cached: Answer, task: Task<Void, Never>?)>((.pending(TimedatedClockSync.notAsked), nil))

    private let callTimeout: Duration

    /// `bus` is where timedated lives (the system bus); asked every `interval`, each call
    /// given up after `callTimeout`.
    package init(bus: BusAddress = .system, interval: Duration = .seconds(10), callTimeout: Duration = .seconds(5)) {
        self.bus = bus
        self.interval = interval
        self.callTimeout = callTimeout
    }

    deinit { state.withLock { $0.task?.cancel() } }

    /// The latest answer; the first call starts the background asking.
    package func answer() -> Answer {
        state.withLock { state in
            if state.task == nil { state.task = Task.detached { [weak self] in await self?.run() } }
            return state.cached
        }
    }

    package func stop() { state.withLock { $0.task?.cancel() } }

    /// Starts asking (if not yet) and returns once there is an answer, or after `timeout`.
    package func firstAnswer(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while answer() == .pending(Self.notAsked), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func set(_ a: Answer) { state.withLock { $0.cached = a } }

    private func run() async {
        var connection: BusConnection?
        while !Task.isCancelled {
            do {
                if connection == nil || connection?.isOpen == false {
                    connection = try await Self.connect(bus)
                }
                let reply = try await connection!.call(.methodCall(
                    destination: "org.freedesktop.timedate1", path: "/org/freedesktop/timedate1",
                    interface: "org.freedesktop.DBus.Properties", member: "Get",
                    body: [.string("org.freedesktop.timedate1"), .string("NTPSynchronized")]), timeout: callTimeout)
                if case .variant(.boolean(let b))? = reply.body.first {
                    set(b ? .synchronized : .unsynchronized)
                } else {
                    set(.unknown("NTPSynchronized has signature \(reply.signature), expected v(b)"))
                }
            } catch {
                let timedOut = (error as? DBusNamedError).map { ["org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.TimedOut"].contains($0.name) } ?? false
                set(timedOut ? .pending("\(error)") : .unknown("\(error)"))
                connection?.close()
                connection = nil
                // Bus activation of timedated can take seconds on a loaded board: ask again
                // soon rather than keep the node silent for a whole interval.
                try? await Task.sleep(for: min(interval, .seconds(1)))
                continue
            }
            try? await Task.sleep(for: interval)
        }
        connection?.close()
    }

    /// Connecting blocks for the Hello round trip: done on its own thread, not the pool's.
    private static func connect(_ bus: BusAddress) async throws -> BusConnection {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<BusConnection, any Error>) in
            NamedThread.start("gaend.clocksync") {
                c.resume(with: Result { () throws(DBusBindingError) -> BusConnection in try BusConnection.connect(bus) }.mapError { $0 as any Error })
            }
        }
    }
}
