import DBusCore
import GaendAPI
import ENProtocol
import Foundation
import HCIProtocol
import Logging

/// Failures of node operations, each mapped to a named D-Bus error (docs/dbus.md).
public enum NodeError: Error, CustomStringConvertible, DBusErrorConvertible {
    case notAuthorized(String)
    case rateLimited(String)
    case invalidKeyFile(String)
    case untrustedKeyFile(String)
    case limitExceeded(String)
    case busy(String)
    case controllerMissing(String)
    case clockUnsynchronised(String)
    case storage(String)
    case writeFailed(String)
    /// A caller's descriptor moved no data within the limit (docs/dbus.md, "Descriptors").
    case timeout(String)
    case invalidArgs(String)
    case internalFailure(String)

    public var description: String { dbusError.message }

    public var dbusError: DBusNamedError {
        typealias E = GaendInterfaces.ErrorName
        switch self {
        case .notAuthorized(let m): return DBusNamedError(name: E.notAuthorized, message: m)
        case .rateLimited(let m): return DBusNamedError(name: E.rateLimited, message: m)
        case .invalidKeyFile(let m): return DBusNamedError(name: E.invalidKeyFile, message: m)
        case .untrustedKeyFile(let m): return DBusNamedError(name: E.untrustedKeyFile, message: m)
        case .limitExceeded(let m): return DBusNamedError(name: E.limitExceeded, message: m)
        case .busy(let m): return DBusNamedError(name: E.busy, message: m)
        case .controllerMissing(let m): return DBusNamedError(name: E.controllerMissing, message: m)
        case .clockUnsynchronised(let m): return DBusNamedError(name: E.clockUnsynchronised, message: m)
        case .storage(let m): return DBusNamedError(name: E.storageError, message: m)
        case .writeFailed(let m): return DBusNamedError(name: E.writeFailed, message: m)
        case .timeout(let m): return DBusNamedError(name: E.timeout, message: m)
        case .invalidArgs(let m): return DBusNamedError(name: E.invalidArgs, message: m)
        case .internalFailure(let m): return DBusNamedError(name: E.failed, message: m)
        }
    }
}

/// What the node reports through `Status` and its counters.
public struct NodeStatusSnapshot: Sendable, Equatable {
    public var enabled: Bool
    public var status: [String]
    public var advertisements: UInt64
    public var scans: UInt64
    public var sightings: UInt64
    /// Unix seconds on the node clock; nil before the first scan.
    public var lastScanEnd: Double?
    /// What the store dropped or set aside (full-disk queue, quarantined records).
    public var storeLosses = StoreLosses()
    /// The clock-sync check's answer, with its source or reasons.
    public var clockSync = ""
}

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

