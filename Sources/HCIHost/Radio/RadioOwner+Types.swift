import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol
import Logging
import Synchronization

/// What the radio owner is asked for, what it reports and how it is configured.
extension RadioOwner {
    /// What the owner is asked to keep on air.
    package struct Desired: Sendable, Equatable {
        package var beacon: Beacon?
        package var scanning = false
    }

    /// The controller connection as the owner sees it.
    package enum ControllerState: String, Sendable, Equatable {
        /// No session (not yet connected, or the controller is gone and being retried).
        case missing
        /// A session exists but is recovering (transport lost, hardware error).
        case error
        case active
    }

    /// A snapshot for status: what is wanted, what is on air, and the counters.
    package struct Status: Sendable, Equatable {
        package var controller: ControllerState = .missing
        /// What the connected controller reported at bring-up (version, manufacturer, public
        /// address); nil while there is no session.
        package var controllerInfo: ControllerInfo?
        /// Why there is no working session: the last bring-up failure or loss; nil once the
        /// controller answers.
        package var controllerProblem: String?
        package var advertisingWanted = false
        /// The controller confirmed advertising enabled with the wanted beacon.
        package var advertisingOnAir = false
        /// The random address currently advertised from, if any.
        package var advertisingAddress: BDAddress?
        package var scanningWanted = false
        /// The controller confirmed scanning enabled.
        package var scanningOnAir = false
        /// Beacons put on air (a restore of the same beacon after a reset does not count).
        package var rotations: UInt64 = 0
        /// Reconciles that failed (each was retried).
        package var failedOperations: UInt64 = 0
        /// Of those, the ones that left the wanted beacon off air (a rotation or a restore).
        package var failedRotations: UInt64 = 0
        /// Seconds on air and wanted but off air, up to the last published change.
        package var airTime = AirTimeLedger()
        /// A retry is pending: the controller does not match what is wanted.
        package var retrying = false
        /// Advertising reports received, of which without 0xFD6F service data (not kept).
        package var reportsReceived: UInt64 = 0
        package var reportsIgnored: UInt64 = 0
        /// Reports lost to full buffers: the session's stream, a scan's sighting buffer, the
        /// live stream of `gaenctl radio scan`.
        package var reportsDropped: UInt64 = 0
        package var scansCompleted: UInt64 = 0
        /// Times silent scanning was re-enabled or the controller restarted for it.
        package var stallRecoveries: UInt64 = 0
        /// Scanning hears nothing where it used to hear advertisers and the controller was
        /// restarted for it; nil again once a report arrives.
        package var scanRecovery: ScanRecovery?
        package init() {}
    }

    /// One episode of scanning that hears nothing (empty scans or silent continuous
    /// scanning where advertisers were heard): the controller restarts made for it, and when
    /// the next may follow. It ends with the first report the controller delivers.
    package struct ScanRecovery: Sendable, Equatable {
        /// What noticed it: "scans empty" or "scanning silent".
        package var reason: String
        /// Node monotonic seconds of the first restart.
        package var since: Double
        /// Controller restarts made in this episode.
        package var attempts: Int
        /// Of those, the ones after which scanning still heard nothing.
        package var failures: Int
        /// Node monotonic seconds before which no further restart is made (the backoff).
        package var nextAttempt: Double
    }

    package struct Configuration: Sendable {
        package var advertising = AdvertisingTiming()
        /// Scanning with no report for this long (node seconds), where the recent rhythm of
        /// reports makes that implausible, is re-enabled, then restarted with the controller.
        package var scanStallSeconds: Double = 30
        /// Real seconds between controller probes; an unanswered probe restarts it.
        package var controllerProbeInterval: Duration = .seconds(20)
        /// Sightings kept per scan; more are counted as dropped (a 300 s continuous record in
        /// a crowd stays bounded: 100,000 x 29 bytes in the store).
        package var maximumSightingsPerScan = 100_000
        /// Retry backoff in node seconds: first delay, doubling to the maximum.
        package var retryInitialSeconds: Double = 0.25
        package var retryMaximumSeconds: Double = 4
        /// A scan that went on air, or ended, more than this many node seconds after its
        /// planned time, or during which the owner's own timer woke this late, ran on a
        /// starved host: its silence is not held against the controller.
        package var lateToleranceSeconds: Double = 1
        /// Between controller restarts of one episode of silent scanning (node seconds).
        package var restartBackoff = RestartBackoff()
        package init() {}
    }
}
