import HCIProtocol
import PlatformSupport
import Logging

/// Owns one Bluetooth controller through HCI (the host side of Vol 4 Part E, 4.4 "Command
/// flow control"): sends commands within the controller's Num_HCI_Command_Packets credits,
/// matches each Command Complete/Status to the pending command with that opcode, fails a
/// command after `commandTimeout`, maps non-zero status to `HCISessionError.commandFailed`,
/// brings the controller up, and recovers from transport EOF and Hardware Error by
/// reconnecting with backoff and bringing it up again.
///
/// Usage:
/// ```swift
/// let session = HCIControllerSession(connector: SystemTransportConnector(address: addr), logger: logger)
/// let info = try await session.start()
/// Task { for await event in session.events { if case .reconnected = event { /* restore */ } } }
/// Task { for await report in session.advertisingReports { ... } }
/// try await session.send(HCILESetScanEnable(enabled: true, filterDuplicates: false))
/// ```
/// A garbled or truncated event is logged, reported as `.eventDiscarded` and skipped; the
/// session goes on. Commands sent while recovering fail with `.notRunning`; after
/// `.reconnected` the owner restores advertising and scanning (the controller was reset).
package actor HCIControllerSession {
    package enum State: String, Sendable {
        case idle, starting, running, recovering, stopped
    }

    /// Advertising reports (legacy and extended) in arrival order. One consumer; the newest
    /// 8192 are kept if nobody reads.
    package nonisolated let advertisingReports: AsyncStream<LEAdvertisingReport>
    /// Connection changes and faults. One consumer.
    package nonisolated let events: AsyncStream<HCISessionEvent>

    private let reportSink: AsyncStream<LEAdvertisingReport>.Continuation
    private let eventSink: AsyncStream<HCISessionEvent>.Continuation
    private let connector: any HCITransportConnector
    private let configuration: HCISessionConfiguration
    /// Real time for command timeouts and reconnect backoff: a controller answers in real
    /// time whatever the node clock's scale (tests inject a faster clock).
    private let clock: any Clock<Duration>
    private let logger: Logger

    package private(set) var state: State = .idle
    /// The controller facts of the current connection.
    package private(set) var controllerInfo: ControllerInfo?
    /// Advertising reports lost because the report stream's buffer was full (its reader fell
    /// 8192 reports behind).
    package private(set) var reportsDropped: UInt64 = 0
    /// Advertising reports the controller delivered, kept or dropped: the owner compares it
    /// with what it has taken from the stream to tell a host that is behind (reports queued,
    /// not yet read) from a controller that reports nothing.
    package private(set) var reportsDelivered: UInt64 = 0

    private var transport: (any HCITransport)?
    private var readerTask: Task<Void, Never>?
    private var recoveryTask: Task<Void, Never>?
    /// Incremented per connection; callbacks from an older connection are ignored.
    private var generation = 0
    /// Commands the controller will accept now (Num_HCI_Command_Packets).
    private var credits = 1
    private var nextID = 0

    private struct Pending {
        let id: Int
        let name: String
        let continuation: CheckedContinuation<[UInt8], any Error>
        let timeout: Task<Void, Never>
    }
    /// Sent commands waiting for completion, oldest first per opcode.
    private var pending: [HCIOpcode: [Pending]] = [:]
    /// Commands waiting for a credit, in order.
    private var creditWaiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []

    package init(connector: any HCITransportConnector, configuration: HCISessionConfiguration = .init(),
                clock: any Clock<Duration> = ContinuousClock(), logger: Logger) {
        self.connector = connector
        self.configuration = configuration
        self.clock = clock
        var logger = logger
        logger[metadataKey: "hci.controller"] = "\(connector.description)"
        self.logger = logger
        (advertisingReports, reportSink) = AsyncStream.makeStream(of: LEAdvertisingReport.self, bufferingPolicy: .bufferingNewest(8192))
        (events, eventSink) = AsyncStream.makeStream(of: HCISessionEvent.self, bufferingPolicy: .bufferingNewest(1024))
    }

    // MARK: Lifecycle

    /// Connects and brings the controller up once (no retry: a wrong address or a kernel
    /// without Bluetooth is reported at once). Afterwards the session recovers by itself.
    @discardableResult
    package func start() async throws -> ControllerInfo {
        guard state == .idle else { throw HCISessionError.notRunning(state: state.rawValue) }
        state = .starting
        do {
            let info = try await connectAndBringUp()
            if state == .starting { state = .running }
            return info
        } catch {
            tearDownConnection(reason: "start failed")
            state = .stopped
            finishStreams()
            throw error
        }
    }

    /// Stops recovery, fails outstanding commands, closes the transport and ends both streams.
    package func stop() {
        guard state != .stopped else { return }
        state = .stopped
        recoveryTask?.cancel()
        recoveryTask = nil
        tearDownConnection(reason: "session stopped")
        finishStreams()
    }

    /// Drops the connection and recovers as after a transport loss: reconnect, Reset, bring-up,
    /// then `.reconnected` so the owner restores advertising and scanning. The radio watchdog
    /// calls this when the controller or its scanning has gone silent.
    package func restart(reason: String) {
        guard state == .running else { return }
        logger.warning("restarting controller", metadata: ["hci.reason": "\(reason)"])
        lose(reason: reason, event: .transportLost(reason: "restart: \(reason)"))
    }

    private func finishStreams() {
        reportSink.finish()
        eventSink.finish()
    }

    // MARK: Commands

    /// Sends `command` and returns its decoded return parameters. Throws `commandFailed` for
    /// a non-zero status, `commandTimedOut`, `connectionLost`, or `notRunning` while the
    /// session is not running.
    @discardableResult
    package func send<C: HCICommand>(_ command: C) async throws -> C.ReturnParameters {
        guard state == .running else { throw HCISessionError.notRunning(state: state.rawValue) }
        return try await run(command)
    }

    /// LE Set Scan Enable, tolerating Command Disallowed when disabling a scan that is already
    /// off (BCM43455 controllers on Raspberry Pi answer so; GAEN-FACTS "Known controller
    /// behaviour").
    package func setScanEnable(_ enabled: Bool, filterDuplicates: Bool = false) async throws {
        do {
            try await send(HCILESetScanEnable(enabled: enabled, filterDuplicates: filterDuplicates))
        } catch HCISessionError.commandFailed(_, .commandDisallowed) where !enabled {
            logger.debug("scan disable answered Command Disallowed; scan was already off")
        }
    }

    /// The command path without the state check (bring-up runs it while starting/recovering).
    @discardableResult
    private func run<C: HCICommand>(_ command: C) async throws -> C.ReturnParameters {
        let returned = try await execute(opcode: C.opcode, name: C.name, packet: command.packet)
        guard let first = returned.first else {
            throw HCISessionError.invalidReturnParameters(command: C.name, .truncated(what: "\(C.name) Status", expected: 1, actual: 0))
        }
        let status = HCIStatusCode(rawValue: first)
        guard status == .success else { throw HCISessionError.commandFailed(command: C.name, status: status) }
        do {
            return try C.decodeReturnParameters(returned.dropFirst())
        } catch let e as HCIDecodingError {
            throw HCISessionError.invalidReturnParameters(command: C.name, e)
        }
    }

    /// Waits for a credit, sends, and waits for the matching completion; returns the raw
    /// return parameters (Status first).
    private func execute(opcode: HCIOpcode, name: String, packet: H4Packet) async throws -> [UInt8] {
        let connection = generation
        nextID += 1
        let id = nextID
        while credits <= 0 {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                creditWaiters.append((id, c))
            }
        }
        guard connection == generation, let transport else {
            throw HCISessionError.connectionLost(command: name, reason: "no connection")
        }
        credits -= 1
        logger.trace("\(HCITrace.describe(packet, outgoing: true))")
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<[UInt8], any Error>) in
            let timeout = configuration.commandTimeout
            let clock = self.clock
            let timer = Task { [weak self] in
                guard (try? await clock.sleep(for: timeout)) != nil else { return }
                await self?.timedOut(id: id, opcode: opcode)
            }
            pending[opcode, default: []].append(Pending(id: id, name: name, continuation: c, timeout: timer))
            do {
                try transport.send(packet)
            } catch {
                if let p = removePending(opcode: opcode, id: id) {
                    p.timeout.cancel()
                    p.continuation.resume(throwing: HCISessionError.connectionLost(command: name, reason: "\(error)"))
                }
            }
        }
    }

    private func removePending(opcode: HCIOpcode, id: Int?) -> Pending? {
        guard var list = pending[opcode], !list.isEmpty else { return nil }
        let index = id.flatMap { id in list.firstIndex { $0.id == id } } ?? (id == nil ? 0 : nil)
        guard let index else { return nil }
        let p = list.remove(at: index)
        pending[opcode] = list.isEmpty ? nil : list
        return p
    }

    private func timedOut(id: Int, opcode: HCIOpcode) {
        guard let p = removePending(opcode: opcode, id: id) else { return }
        logger.warning("command timed out", metadata: ["hci.command": "\(p.name)", "hci.timeout": "\(configuration.commandTimeout)"])
        // As BlueZ does after a command timeout: assume the controller can take one command
        // again, otherwise one lost completion would block the session forever.
        setCredits(max(credits, 1))
        eventSink.yield(.commandTimedOut(command: p.name))
        p.continuation.resume(throwing: HCISessionError.commandTimedOut(command: p.name, timeout: configuration.commandTimeout))
    }

    private func setCredits(_ n: Int) {
        credits = n
        // Wake as many queued commands as there are credits; each re-checks in order.
        var wake = credits
        while wake > 0, !creditWaiters.isEmpty {
            creditWaiters.removeFirst().continuation.resume()
            wake -= 1
        }
    }

    // MARK: Connection

    private func connectAndBringUp() async throws -> ControllerInfo {
        let opening = ContinuousClock.now
        let transport = try await connector.connect()
        let opened = ContinuousClock.now - opening
        generation += 1
        let connection = generation
        self.transport = transport
        credits = 1
        readerTask = Task { [weak self] in
            do {
                for try await packet in transport.packets {
                    await self?.receive(packet, connection: connection)
                }
                await self?.connectionEnded(reason: "end of stream from controller", connection: connection)
            } catch {
                await self?.connectionEnded(reason: "\(error)", connection: connection)
            }
        }
        let info = try await bringUp()
        controllerInfo = info
        logger.info("controller up", metadata: [
            "hci.version": "\(CoreVersion.name(info.version.hciVersion))",
            "hci.manufacturer": "\(CompanyIdentifier.name(info.version.companyIdentifier))",
            "hci.address": "\(info.address)",
            // How long opening took (HCIDEVDOWN waits for the kernel's own power-on after a hot-plug).
            "hci.open.seconds": "\(CFormat.fixed(opened.seconds, decimals: 3))",
        ])
        return info
    }

    /// Reset, version, supported commands and features, event masks (LE Meta with advertising
    /// reports, legacy and extended when supported), LE features, BD_ADDR.
    private func bringUp() async throws -> ControllerInfo {
        try await run(HCIReset())
        let version = try await run(HCIReadLocalVersionInformation())
        let commands = try await run(HCIReadLocalSupportedCommands())
        let lmp = try await run(HCIReadLocalSupportedFeatures())
        guard lmp.contains(.leSupportedController) else { throw HCISessionError.controllerLacksLE }
        try await run(HCISetEventMask(mask: [.disconnectionComplete, .hardwareError, .dataBufferOverflow, .leMeta]))
        let le = try await run(HCILEReadLocalSupportedFeatures())
        var leMask = LEEventMask.specDefault.union(.advertisingReport)
        if le.contains(.extendedAdvertising) { leMask.insert(.extendedAdvertisingReport) }
        try await run(HCILESetEventMask(mask: leMask))
        let address = try await run(HCIReadBDAddr())
        return ControllerInfo(version: version, supportedCommands: commands, lmpFeatures: lmp, leFeatures: le, address: address)
    }

    /// Closes the current connection and fails everything waiting on it.
    private func tearDownConnection(reason: String) {
        generation += 1
        transport?.close()
        transport = nil
        readerTask = nil
        let all = pending.values.flatMap { $0 }
        pending = [:]
        for p in all {
            p.timeout.cancel()
            p.continuation.resume(throwing: HCISessionError.connectionLost(command: p.name, reason: reason))
        }
        let waiters = creditWaiters
        creditWaiters = []
        for w in waiters { w.continuation.resume(throwing: HCISessionError.connectionLost(command: "queued command", reason: reason)) }
        credits = 1
    }

    private func connectionEnded(reason: String, connection: Int) {
        guard connection == generation else { return }
        logger.warning("controller link lost", metadata: ["hci.reason": "\(reason)"])
        lose(reason: reason, event: .transportLost(reason: reason))
    }

    private func lose(reason: String, event: HCISessionEvent) {
        tearDownConnection(reason: reason)
        guard state == .running else { return }  // starting/recovering: the bring-up in progress fails by itself
        eventSink.yield(event)
        guard configuration.reconnect else {
            state = .stopped
            eventSink.yield(.gaveUp(reason: "reconnect disabled: \(reason)"))
            finishStreams()
            return
        }
        state = .recovering
        recoveryTask = Task { [weak self] in await self?.recover() }
    }

    private func recover() async {
        var delay = configuration.reconnectInitialDelay
        var attempt = 0
        while state == .recovering {
            attempt += 1
            if let limit = configuration.reconnectAttemptLimit, attempt > limit {
                state = .stopped
                eventSink.yield(.gaveUp(reason: "no connection after \(limit) attempts"))
                finishStreams()
                return
            }
            eventSink.yield(.reconnecting(attempt: attempt, delay: delay))
            do {
                try await clock.sleep(for: delay)
            } catch {
                return  // cancelled by stop()
            }
            guard state == .recovering else { return }
            do {
                let info = try await connectAndBringUp()
                guard state == .recovering else { return }
                state = .running
                logger.notice("controller recovered", metadata: ["hci.attempt": "\(attempt)"])
                eventSink.yield(.reconnected(info))
                return
            } catch {
                tearDownConnection(reason: "reconnect attempt failed")
                logger.warning("reconnect failed", metadata: ["hci.attempt": "\(attempt)", "hci.error": "\(error)"])
                eventSink.yield(.reconnectFailed(attempt: attempt, reason: "\(error)"))
                delay = min(delay * 2, configuration.reconnectMaximumDelay)
            }
        }
    }

    // MARK: Events

    private func receive(_ packet: H4Packet, connection: Int) {
        guard connection == generation else { return }
        guard packet.type == .event else {
            logger.debug("ignoring \(packet.type) packet", metadata: ["hci.bytes": "\(packet.payload.count)"])
            return
        }
        let event: HCIEvent
        do {
            event = try HCIEvent(packet: packet)
        } catch {
            logger.warning("discarding undecodable event", metadata: ["hci.error": "\(error)", "hci.bytes": "\(packet.payload.count)"])
            eventSink.yield(.eventDiscarded(reason: "\(error)"))
            return
        }
        if case .leMeta = event {} else { logger.trace("\(HCITrace.describe(packet, outgoing: false))") }
        switch event {
        case let .commandComplete(cc):
            if cc.opcode != .none {
                if let p = removePending(opcode: cc.opcode, id: nil) {
                    p.timeout.cancel()
                    p.continuation.resume(returning: cc.returnParameters)
                } else {
                    logger.debug("Command Complete for no pending command", metadata: ["hci.opcode": "\(cc.opcode)"])
                }
            }
            setCredits(Int(cc.numHCICommandPackets))
        case let .commandStatus(cs):
            if cs.opcode != .none, cs.status != .success, let p = removePending(opcode: cs.opcode, id: nil) {
                // Command Status with an error ends a command that expected Command Complete
                // (controllers answer unknown commands this way too).
                p.timeout.cancel()
                p.continuation.resume(returning: [cs.status.rawValue])
            }
            setCredits(Int(cs.numHCICommandPackets))
        case let .hardwareError(e):
            logger.error("controller hardware error", metadata: ["hci.hardware_code": "\(e.hardwareCode)"])
            lose(reason: "Hardware Error 0x\(String(e.hardwareCode, radix: 16))", event: .hardwareError(code: e.hardwareCode))
        case let .disconnectionComplete(d):
            eventSink.yield(.disconnection(handle: d.connectionHandle, reason: d.reason))
        case let .leMeta(meta):
            for report in LEAdvertisingReport.reports(in: meta) {
                reportsDelivered += 1
                if case .dropped = reportSink.yield(report) { reportsDropped += 1 }
            }
        case let .unknown(code, _):
            logger.debug("ignoring event", metadata: ["hci.event": "0x\(String(code, radix: 16))"])
        }
    }
}
