import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import HCIProtocol
#if canImport(Glibc)
import Glibc
#endif
import NodeConfig
import PlatformSupport
import Logging
import GaenStore

/// The node: the composition of its parts, each the one owner of its state, which the
/// services start and stop (docs/architecture.md):
/// - `stateFile`: the persistent node state (enabled, calibration overrides, mapping,
///   rate-limit counts);
/// - `calibration`: the calibration in use;
/// - `clockMark`: the wall time that has held (the store's high-water mark);
/// - `schedule`: the schedule's driver and the watchdog's heartbeat, with its effects
///   (`schedule.effects`: beacons from the day's key, scans into the store, the clock mark)
///   and the status counters they keep (`board`);
/// - `exposure`: key history, provided key files, matching and its busy state, windows,
///   summaries, the data mapping;
/// - `research`: sightings exports and markers;
/// - `radio`: the radio owner (owned and started by `RadioService`).
/// The node itself only puts them together: Start/Stop, and the status snapshot.
package final class GaenNode: Sendable {
    package let settings: GaendSettings
    package let clock: any NodeClock
    package let sync: any ClockSyncSource
    package let store: NodeStore
    let logger: Logger
    let stateFile: NodeStateFile
    /// Where the parts say something changed (the D-Bus edge listens).
    package let events = NodeEvents()
    /// The one owner of the controller's LE state, owned and started by `RadioService`.
    package let radio: RadioOwner
    package let calibration: CalibrationInUse
    package let clockMark: ClockMark
    package let board: NodeStatusBoard
    package let schedule: NodeScheduleRunner
    package let exposure: ExposureNotifications
    package let research: ResearchRecords
    /// The watchdog's feeds and the matching runs, for the status.
    package let counters = NodeCounters()

    /// Whether the schedule runs and acts, read by the watchdog without awaiting anyone.
    package var heartbeat: ScheduleHeartbeat { schedule.heartbeat }

    /// `clock` and `sync` default to what the settings say (tests pass a manual clock); `radio`
    /// must run on the same clock (`RadioService.makeRadio`). The settings are kept as they
    /// apply (`effective`: what trial mode switches on), and every part reads them from here.
    package init(settings: GaendSettings, logger: Logger, clock: (any NodeClock)? = nil, sync: (any ClockSyncSource)? = nil,
                radio: RadioOwner) throws {
        let s = settings.effective
        self.settings = s
        self.logger = logger
        let clock = try clock ?? s.makeClock(), sync = sync ?? s.makeClockSync()
        self.clock = clock
        self.sync = sync
        try Self.makeStateDirectory(s.stateDirectory)
        let statePath = s.stateDirectory.appendingPathComponent("node-state.json")
        var loaded = try NodeState.load(path: statePath)
        if loaded.reconcileCalibration(with: s.calibration) {
            logger.notice("the config's calibration changed since SetCalibration was called; the config's applies",
                          metadata: ["tx_power": "\(s.calibration.txPower)", "rssi_correction": "\(s.calibration.rssiCorrection)",
                                     "calibration_confidence": "\(s.calibration.calibrationConfidence.rawValue)"])
            do { try loaded.save(path: statePath) } catch {
                throw NodeError.storage("cannot save node state: \(BLEDaemon.fileErrorText(error))")
            }
        }
        let stateFile = NodeStateFile(path: statePath, state: loaded)
        self.stateFile = stateFile
        let key = try StoreKey.load(keyFile: s.storeKeyFile)
        let store = try NodeStore(configuration: StoreConfiguration(settings: s), key: key, logger: logger)
        self.store = store
        self.radio = radio
        let calibration = CalibrationInUse(config: s.calibration, stateFile: stateFile, events: events)
        self.calibration = calibration
        clockMark = try ClockMark(store: store, stepBoundHours: s.clock.stepBoundHours, confirmationMinutes: s.clock.stepConfirmationMinutes)
        board = NodeStatusBoard(clockUsable: sync.status().isUsable)
        let nodeSchedule: NodeSchedule
        do { nodeSchedule = try NodeSchedule(settings: s) } catch { throw NodeError.invalidArgs("schedule: \(error)") }
        let effects = NodeScheduleEffects(store: store, radio: radio, calibration: calibration, clockMark: clockMark,
                                          board: board, events: events, logger: logger)
        schedule = NodeScheduleRunner(schedule: nodeSchedule, clock: clock, sync: sync, effects: effects, logger: logger)
        exposure = ExposureNotifications(settings: s, clock: clock, store: store, stateFile: stateFile, calibration: calibration,
                                         events: events, counters: counters, logger: logger)
        research = ResearchRecords(store: store, calibration: calibration, clock: clock, sync: sync,
                                   node: s.research.node, site: s.research.site)
        // The one route of the radio's changes: radio owner -> node (status board) -> events ->
        // D-Bus edge. Set before the owner starts, so no change is missed.
        radio.onChange { [weak self] in await self?.radioChanged() }
    }

    package func setObserver(_ observer: any NodeObserver) { events.setObserver(observer) }

    /// The radio service's start, once the radio owner runs: the schedule, when the node is
    /// enabled (Start/Stop start and stop it later).
    package func startScheduleIfEnabled() async {
        if stateFile.current.enabled { await schedule.start() }
    }

    /// The radio owner's state changed: the one writer of the board's radio state.
    func radioChanged() async {
        let status = await radio.snapshot
        board.update { $0.radio = status }
        await events.statusChanged()
    }

    /// What the radio and store services stop, in reverse start order (tests, and gaend before
    /// its services run; matching runs belong to the exposure service).
    package func shutdown() async {
        await stopSchedule()
        try? await closeStore()
    }

    /// The store's stop, last: what is pending is flushed (or, on a disk still full, counted
    /// as dropped and logged), then the database closes. A failed close is thrown: gaend then
    /// exits with an error.
    package func closeStore() async throws {
        do {
            try await store.closing()
        } catch {
            logger.error("closing the store failed", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Stops the schedule (the scan in progress recorded, advertising off, the clock mark kept).
    package func stopSchedule() async { await schedule.stop() }

    // MARK: Start / Stop

    package func enable() async throws {
        if !stateFile.current.enabled { try await stateFile.change { $0.enabled = true } }
        await schedule.start()
        await events.statusChanged()
    }

    package func disable() async throws {
        schedule.heartbeat.wanted(false)
        if stateFile.current.enabled { try await stateFile.change { $0.enabled = false } }
        await schedule.stop()
        await events.statusChanged()
    }

    // MARK: Status

    /// One reading of every part, for `Status` and the properties.
    package var snapshot: NodeStatusSnapshot {
        get async {
            let matching = await exposure.matching
            let f = board.current, state = stateFile.current
            let air = f.radio.airTime.totals(at: clock.monotonicTime().seconds)
            return NodeStatusSnapshot(enabled: state.enabled, status: conditions(f, enabled: state.enabled), advertisements: f.advertisements,
                                      scans: f.scans, sightings: f.sightings, lastScanEnd: f.lastScanEnd, radio: f.radio,
                                      storeLosses: store.losses(), clockSync: sync.status().description,
                                      controller: settings.controller.description, trialRPI: trialRPI(f), matching: matching,
                                      provideRemaining: exposure.provideRemaining, calibration: calibration.current,
                                      secondsOnAir: air.onAir, secondsOffAir: air.offAir, counters: counters.current,
                                      storeBytes: store.fileBytes())
        }
    }

    /// The RPI on air, for technicians checking a board with a scanner; RPIs are public (they
    /// are on air), but the issue keeps them out of status outside trial mode.
    private func trialRPI(_ f: NodeStatusBoard.Facts) -> RollingProximityIdentifier? {
        guard settings.trial, let b = f.lastBeacon, let onAir = f.radio.advertisingAddress, b.beacon.address == onAir else { return nil }
        return b.rpi
    }

    func conditions(_ f: NodeStatusBoard.Facts, enabled: Bool) -> [NodeCondition] {
        var list: [NodeCondition] = []
        if !enabled { list.append(.inactive) }
        if !f.clockUsable { list.append(.clockUnsynchronised) } else if clockMark.suspect || f.retiredDay != nil { list.append(.clockSuspect) }
        switch f.radio.controller {
        case .missing: list.append(.controllerMissing)
        case .error: list.append(.controllerError)
        case .active:
            // Wanted on air but not there (a retry is running): said, never hidden behind
            // "active".
            if f.radio.advertisingWanted && !f.radio.advertisingOnAir { list.append(.advertisingOffAir) }
            if f.radio.scanningWanted && !f.radio.scanningOnAir { list.append(.scanningOffAir) }
        }
        // Said whatever the controller's state: a restart that fails leaves it missing or
        // in error, and the episode goes on until the controller is heard again.
        if f.radio.scanRecovery != nil { list.append(.scanningSilent) }
        if store.isFull { list.append(.storageFull) } else if f.storageProblem != nil { list.append(.storageError) }
        if list.isEmpty { list.append(.active) }
        return list
    }
}

extension GaenNode {
    /// Creates the state directory (mode 0700) if needed, with one specific message for each
    /// way that can fail: a path component that is a file, a permission, a read-only file system.
    static func makeStateDirectory(_ path: String) throws {
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw NodeError.invalidArgs("state directory \(path) exists but is not a directory")
            }
            return
        }
        // The first existing ancestor must be a directory too (mkdir -p says "Not a directory").
        var ancestor = path
        while let slash = ancestor.lastIndex(of: "/"), slash != ancestor.startIndex {
            ancestor = String(ancestor[..<slash])
            if stat(ancestor, &st) == 0 {
                guard st.st_mode & S_IFMT == S_IFDIR else {
                    throw NodeError.invalidArgs("state directory \(path): \(ancestor) is not a directory")
                }
                break
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw NodeError.invalidArgs("state directory \(path) cannot be created: \(BLEDaemon.fileErrorText(error))")
        }
    }
}