/// The node: owns the controller session, the store, the key schedule and the radio for one
/// controller, and is what the D-Bus handlers call.
///
/// Start order: store (a wrong key stops the daemon here, before anything runs), the
/// controller (in the background: a missing controller is a status, retried), the schedule
/// (rotation with the day's TEK from the store, scan cadence from the policy). Stop order:
/// schedule (records the scan in progress, stops advertising), controller, store.
public actor GaenNode: ScheduleEffects {
    public nonisolated let settings: GaendSettings
    public nonisolated let clock: any NodeClock
    public nonisolated let sync: any ClockSyncSource
    public nonisolated let store: NodeStore
    let logger: Logger
    let statePath: String
    var state: NodeState
    private let controllerAddress: ControllerAddress
    /// The HCI capture (`--capture`), shared by every reconnect.
    private let capture: BTSnoopWriter?
    private var observer: (any NodeObserver)?

    // Radio, present while a controller session is up.
    private var session: HCIControllerSession?
    private var advertiser: BeaconAdvertiser?
    private var scanner: Scanner?
    private var controllerTask: Task<Void, Never>?
    private var controllerStatus = GaendStatus.controllerMissing
    /// The beacon the schedule put up last, shown again on a new controller session.
    private var currentBeacon: Beacon?
    private var advertisingWanted = false

    // Schedule.
    private var driverTask: Task<Void, Never>?
    /// The scan in progress: the scanner it runs on (which may since have been detached with
    /// its controller; stopping it still ends the report stream) and the collecting task.
    private var scanInProgress: (scanner: Scanner, collector: Task<[TimedReport], Never>)?

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
    /// False once the schedule driver's loop has returned (watchdog liveness).
    private var driverRunning = false
    private func driverEnded() { driverRunning = false }
    /// Monotonic node time of the last schedule action performed (watchdog liveness).
    private var lastAction: Double?
    /// The matching run in progress: cancelled and awaited at shutdown, before the store closes.
    private var matchingTask: Task<Void, Never>?

    /// Starts matching the accepted files (see `runMatching`) and reports its end.
    public func beginMatching(report: @escaping @Sendable (Result<(matchedKeys: Int, windows: Int), Error>) async -> Void) {
        logger.info("matching started", metadata: ["files.call": "\(callFiles)"])
        matchingTask = Task {
            do { await report(.success(try await self.runMatching())) } catch { await report(.failure(error)) }
        }
    }

    /// `clock` and `sync` default to what the settings say (tests pass a manual clock).
    public init(settings: GaendSettings, logger: Logger, clock: (any NodeClock)? = nil, sync: (any ClockSyncSource)? = nil) throws {
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
        statePath = (s.stateDirectory as NSString).appendingPathComponent("node-state.json")
        var loaded = try NodeState.load(path: statePath)
        if loaded.reconcileCalibration(with: s.calibration) {
            logger.notice("the config's calibration changed since SetCalibration was called; the config's applies",
                          metadata: ["tx_power": "\(s.calibration.txPower)", "rssi_correction": "\(s.calibration.rssiCorrection)",
                                     "calibration_confidence": "\(s.calibration.calibrationConfidence.rawValue)"])
            do { try loaded.save(path: statePath) } catch {
                throw NodeError.storage("cannot save node state: \(error.localizedDescription)")
            }
        }
        state = loaded
        do { capture = try s.capture.map { try BTSnoopWriter(settings: $0) } } catch {
            throw NodeError.invalidArgs("capture \(s.capture?.path ?? ""): \(error)")
        }
        let key = try StoreKey.load(keyFile: s.storeKeyFile)
        store = try NodeStore(configuration: StoreConfiguration(settings: s), key: key, logger: logger)
        clockUsable = self.sync.status().isUsable
        do {
            heldTime = HeldTime(highWater: try store.highWaterMark(), stepBound: s.clock.stepBoundHours * 3_600,
                                confirmation: s.clock.stepConfirmationMinutes * 60)
        } catch { throw NodeError.storage("cannot read the store's clock mark: \(error)") }
    }

    public func setObserver(_ observer: any NodeObserver) { self.observer = observer }

    /// Starts the controller (in the background) and, when enabled, the schedule.
    public func start() {
        controllerTask = Task { await self.controllerLoop() }
        if state.enabled { startSchedule() }
    }

    /// Everything `NodeServices` stops one by one, in reverse start order (tests, and gaend
    /// before its services run).
    public func shutdown() async {
        await stopMatching()
        await stopRadio()
        closeStore()
    }

    /// The exposure service's stop: the matching run in progress is cancelled (it stops between
    /// batches) and awaited, before the store it reads and writes closes.
    public func stopMatching() async {
        if let task = matchingTask {
            task.cancel()
            await task.value
            matchingTask = nil
        }
    }

    /// The radio's stop: the schedule (the scan in progress recorded, advertising off), then
    /// the controller session.
    public func stopRadio() async {
        await stopSchedule()
        if let mark = heldTime.highWater { try? store.raiseHighWaterMark(to: mark) }
        controllerTask?.cancel()
        await controllerTask?.value
        controllerTask = nil
        if let session { await session.stop() }
        session = nil
        capture?.close()
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

    /// The radio path's liveness, for the systemd watchdog: answered by the node itself (so a
    /// wedged node is not live), and false when the schedule should run but its driver has
    /// stopped or has performed nothing for longer than its longest gap.
    public func liveness() -> (live: Bool, reason: String) {
        guard state.enabled else { return (true, "stopped by the operator") }
        guard let task = driverTask else { return (false, "the schedule is not running") }
        if task.isCancelled || !driverRunning { return (false, "the schedule driver has stopped") }
        guard clockUsable, let last = lastAction else { return (true, "waiting for a usable clock") }
        let silent = clock.monotonicTime().seconds - last
        // Rotations come at most 20 minutes apart and scans more often: twice the longest
        // rotation interval without any action means the schedule is stuck.
        let limit = 2 * settings.advertising.rotationMaxMinutes * 60 + 60
        return silent > limit ? (false, "no schedule action for \(Int(silent)) s") : (true, "ok")
    }

    // MARK: Enable / disable

    public func enable() async throws {
        if !state.enabled {
            state.enabled = true
            try saveState()
        }
        if driverTask == nil { startSchedule() }
        await notifyStatus()
    }

    public func disable() async throws {
        if state.enabled {
            state.enabled = false
            try saveState()
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
        driverRunning = true
        driverTask = Task {
            do { try await driver.run() } catch {
                self.logger.error("schedule stopped", metadata: ["error": "\(error)"])
            }
            await self.driverEnded()
        }
    }

    private func stopSchedule() async {
        guard let task = driverTask else { return }
        task.cancel()
        await task.value
        driverTask = nil
    }

    func saveState() throws {
        do { try state.save(path: statePath) } catch {
            throw NodeError.storage("cannot save node state: \(error.localizedDescription)")
        }
    }

    // MARK: Status

    public var snapshot: NodeStatusSnapshot {
        NodeStatusSnapshot(enabled: state.enabled, status: statusList, advertisements: advertisements,
                           scans: scans, sightings: sightings, lastScanEnd: lastScanEnd,
                           storeLosses: store.losses(), clockSync: sync.status().description)
    }

    var statusList: [String] {
        var list: [String] = []
        if !state.enabled { list.append(GaendStatus.inactive) }
        if !clockUsable { list.append(GaendStatus.clockUnsynchronised) } else if heldTime.suspect || retiredDay != nil { list.append(GaendStatus.clockSuspect) }
        if session == nil || controllerStatus != GaendStatus.active { list.append(controllerStatus) }
        if store.isFull { list.append(GaendStatus.storageFull) } else if storageProblem != nil { list.append(GaendStatus.storageError) }
        if list.isEmpty { list.append(GaendStatus.active) }
        return list
    }

    private func notifyStatus() async { await observer?.statusChanged() }

    /// The current calibration: SetCalibration's values while the config's calibration is the
    /// one they were set over, else the config's (NodeState.reconcileCalibration).
    public var calibration: (txPower: Int, rssiCorrection: Int, confidence: CalibrationConfidence) {
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
        try saveState()
    }

    // MARK: Controller

    /// Keeps a controller session up: a controller that is missing at start, or whose
    /// session gave up recovering, is retried every few seconds; status says so meanwhile.
    private func controllerLoop() async {
        var reported = false
        while !Task.isCancelled {
            var configuration = HCISessionConfiguration()
            configuration.reconnectAttemptLimit = 20
            let plain = SystemTransportConnector(address: controllerAddress)
            let s = HCIControllerSession(connector: capture.map { CapturingConnector(plain, writer: $0) } ?? plain,
                                         configuration: configuration, logger: logger)
            do {
                _ = try await s.start()
            } catch {
                if !reported {
                    logger.error("controller not available; retrying", metadata: ["controller": "\(controllerAddress)", "error": "\(error)"])
                    reported = true
                }
                controllerStatus = GaendStatus.controllerMissing
                await notifyStatus()
                try? await Task.sleep(for: .seconds(3))
                continue
            }
            reported = false
            logger.info("controller up", metadata: ["controller": "\(controllerAddress)"])
            await attach(s)
            let watchdog = Task { await ControllerWatchdog(probeInterval: .seconds(Int64(max(5, settings.watchdog.controllerSilenceSeconds / 3)))).run(session: s, logger: logger) }
            for await event in s.events {
                switch event {
                case .reconnected:
                    controllerStatus = GaendStatus.active
                    try? await advertiser?.restore()
                    try? await scanner?.resumeContinuous()
                    await notifyStatus()
                case .transportLost, .hardwareError, .reconnecting, .reconnectFailed:
                    if controllerStatus != GaendStatus.controllerError {
                        controllerStatus = GaendStatus.controllerError
                        await notifyStatus()
                    }
                case .gaveUp(let reason):
                    logger.error("controller lost", metadata: ["reason": "\(reason)"])
                default: break
                }
                if Task.isCancelled { break }
            }
            watchdog.cancel()
            await detach()
            if Task.isCancelled { break }
            controllerStatus = GaendStatus.controllerMissing
            await notifyStatus()
            try? await Task.sleep(for: .seconds(3))
        }
    }

    private func attach(_ s: HCIControllerSession) async {
        session = s
        let adv = BeaconAdvertiser(session: s, timing: AdvertisingTiming(intervalMinMs: settings.advertising.intervalMinMs,
                                                                         intervalMaxMs: settings.advertising.intervalMaxMs),
                                   logger: logger)
        let clock = self.clock
        let sc = Scanner(session: s, logger: logger, now: { clock.wallTime() })
        await sc.start()
        advertiser = adv
        scanner = sc
        controllerStatus = GaendStatus.active
        if advertisingWanted, let beacon = currentBeacon {
            do { try await adv.show(beacon) } catch { logger.warning("cannot restore advertising", metadata: ["error": "\(error)"]) }
        }
        await notifyStatus()
    }

    private func detach() async {
        if let s = session { await s.stop() }
        session = nil
        advertiser = nil
        scanner = nil
    }

    // MARK: Schedule effects

    public func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        // How long after the schedule read the clock the node got to act (node seconds): work
        // that held the node up (it must not: matching, exports and caller I/O run beside it)
        // shows here. A second late is a fault worth a warning; every delay is at debug level.
        let delay = clock.monotonicTime().seconds - reading.monotonic
        lastAction = clock.monotonicTime().seconds
        if delay > 1 {
            logger.warning("schedule action ran late", metadata: ["action": "\(action)", "late.seconds": "\(String(format: "%.3f", delay))"])
        } else {
            logger.debug("schedule action", metadata: ["action": "\(action)", "late.seconds": "\(String(format: "%.3f", delay))"])
        }
        if clockUsable != reading.synchronized {
            clockUsable = reading.synchronized
            await notifyStatus()
        }
        if reading.synchronized { await observeHeldTime(reading) }
        switch action {
        case .rotate(let slot): await rotate(slot, now: reading.wall)
        case .stopAdvertising:
            advertisingWanted = false
            currentBeacon = nil
            try? await advertiser?.stop()
        case .startScan: await startScan()
        case .finishScan(let done): await finishScan(start: done.startWall, end: done.endWall)
        }
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

    private func rotate(_ slot: AdvertisingSlot, now: Double) async {
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
            advertisingWanted = false
            currentBeacon = nil
            try? await advertiser?.stop()
            await notifyStatus()
            return
        } catch {
            // Keep what is on air: a node that cannot store a new day's key must not
            // advertise a key it could not report later.
            storageProblem = "\(error)"
            logger.error("cannot get the day's key; keeping the current advertisement", metadata: ["error": "\(error)"])
            await notifyStatus()
            return
        }
        do {
            var random = SecureRandom()
            let beacon = try GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: metadata, random: &random)
            currentBeacon = beacon.beacon
            advertisingWanted = true
            advertisements += 1
            if let advertiser { try await advertiser.show(beacon.beacon) }
            logger.debug("rotated", metadata: ["slot": "\(slot)"])
        } catch {
            logger.warning("rotation failed; retried at the next rotation or controller restart", metadata: ["error": "\(error)"])
        }
        await notifyStatus()
    }

    private func startScan() async {
        guard let scanner else { return }
        do {
            let stream = try await scanner.scanContinuously()
            scanInProgress = (scanner, Task {
                var reports: [TimedReport] = []
                for await r in stream { reports.append(r) }
                return reports
            })
        } catch {
            logger.warning("cannot start a scan", metadata: ["error": "\(error)"])
            await scanner.stop()
            scanInProgress = nil
        }
    }

    private func finishScan(start: Double, end: Double) async {
        // No scan was started (no controller): nothing was observed, so nothing is recorded.
        guard let (usedScanner, collector) = scanInProgress else { return }
        scanInProgress = nil
        await usedScanner.stop()
        let reports = await collector.value
        let record = RecordedScan(ScanRecord(start: start, end: end, reports: reports), rssiCorrection: calibration.rssiCorrection)
        scans += 1
        sightings += UInt64(record.sightings.count)
        lastScanEnd = end
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
        await notifyStatus()
    }
}
