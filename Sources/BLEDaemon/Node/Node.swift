import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import HCIProtocol
import Logging

/// The calibration in use (SetCalibration's or the config's).
public typealias NodeCalibration = (txPower: Int, rssiCorrection: Int, confidence: CalibrationConfidence)

/// A finished scan as the research signal carries it.
public struct FinishedScan: Sendable {
    public var record: RecordedScan
}

/// Callbacks from the node to whoever publishes its state (the D-Bus service).
public protocol NodeObserver: Sendable {
    func statusChanged() async
    func scanFinished(_ scan: RecordedScan) async
    func exposureStateUpdated(token: String, matchedKeys: Int, windows: Int, error: String) async
}

/// The node: the composition the services share. It holds the settings, the clock, the store,
/// the calibration and the node state, is the schedule's effects (rotate, scan, record) on the
/// radio owner it is given (owned and started by `RadioService`), and is what the D-Bus
/// handlers call. The services start and stop its parts (docs/architecture.md).
public actor GaenNode: ScheduleEffects {
    public nonisolated let settings: GaendSettings
    public nonisolated let clock: any NodeClock
    public nonisolated let sync: any ClockSyncSource
    public nonisolated let store: NodeStore
    let logger: Logger
    let stateFile: NodeStateFile
    var state: NodeState
    private let controllerAddress: ControllerAddress
    private var observer: (any NodeObserver)?

    /// The one owner of the controller's LE state (advertising, scanning, address), owned and
    /// started by `RadioService`; the node drives it through the schedule's effects.
    public nonisolated let radio: RadioOwner
    private var radioStatus = RadioOwner.Status()
    /// The last beacon made; its RPI is what is on air while its address is (status, trial mode).
    private var lastBeacon: GAENBeacon?

    // Schedule.
    private var driverTask: Task<Void, Never>?

    // Storage and counters.
    private var storageProblem: String?
    private(set) var advertisements: UInt64 = 0
    private(set) var scans: UInt64 = 0
    private(set) var sightings: UInt64 = 0
    private(set) var lastScanEnd: Double?
    private var clockUsable = false
    /// The wall time that has held, for retention (HeldTime, docs/schedule.md).
    private var heldTime: HeldTime
    /// Set while the clock says a day whose key is gone (it was stepped back): off air.
    private var retiredDay: UTCDay?

    // Matching (one ProvideDiagnosisKeys at a time).
    var matching = false
    /// How many of the stored key files the call being matched provided (they come last).
    var callFiles = 0
    /// Provided key files, parsed once (matching does not parse them again).
    public nonisolated let keyFiles = KeyFileCache()
    /// Whether the schedule runs and acts, read by the watchdog without awaiting the node.
    public nonisolated let heartbeat: ScheduleHeartbeat
    /// `clock` and `sync` default to what the settings say (tests pass a manual clock); `radio`
    /// must run on the same clock (`RadioService.makeRadio`).
    public init(settings: GaendSettings, logger: Logger, clock: (any NodeClock)? = nil, sync: (any ClockSyncSource)? = nil,
                radio: RadioOwner) throws {
        let s = settings.effective
        self.settings = s
        self.logger = logger
        self.clock = try clock ?? s.makeClock()
        self.sync = sync ?? s.makeClockSync()
        do { controllerAddress = try ControllerAddress(parsing: s.controller) } catch {
            throw NodeError.invalidArgs("controller: \(error)")
        }
        try FileManager.default.createDirectory(atPath: s.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let statePath = s.stateDirectory.appendingPathComponent("node-state.json")
        stateFile = NodeStateFile(path: statePath)
        var loaded = try NodeState.load(path: statePath)
        if loaded.reconcileCalibration(with: s.calibration) {
            logger.notice("the config's calibration changed since SetCalibration was called; the config's applies",
                          metadata: ["tx_power": "\(s.calibration.txPower)", "rssi_correction": "\(s.calibration.rssiCorrection)",
                                     "calibration_confidence": "\(s.calibration.calibrationConfidence.rawValue)"])
            do { try loaded.save(path: statePath) } catch {
                throw NodeError.storage("cannot save node state: \(BLEDaemon.fileErrorText(error))")
            }
        }
        state = loaded
        heartbeat = ScheduleHeartbeat(rotationMaxMinutes: s.advertising.rotationMaxMinutes)
        heartbeat.wanted(loaded.enabled)
        let key = try StoreKey.load(keyFile: s.storeKeyFile)
        store = try NodeStore(configuration: StoreConfiguration(settings: s), key: key, logger: logger)
        clockUsable = self.sync.status().isUsable
        self.radio = radio
        do {
            heldTime = HeldTime(highWater: try store.highWaterMark(), stepBound: s.clock.stepBoundHours * 3_600,
                                confirmation: s.clock.stepConfirmationMinutes * 60)
        } catch { throw NodeError.storage("cannot read the store's clock mark: \(error)") }
    }

    public func setObserver(_ observer: any NodeObserver) { self.observer = observer }

    /// The radio service's start, once the radio owner runs: the schedule, when the node is
    /// enabled (Start/Stop start and stop it later).
    public func startScheduleIfEnabled() {
        if state.enabled { startSchedule() }
    }

    /// The radio owner's state changed (RadioService wires this).
    func radioChanged() async {
        radioStatus = await radio.snapshot
        await notifyStatus()
    }

    /// What the radio and store services stop, in reverse start order (tests, and gaend before
    /// its services run; matching runs belong to the exposure service, `ExposureRuns`).
    public func shutdown() async {
        await stopSchedule()
        closeStore()
    }


    /// The store's stop, last: what is pending is flushed, then the database closes.
    public func closeStore() {
        do {
            _ = try store.flushPending()
            try store.close()
        } catch {
            logger.error("closing the store failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Enable / disable

    public func enable() async throws {
        heartbeat.wanted(true)
        if !state.enabled {
            state.enabled = true
            try await saveState()
        }
        if driverTask == nil { startSchedule() }
        await notifyStatus()
    }

    public func disable() async throws {
        heartbeat.wanted(false)
        if state.enabled {
            state.enabled = false
            try await saveState()
        }
        await stopSchedule()
        await notifyStatus()
    }

    private func startSchedule() {
        guard driverTask == nil else { return }
        let schedule: NodeSchedule
        do { schedule = try NodeSchedule(settings: settings) } catch {
            logger.error("invalid schedule settings", metadata: ["error": "\(error)"])
            return
        }
        let driver = ScheduleDriver(schedule: schedule, clock: clock, sync: sync, effects: self,
                                    syncCheckInterval: 5, logger: logger)
        heartbeat.driverStarted()
        driverTask = Task { [heartbeat] in
            do { try await driver.run() } catch {
                self.logger.error("schedule stopped", metadata: ["error": "\(error)"])
            }
            heartbeat.driverEnded()
        }
    }

    /// Stops the schedule: the scan in progress recorded, advertising off (through the radio
    /// owner, which the radio service stops next), the clock mark kept.
    public func stopSchedule() async {
        if let task = driverTask {
            task.cancel()
            await task.value
            driverTask = nil
        }
        if let mark = heldTime.highWater { try? store.raiseHighWaterMark(to: mark) }
    }

    /// Saves the state as it is now, off the node actor (NodeStateFile).
    func saveState() async throws {
        let state = self.state, ticket = stateFile.ticket()
        do { try await stateFile.save(state, ticket: ticket) } catch {
            throw NodeError.storage("cannot save node state: \(BLEDaemon.fileErrorText(error))")
        }
    }

    // MARK: Status

    public var snapshot: NodeStatusSnapshot {
        NodeStatusSnapshot(enabled: state.enabled, status: statusList, advertisements: advertisements,
                           scans: scans, sightings: sightings, lastScanEnd: lastScanEnd, radio: radioStatus,
                           storeLosses: store.losses(), clockSync: sync.status().description,
                           controller: controllerAddress.description, trialRPI: trialRPI, matching: matching)
    }

    /// The RPI on air, for technicians checking a board with a scanner; RPIs are public (they
    /// are on air), but the issue keeps them out of status outside trial mode.
    private var trialRPI: RollingProximityIdentifier? {
        guard settings.trial, let b = lastBeacon, let onAir = radioStatus.advertisingAddress, b.beacon.address == onAir else { return nil }
        return b.rpi
    }

    var statusList: [NodeCondition] {
        var list: [NodeCondition] = []
        if !state.enabled { list.append(.inactive) }
        if !clockUsable { list.append(.clockUnsynchronised) } else if heldTime.suspect || retiredDay != nil { list.append(.clockSuspect) }
        switch radioStatus.controller {
        case .missing: list.append(.controllerMissing)
        case .error: list.append(.controllerError)
        case .active:
            // Wanted on air but not there (a retry is running): said, never hidden behind
            // "active".
            if radioStatus.advertisingWanted && !radioStatus.advertisingOnAir { list.append(.advertisingOffAir) }
            if radioStatus.scanningWanted && !radioStatus.scanningOnAir { list.append(.scanningOffAir) }
        }
        if store.isFull { list.append(.storageFull) } else if storageProblem != nil { list.append(.storageError) }
        if list.isEmpty { list.append(.active) }
        return list
    }

    func notifyStatus() async { await observer?.statusChanged() }

    /// The current calibration: SetCalibration's values while the config's calibration is the
    /// one they were set over, else the config's (NodeState.reconcileCalibration).
    public var calibration: NodeCalibration {
        (state.txPower ?? settings.calibration.txPower,
         state.rssiCorrection ?? settings.calibration.rssiCorrection,
         state.calibrationConfidence.flatMap(CalibrationConfidence.init(rawValue:)) ?? settings.calibration.calibrationConfidence)
    }

    var metadata: BluetoothMetadata {
        let c = calibration
        return settings.calibration.metadataMinorVersion == 0
            ? .v1_0(txPower: Int8(clamping: c.txPower))
            : .v1_1(txPower: Int8(clamping: c.txPower), calibrationConfidence: c.confidence)
    }

    public func setCalibration(txPower: Int, rssiCorrection: Int, confidence: Int) async throws {
        guard (-127...127).contains(txPower) else { throw NodeError.invalidArgs("tx_power \(txPower) is outside -127...127 dBm") }
        guard (-127...127).contains(rssiCorrection) else { throw NodeError.invalidArgs("rssi_correction \(rssiCorrection) is outside -127...127 dB") }
        guard CalibrationConfidence(rawValue: confidence) != nil else { throw NodeError.invalidArgs("confidence \(confidence) is outside 0...3") }
        state.txPower = txPower
        state.rssiCorrection = rssiCorrection
        state.calibrationConfidence = confidence
        state.calibrationBasis = NodeState.CalibrationBasis(settings.calibration)
        try await saveState()
        await notifyStatus()
    }

    // MARK: Schedule effects

    public func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        // How long after the schedule read the clock the node got to act (node seconds): work
        // that held the node up (it must not: matching, exports and caller I/O run beside it)
        // shows here. A second late is a fault worth a warning; every delay is at debug level.
        let delay = clock.monotonicTime().seconds - reading.monotonic
        heartbeat.acted(at: clock.monotonicTime().seconds, clockUsable: reading.synchronized)
        if delay > 1 {
            logger.warning("schedule action ran late", metadata: ["actions": "\(actions)", "late.seconds": "\(CFormat.fixed(delay, decimals: 3))"])
        } else {
            logger.debug("schedule action", metadata: ["actions": "\(actions)", "late.seconds": "\(CFormat.fixed(delay, decimals: 3))"])
        }
        if clockUsable != reading.synchronized {
            clockUsable = reading.synchronized
            await notifyStatus()
        }
        if reading.synchronized { await observeHeldTime(reading) }
        await radioEffects.perform(actions, at: reading)
        await notifyStatus()
    }

    public func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        await perform([action], at: reading)
    }

    /// Follows the wall clock into the held-time mark; says so when it becomes or stops being
    /// suspect.
    private func observeHeldTime(_ reading: ClockReading) async {
        let wasSuspect = heldTime.suspect
        _ = heldTime.observe(wall: reading.wall, monotonic: reading.monotonic)
        guard heldTime.suspect != wasSuspect else { return }
        if heldTime.suspect {
            logger.warning("the clock jumped far ahead of the latest time that held: retention waits until the new time holds",
                           metadata: ["clock.wall": "\(reading.wall)", "clock.heldTime": "\(heldTime.highWater ?? 0)",
                                      "clock.confirmationMinutes": "\(settings.clock.stepConfirmationMinutes)"])
        } else {
            logger.notice("the clock's new time has held (or came back): retention follows it",
                          metadata: ["clock.heldTime": "\(heldTime.highWater ?? 0)"])
        }
        await notifyStatus()
    }

    /// Store writes (each a transaction with a FULL fsync) run on a thread of their own, never
    /// on a cooperative thread: the node awaits them, the pool's few threads go on.
    static func onStoreThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await OwnThread.run("gaend.store") { _ in try body() }
    }

    /// The radio effects gaend runs (the same as `gaenctl radio` and the benchmark): beacons
    /// from the day's key in the store, finished scans into the store.
    private nonisolated var radioEffects: RadioScheduleEffects {
        RadioScheduleEffects(radio: radio,
                             beacon: { [weak self] slot, reading in await self?.beacon(for: slot, now: reading.wall) },
                             scanned: { [weak self] scan in await self?.record(scan) })
    }

    /// The beacon of `slot`: the day's key from the store (created on first need), the RPI of
    /// the slot's interval, a fresh address. Nil keeps what is on air (or, for a day whose
    /// key is retired, takes it off air).
    private func beacon(for slot: AdvertisingSlot, now: Double) async -> GAENBeacon? {
        if let mark = heldTime.highWater {
            do { try store.raiseHighWaterMark(to: mark) } catch {
                logger.warning("cannot store the clock mark", metadata: ["error": "\(error)"])
            }
        }
        let store = self.store, trusted = heldTime.trustedNow(wall: now)
        _ = try? await Self.onStoreThread { try store.applyRetention(now: trusted) }
        let tek: TemporaryExposureKey
        do {
            tek = try await Self.onStoreThread { try store.key(for: slot.day, now: now) }
            retiredDay = nil
        } catch StoreError.keyDayRetired(let day) {
            // The clock went back into a day whose key is gone: advertising another day's RPI
            // would be wrong and a second key for the day is never made, so go off air.
            if retiredDay == nil {
                logger.error("\(StoreError.keyDayRetired(day: day))")
            }
            retiredDay = slot.day
            await radio.stopAdvertising()
            return nil
        } catch {
            // Keep what is on air: a node that cannot store a new day's key must not
            // advertise a key it could not report later.
            storageProblem = "\(error)"
            logger.error("cannot get the day's key; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
        do {
            var random = SecureRandom()
            let beacon = try GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: metadata, random: &random)
            advertisements += 1
            lastBeacon = beacon
            logger.debug("rotating", metadata: ["slot": "\(slot)"])
            return beacon
        } catch {
            logger.error("cannot make the beacon; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func record(_ scan: RecordedScan) async {
        let record = RecordedScan(start: scan.start, end: scan.end, sightings: scan.sightings, rssiCorrection: calibration.rssiCorrection)
        scans += 1
        sightings += UInt64(record.sightings.count)
        lastScanEnd = scan.end
        do {
            let store = self.store
            _ = try await Self.onStoreThread { try store.recordScan(record) }
            if storageProblem != nil {
                storageProblem = nil
                logger.info("storing resumed")
            }
        } catch {
            if storageProblem == nil { logger.error("cannot store the scan", metadata: ["error": "\(error)"]) }
            storageProblem = "\(error)"
        }
        await observer?.scanFinished(record)
        radioStatus = await radio.snapshot
    }
}
