import ENProtocol

/// What the node reports through `Status` and its counters.
public struct NodeStatusSnapshot: Sendable, Equatable {
    public var enabled: Bool
    /// Never empty: `[.active]` when nothing else holds.
    public var status: [NodeCondition]
    public var advertisements: UInt64
    public var scans: UInt64
    public var sightings: UInt64
    /// Unix seconds on the node clock; nil before the first scan.
    public var lastScanEnd: Double?
    /// The radio owner's view: advertising and scanning on air (separate facts), rotations,
    /// failed operations, report counts and drops.
    public var radio: RadioOwner.Status
    /// What the store dropped or set aside (full-disk queue, quarantined records).
    public var storeLosses = StoreLosses()
    /// The clock-sync check's answer, with its source or reasons.
    public var clockSync = ""
    /// The controller as configured (`hci0`, `tcp:HOST:PORT`, ...); its facts are in `radio`.
    public var controller = ""
    /// The RPI on air now, in trial mode only (nil otherwise, and while nothing is on air).
    public var trialRPI: RollingProximityIdentifier?
    /// The exposure service is matching provided key files (a ProvideDiagnosisKeys now is Busy).
    public var matching = false
    /// ProvideDiagnosisKeys calls left today.
    public var provideRemaining: UInt32 = 0
    /// The calibration in use.
    public var calibration = NodeCalibration(txPower: 0, rssiCorrection: 0, confidence: .lowest)
    /// Seconds the beacon was on air, and wanted but off air, up to the reading.
    public var secondsOnAir: Double = 0
    public var secondsOffAir: Double = 0
    /// The watchdog's feeds, the matching runs.
    public var counters = NodeCounters.Values()
    /// Bytes of the store's files on disk.
    public var storeBytes: Int64 = 0
}
