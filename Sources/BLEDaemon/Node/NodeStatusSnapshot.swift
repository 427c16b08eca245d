import ENProtocol
import HCIHost
import GaenStore

/// What the node reports through `Status` and its counters.
package struct NodeStatusSnapshot: Sendable, Equatable {
    package var enabled: Bool
    /// Never empty: `[.active]` when nothing else holds.
    package var status: [NodeCondition]
    package var advertisements: UInt64
    package var scans: UInt64
    package var sightings: UInt64
    /// Unix seconds on the node clock; nil before the first scan.
    package var lastScanEnd: Double?
    /// The radio owner's view: advertising and scanning on air (separate facts), rotations,
    /// failed operations, report counts and drops.
    package var radio: RadioOwner.Status
    /// What the store dropped or set aside (full-disk queue, quarantined records).
    package var storeLosses = StoreLosses()
    /// The clock-sync check's answer, with its source or reasons.
    package var clockSync = ""
    /// The controller as configured (`hci0`, `tcp:HOST:PORT`, ...); its facts are in `radio`.
    package var controller = ""
    /// The RPI on air now, in trial mode only (nil otherwise, and while nothing is on air).
    package var trialRPI: RollingProximityIdentifier?
    /// The exposure service is matching provided key files (a ProvideDiagnosisKeys now is Busy).
    package var matching = false
    /// ProvideDiagnosisKeys calls left today.
    package var provideRemaining: UInt32 = 0
    /// The calibration in use.
    package var calibration = NodeCalibration(txPower: 0, rssiCorrection: 0, confidence: .lowest)
    /// Seconds the beacon was on air, and wanted but off air, up to the reading.
    package var secondsOnAir: Double = 0
    package var secondsOffAir: Double = 0
    /// The watchdog's feeds, the matching runs.
    package var counters = NodeCounters.Values()
    /// Bytes of the store's files on disk.
    package var storeBytes: Int64 = 0
}
