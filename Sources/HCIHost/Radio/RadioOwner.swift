import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol
import Logging
import Synchronization

/// The one owner of the controller's LE state (in the spirit of Bumble's `Device`): it holds
/// what should be on air (`desired`) and what the controller has confirmed (`air`) for
/// advertising, scanning and the random address, and is the only code that sends LE
/// advertising or scanning commands.
///
/// Every change is one `reconcile` that moves the controller from what is on air to what is
/// wanted in the order Core Vol 4 Part E 7.8.4 allows (LE Set Random Address is refused while
/// legacy advertising or scanning is on): pause scanning if a new address must be set,
/// disable advertising, address, parameters, data, enable advertising, resume scanning. So a
/// rotation can never be refused because the other role is on. A reconcile that fails anyway
/// (a controller hiccup, a reset midway) is retried at once with backoff until the controller
/// matches `desired` again, with the SAME beacon (a failed enable may have reached the air,
/// and a new address for the same RPI would break the pairing). After a controller reset or
/// a reconnect, both roles are restored from `desired`.
///
/// It also owns the stall detectors: scanning that goes silent (`scanStallSeconds`, measured
/// against the recent report rhythm, so an empty room never counts) is re-enabled and then
/// restarted with the controller; a controller that stops answering probes is restarted.
///
/// Reports are filtered at the door: only those carrying 0xFD6F service data are kept (the
/// rest are counted), each stamped from the node's monotonic clock mapped into its scan
/// window, into a bounded buffer whose overflow is counted.
package actor RadioOwner: RadioLivenessSource {
    private let clock: any NodeClock
    private let configuration: Configuration
    private let logger: Logger

    private var session: HCIControllerSession?
    /// Drops of earlier sessions, added when they are let go.
    private var sessionDropsAtAttach: UInt64 = 0
    private var desired = Desired()
    private var status = Status()
    /// What may be on the controller (set before an enable is sent, cleared after a
    /// confirmed disable), which decides what must be turned off before a change.
    private var advertisingMaybeOn = false
    private var scanningMaybeOn = false
    private var beaconOnAir: Beacon?
    /// The controller's random address as last set (nil after a reset).
    private var controllerAddress: BDAddress?
    private var lastCountedBeacon: Beacon?

    private var scan: ScanCollector?
    private var live: AsyncStream<Sighting>.Continuation?
    private var stall: ScanStallDetector
    private var emptyScans = EmptyScanDetector()
    private var stallReenabled = false
    /// Reports taken from the current session's stream; the session's `reportsDelivered`
    /// above it means reports are queued for the owner (the host is behind).
    private var reportsTaken: UInt64 = 0

    private var pump: Task<Void, Never>?
    private var eventsTask: Task<Void, Never>?
    private var watchdogTask: Task<Void, Never>?
    private var stallTask: Task<Void, Never>?
    private var retryTask: Task<Void, Never>?
    private var controllerTask: Task<Void, Never>?
    /// The first bring-up after `start` has ended: the controller is held, or was found missing
    /// or failing (a status, retried in the background). gaend tells systemd it is ready only
    /// then, so that a bluetoothd ordered after gaend@ cannot take the controller first.
    package private(set) var firstBringUpEnded = false
    /// Set once by whoever follows the owner (the node), before the owner starts: a lock, so
    /// it can be set while the node is built, without awaiting the actor.
    private let changeHandler = Mutex<(@Sendable () async -> Void)?>(nil)
    /// When the controller last answered (a probe, a report, the bring-up), in real time:
    /// the controller answers in real time whatever the node clock's scale.
    private var lastControllerAnswer: ContinuousClock.Instant?

    // Operations on the controller are serialized: the actor alone would interleave a
    // restore after a reconnect with a rotation at every await. This is not a lock like the
    // `Mutex`es elsewhere: an operation holds it across awaits (each HCI command waits for
    // the controller), and a waiter suspends its task instead of blocking a thread; a Mutex
    // must never be held across an await. The actor guards `busy` and `waiters`.
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init(clock: any NodeClock, configuration: Configuration = .init(), logger: Logger) {
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        stall = ScanStallDetector(minimumStall: configuration.scanStallSeconds)
    }

    /// Called after every change of `status` worth publishing (a finished scan among them).
    package nonisolated func onChange(_ handler: @escaping @Sendable () async -> Void) { changeHandler.withLock { $0 = handler } }

    package var snapshot: Status {
        get async {
            accountAirTime()
            var s = plainSnapshot
            if let session { s.reportsDropped += await session.reportsDropped - sessionDropsAtAttach }
            return s
        }
    }

    private var plainSnapshot: Status {
        var s = status
        s.advertisingWanted = desired.beacon != nil
        s.advertisingOnAir = beaconOnAir != nil && beaconOnAir == desired.beacon
        s.advertisingAddress = s.advertisingOnAir ? beaconOnAir?.address : nil
        s.scanningWanted = desired.scanning
        s.scanningOnAir = status.scanningOnAir && desired.scanning
        s.retrying = retryTask != nil
        return s
    }

    package var wanted: Desired { desired }

    // MARK: Controller lifecycle

    /// Keeps a controller session up in the background: a controller that is missing, or
    /// whose session gave up recovering, is tried again every `retry`; status says so meanwhile.
    package func start(connector: any HCITransportConnector, configuration: HCISessionConfiguration,
                      retry: Duration = .seconds(3)) {
        guard controllerTask == nil else { return }
        controllerTask = Task { await self.controllerLoop(connector: connector, configuration: configuration, retry: retry) }
    }

    private func controllerLoop(connector: any HCITransportConnector, configuration: HCISessionConfiguration, retry: Duration) async {
        var reported = false
        while !Task.isCancelled {
            let s = HCIControllerSession(connector: connector, configuration: configuration, logger: logger)
            do {
                _ = try await s.start()
            } catch {
                if !reported {
                    logger.error("controller not available; retrying", metadata: ["controller": "\(connector.description)", "error": "\(error)"])
                    reported = true
                }
                status.controllerProblem = "\(error)"
                setController(.missing)
                firstBringUpEnded = true
                await notify()
                try? await Task.sleep(for: retry)
                continue
            }
            if Task.isCancelled {
                // stop() came during the bring-up: this session was never attached, so nothing
                // else would stop it (its reader thread would keep the process alive).
                await s.stop()
                break
            }
            reported = false
            logger.info("controller up", metadata: ["controller": "\(connector.description)"])
            await attach(s)
            firstBringUpEnded = true
            await eventsTask?.value // ends when the session stops (gave up, or stop())
            await detach()
            if Task.isCancelled { break }
            await notify()
            try? await Task.sleep(for: retry)
        }
    }

    /// Takes over a started session: consumes its reports and events, starts the stall
    /// detectors and puts everything wanted on air.
    package func attach(_ s: HCIControllerSession) async {
        await detach()
        session = s
        sessionDropsAtAttach = await s.reportsDropped
        status.controllerInfo = await s.controllerInfo
        status.controllerProblem = nil
        setController(.active)
        forgetControllerState()
        reportsTaken = 0
        let reports = s.advertisingReports
        pump = Task { [weak self] in
            for await report in reports { await self?.received(report) }
        }
        eventsTask = Task { [weak self] in
            for await event in s.events { await self?.handle(event) }
        }
        let probe = ControllerWatchdog(probeInterval: configuration.controllerProbeInterval)
        let logger = self.logger
        lastControllerAnswer = .now
        // Holds the owner until detach() cancels it.
        watchdogTask = Task { await probe.run(session: s, logger: logger) { await self.controllerAnswered() } }
        stallTask = Task { [weak self] in await self?.watchScanStalls() }
        await reconcileOrRetry()
        await notify()
    }

    /// Lets go of the session (it is stopped); what is wanted stays, for the next attach.
    package func detach() async {
        guard let s = session else { return }
        session = nil
        status.reportsDropped += await s.reportsDropped - sessionDropsAtAttach
        for t in [pump, watchdogTask, stallTask, retryTask] { t?.cancel() }
        retryTask = nil
        await s.stop()
        eventsTask?.cancel()
        pump = nil; watchdogTask = nil; stallTask = nil; eventsTask = nil
        setController(.missing)
        status.controllerInfo = nil
        forgetControllerState()
    }

    /// Everything off (advertising disabled, scanning stopped), the session stopped.
    package func stop() async {
        controllerTask?.cancel()
        desired = Desired()
        retryTask?.cancel()
        retryTask = nil
        await enterOperation()
        try? await reconcile()
        leaveOperation()
        live?.finish()
        live = nil
        await detach()
        await controllerTask?.value
        controllerTask = nil
    }

    private func handle(_ event: HCISessionEvent) async {
        switch event {
        case .reconnected(let info):
            logger.info("controller reset; restoring advertising and scanning")
            status.controllerInfo = info
            await enterOperation()
            forgetControllerState()
            leaveOperation()
            status.controllerProblem = nil
            setController(.active)
            await reconcileOrRetry()
        case .transportLost, .hardwareError, .reconnecting, .reconnectFailed:
            forgetControllerState()
            // Until it answers its bring-up again it may not even be the same controller.
            status.controllerInfo = nil
            setController(.error)
        case .gaveUp(let reason):
            logger.error("controller lost", metadata: ["reason": "\(reason)"])
            status.controllerProblem = "lost: \(reason)"
            forgetControllerState()
        default: return
        }
        await notify()
    }

    /// After a reset the controller advertises and scans nothing and has no random address.
    private func forgetControllerState() {
        advertisingMaybeOn = false
        scanningMaybeOn = false
        beaconOnAir = nil
        controllerAddress = nil
        status.scanningOnAir = false
    }

    private func setController(_ c: ControllerState) { status.controller = c }

    // MARK: Advertising

    /// Puts `beacon` on air in place of the current one, as one operation (a rotation).
    /// Returns once it is on air, or once the failure was counted and a retry scheduled.
    package func advertise(_ beacon: Beacon) async {
        desired.beacon = beacon
        await reconcileOrRetry()
        await notify()
    }

    package func stopAdvertising() async {
        desired.beacon = nil
        await reconcileOrRetry()
        await notify()
    }

    /// The controller's own advertising TX power (LE Read Advertising Physical Channel Tx
    /// Power), reported for calibration; it is not what goes into the AEM.
    package func controllerTxPower() async throws -> Int8 {
        guard let session else { throw HCISessionError.notRunning(state: "no controller") }
        return try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower()).txPowerDBm
    }

    // MARK: Scanning

    /// Starts collecting a scan for `window` and turns scanning on (it stays on across
    /// back-to-back scans).
    package func startScan(_ window: ScanWindow) async {
        scan = ScanCollector(window: window, onAir: status.scanningOnAir, now: clock.monotonicTime().seconds)
        desired.scanning = true
        await reconcileOrRetry()
        await notify()
    }

    /// Ends the scan in progress with the schedule's times and returns its record, or nil
    /// when scanning never reached the air during it (no controller: nothing was observed).
    /// Scanning goes off, unless `next` starts at once (continuous mode): then the
    /// controller keeps scanning and the reports from now on belong to `next`.
    /// `rssiCorrection` is the receiver's correction in use as the scan ends (nil where none
    /// is known, as in `gaenctl radio scan`); the record is made once, with it.
    package func finishScan(_ done: CompletedScan, continuingWith next: ScanWindow? = nil,
                            rssiCorrection: Int? = nil) async -> Scan? {
        let now = clock.monotonicTime().seconds
        // Read before the scan is taken: reports taken meanwhile still land in it.
        let delivered = await session?.reportsDelivered
        let collected = scan
        if let next {
            scan = ScanCollector(window: next, onAir: status.scanningOnAir, now: now)
            desired.scanning = true
        } else {
            scan = nil
            desired.scanning = false
        }
        // Judged before anything else can run, so a report that arrives from now on counts
        // as heard late for this scan, not the one before.
        let deaf = collected.flatMap { verdict(of: $0, endedAt: now, delivered: delivered) }
            .map { emptyScans.record($0) } ?? false
        await reconcileOrRetry()
        guard let collected, collected.wasOnAir || status.scanningOnAir else { return nil }
        // The correction is applied here, once: the scan and each of its sightings carry it.
        let correction = Int8(clamping: rssiCorrection ?? 0)
        let record = Scan(start: done.startWall, end: done.endWall, rssiCorrection: rssiCorrection,
                          sightings: collected.sightings.map {
                              var s = $0
                              s.time = min(max(s.time, done.startWall), done.endWall)
                              s.rssiCorrection = correction
                              return s
                          })
        status.scansCompleted += 1
        if deaf, let session, await restartForSilence("scans empty", session: session,
                                                    first: "scans keep coming back empty where they used to see advertisers; restarting the controller") {
            emptyScans.restarted()
        }
        await notify()
        // Handed to the caller only: nothing here keeps a finished scan (a buffer of the
        // newest 64 that nobody read held every sighting of a flood, hundreds of MB).
        return record
    }

    /// Every kept sighting as it arrives (for `gaenctl radio scan`); the newest 8192 are
    /// buffered, the rest counted as dropped. One consumer.
    package func liveSightings() -> AsyncStream<Sighting> {
        let (stream, continuation) = AsyncStream<Sighting>.makeStream(bufferingPolicy: .bufferingNewest(8192))
        live?.finish()
        live = continuation
        return stream
    }

    private func received(_ report: LEAdvertisingReport) {
        let now = clock.monotonicTime().seconds
        lastControllerAnswer = .now
        status.reportsReceived += 1
        reportsTaken += 1
        stall.report(at: now)
        stallReenabled = false
        if let r = status.scanRecovery {
            status.scanRecovery = nil
            logger.notice("scanning hears advertisers again", metadata: [
                "radio.restarts": "\(r.attempts)", "radio.silent_seconds": "\(Int(now - r.since))"])
            Task { await self.notify() }
        }
        guard scan != nil else {
            // Scanning is off between periodic scans: a report now reached the owner late,
            // and shows the last scan heard something.
            emptyScans.heardLate()
            return
        }
        scan?.reports += 1
        guard let s = Sighting(report: report, time: scan!.window.wallTime(atMonotonic: now)) else {
            status.reportsIgnored += 1
            return
        }
        if scan!.sightings.count < configuration.maximumSightingsPerScan {
            scan!.sightings.append(s)
        } else {
            status.reportsDropped += 1
        }
        if let live, case .dropped = live.yield(s) { status.reportsDropped += 1 }
    }

    private func watchScanStalls() async {
        let period = max(0.5, configuration.scanStallSeconds / 4)
        while !Task.isCancelled {
            let due = clock.monotonicTime().seconds + period
            do { try await clock.sleep(until: MonotonicInstant(seconds: due)) } catch { return }
            let now = clock.monotonicTime().seconds
            // How late this timer woke is the host's lag: reports may be waiting behind it.
            let lag = now - due
            if let worst = scan.map({ max($0.maxLag, lag) }) { scan?.maxLag = worst }
            guard status.scanningOnAir, desired.scanning, let session else { continue }
            guard stall.isStalled(now: now), lag <= configuration.lateToleranceSeconds else { continue }
            // Reports the session holds for the owner are not silence: the host is behind.
            if await session.reportsDelivered > reportsTaken { continue }
            guard stall.isStalled(now: clock.monotonicTime().seconds), self.session === session else { continue }
            if !stallReenabled {
                status.stallRecoveries += 1
                logger.warning("scanning went silent; enabling it again")
                stallReenabled = true
                await enterOperation()
                do {
                    try await scanOff(session)
                } catch {
                    logger.debug("scan disable failed during stall recovery", metadata: ["error": "\(error)"])
                }
                leaveOperation()
                await reconcileOrRetry()
            } else if await restartForSilence("scanning silent", session: session,
                                              first: "scanning still silent; restarting the controller") {
                stallReenabled = false
            }
            stall.restartWindow(at: clock.monotonicTime().seconds)
            await notify()
        }
    }

    /// Whether `scan`, ended at `now`, heard something, was silent on time, or ran on a
    /// starved host; nil when scanning never reached the air during it (nothing observed).
    private func verdict(of scan: ScanCollector, endedAt now: Double, delivered: UInt64?) -> ScanVerdict? {
        if scan.reports > 0 { return .heard }
        // Reports delivered by the controller but not yet taken: heard, by a host behind.
        if let delivered, delivered > reportsTaken { return .heard }
        guard let onAir = scan.onAirSince else { return nil }
        let tolerance = configuration.lateToleranceSeconds
        let onTime = onAir - scan.window.startMonotonic <= tolerance
            && now - scan.window.plannedEndMonotonic <= tolerance
            && scan.maxLag <= tolerance
        return onTime ? .empty : .late
    }

    /// Restarts the controller for scanning that hears nothing, at most once per backoff
    /// step of the episode; a restart after which it still hears nothing is logged and
    /// retried when the backoff has passed. True when it restarted now.
    private func restartForSilence(_ reason: String, session: HCIControllerSession, first: String) async -> Bool {
        let now = clock.monotonicTime().seconds
        var r: ScanRecovery
        if var current = status.scanRecovery {
            if current.failures < current.attempts {
                current.failures = current.attempts
                status.scanRecovery = current
                logger.error("the controller restart did not bring reports back; restarting it again with backoff", metadata: [
                    "radio.reason": "\(reason)", "radio.restarts": "\(current.attempts)",
                    "radio.next_restart_seconds": "\(max(0, Int((current.nextAttempt - now).rounded(.up))))"])
            }
            guard now >= current.nextAttempt else { return false }
            r = current
            r.attempts += 1
            logger.error("scanning still hears nothing; restarting the controller again", metadata: [
                "radio.reason": "\(reason)", "radio.restarts": "\(r.attempts)", "radio.silent_seconds": "\(Int(now - r.since))"])
        } else {
            r = ScanRecovery(reason: reason, since: now, attempts: 1, failures: 0, nextAttempt: now)
            logger.error("\(first)")
        }
        r.reason = reason
        r.nextAttempt = now + configuration.restartBackoff.delay(after: r.attempts)
        status.scanRecovery = r
        status.stallRecoveries += 1
        await session.restart(reason: reason)
        return true
    }

    // MARK: Liveness

    private func controllerAnswered() { lastControllerAnswer = .now }

    /// Whether the radio path is live, for the systemd watchdog (`RadioPathCheck`). Answered
    /// on this actor, after asking the controller session for its state: a wedged owner or a
    /// wedged session (its actor stuck, e.g. in a write the kernel never finishes) never
    /// answers, which the check counts as a stall. A missing controller or one being
    /// restarted is live (the owner is acting on it, and status says so); a running
    /// controller that has answered nothing (probe, report) for longer than two probe
    /// periods and two command timeouts is not: its own restart did not happen.
    package func liveness(progress: LivenessProgress) async -> RadioPathLiveness {
        guard let session else { return RadioPathLiveness(live: true, reason: "no controller session (\(status.controller.rawValue)); retried in the background") }
        progress.reached(.waitingForSession)
        let state = await session.state
        progress.reached(.sessionAnswered)
        guard state == .running else { return RadioPathLiveness(live: true, reason: "controller session \(state.rawValue)") }
        let limit = configuration.controllerProbeInterval * 2 + .seconds(10)
        if let last = lastControllerAnswer, ContinuousClock.now - last > limit {
            return RadioPathLiveness(live: false, reason: "the controller has answered nothing for \(ContinuousClock.now - last)")
        }
        return RadioPathLiveness(live: true, reason: "ok")
    }

    // MARK: Reconcile

    /// Brings the controller to `desired`; on failure counts it and schedules a retry.
    private func reconcileOrRetry() async {
        await enterOperation()
        defer { leaveOperation() }
        do {
            try await reconcile()
        } catch {
            failed(error)
        }
    }

    private func failed(_ error: any Error) {
        countFailure()
        logger.warning("radio operation failed; retrying at once", metadata: ["radio.error": "\(error)"])
        guard retryTask == nil, session != nil else { return }
        let clock = self.clock, first = configuration.retryInitialSeconds, maximum = configuration.retryMaximumSeconds
        retryTask = Task { [weak self] in
            var backoff = first
            while !Task.isCancelled {
                do { try await clock.sleep(for: backoff) } catch { return }
                guard let self, await self.retryOnce() else {
                    backoff = min(backoff * 2, maximum)
                    continue
                }
                return
            }
        }
    }

    /// One retry; true when the controller now matches `desired` (the retry task ends).
    private func retryOnce() async -> Bool {
        await enterOperation()
        defer { leaveOperation() }
        do {
            try await reconcile()
            retryTask = nil
            logger.info("radio operation succeeded on retry")
            Task { await self.notify() }
            return true
        } catch {
            countFailure()
            logger.warning("radio operation failed again", metadata: ["radio.error": "\(error)"])
            return false
        }
    }

    /// The one place LE advertising and scanning commands are sent. Must be inside an operation (`enterOperation`).
    private func reconcile() async throws {
        guard let s = session else { return } // attach restores what is wanted
        do {
            try await reconcile(s)
        } catch {
            // What the controller has on is no longer known (a disable answered Command
            // Disallowed may not have disabled anything): the retry turns both roles off
            // first, which the controller accepts whatever their state.
            advertisingMaybeOn = true
            scanningMaybeOn = true
            throw error
        }
    }

    private func reconcile(_ s: HCIControllerSession) async throws {
        let want = desired
        if want.beacon != beaconOnAir || (want.beacon == nil && advertisingMaybeOn) {
            let needAddress = want.beacon.map { $0.address != controllerAddress } ?? false
            let pausedScanning = needAddress && scanningMaybeOn
            if pausedScanning { try await scanOff(s) } // 7.8.4: pause scanning
            if advertisingMaybeOn { try await advertisingOff(s) }
            if let beacon = want.beacon {
                if needAddress {
                    controllerAddress = nil
                    try await s.send(HCILESetRandomAddress(address: beacon.address))
                    controllerAddress = beacon.address
                }
                try await s.send(HCILESetAdvertisingParameters(
                    intervalMin: AdvertisingInterval(milliseconds: configuration.advertising.intervalMinMs),
                    intervalMax: AdvertisingInterval(milliseconds: configuration.advertising.intervalMaxMs),
                    type: .advNonconnInd, ownAddressType: .random, channelMap: .all))
                try await s.send(HCILESetAdvertisingData(data: beacon.advertisingData))
                advertisingMaybeOn = true
                try await s.send(HCILESetAdvertisingEnable(enabled: true))
                beaconOnAir = beacon
                if beacon != lastCountedBeacon {
                    lastCountedBeacon = beacon
                    status.rotations += 1
                    // Once per rotation (every 10-20 minutes); the address is public, it is
                    // on air.
                    logger.info("rotated", metadata: ["radio.address": "\(beacon.address)", "radio.scan_paused": "\(pausedScanning)"])
                }
            }
        }
        if want.scanning && !status.scanningOnAir {
            if scanningMaybeOn { try await scanOff(s) }
            // Passive, window = interval (all channels all the time), duplicates reported
            // (every advertisement counts for RSSI). Passive scanning sends nothing, so the
            // own address type is irrelevant on air; public avoids controllers that refuse a
            // random type before a random address is set.
            let timing = try ScanTiming(units: UInt16(Self.scanTimingUnits))
            try await s.send(HCILESetScanParameters(type: .passive, interval: timing, window: timing, ownAddressType: .public))
            scanningMaybeOn = true
            try await s.setScanEnable(true, filterDuplicates: false)
            status.scanningOnAir = true
            scan?.wasOnAir = true
            if scan != nil, scan?.onAirSince == nil {
                let now = clock.monotonicTime().seconds
                scan?.onAirSince = now
            }
            stall.restartWindow(at: clock.monotonicTime().seconds)
        } else if !want.scanning && scanningMaybeOn {
            try await scanOff(s)
        }
    }

    /// Scan interval and window (equal): 60 ms, a common controller default, in 0.625 ms units.
    static let scanTimingUnits = 96

    private func scanOff(_ s: HCIControllerSession) async throws {
        status.scanningOnAir = false
        try await s.setScanEnable(false) // tolerates Command Disallowed when already off
        scanningMaybeOn = false
    }

    private func advertisingOff(_ s: HCIControllerSession) async throws {
        beaconOnAir = nil
        do {
            try await s.send(HCILESetAdvertisingEnable(enabled: false))
        } catch HCISessionError.commandFailed(_, .commandDisallowed) {
            // Some controllers refuse to disable what is already off; that is the state we want.
        }
        advertisingMaybeOn = false
    }

    private func notify() async {
        accountAirTime()
        await changeHandler.withLock { $0 }?()
    }

    /// Credits the time since the last change to the advertising state then recorded.
    private func accountAirTime() {
        let s = plainSnapshot
        status.airTime.advance(to: clock.monotonicTime().seconds,
                               state: AirTimeLedger.state(wanted: s.advertisingWanted, onAir: s.advertisingOnAir))
    }

    /// A failed reconcile that left the wanted beacon off air counts as a failed rotation.
    private func countFailure() {
        status.failedOperations += 1
        if let wanted = desired.beacon, beaconOnAir != wanted { status.failedRotations += 1 }
    }

    /// Waits until no other operation on the controller runs, then starts this one.
    private func enterOperation() async {
        if busy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            busy = true
        }
    }

    /// Ends an operation and hands the turn straight to the next waiter, so nobody can slip in between.
    private func leaveOperation() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}

/// The scan in progress: its window (for stamping), the sightings kept, how many reports of
/// any kind it received, and how on time it ran (for the empty-scan detector).
struct ScanCollector {
    var window: ScanWindow
    var sightings: [Sighting] = []
    var reports = 0
    var wasOnAir: Bool
    /// Node monotonic seconds when scanning was first confirmed on air for it.
    var onAirSince: Double?
    /// The latest the owner's stall timer woke during it (node seconds).
    var maxLag: Double = 0
    init(window: ScanWindow, onAir: Bool, now: Double) {
        self.window = window
        wasOnAir = onAir
        onAirSince = onAir ? now : nil
    }
}
