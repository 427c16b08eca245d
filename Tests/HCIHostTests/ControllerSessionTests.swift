import Foundation
@testable import HCIHost
import NodeTestSupport
import HCIProtocol
import HCITestSupport
import Logging
import Testing

/// The session against a scripted in-process controller: bring-up bytes, flow control,
/// timeouts, error statuses, hardware error, EOF and reconnect, garbled events.
@Suite("HCI controller session")
struct ControllerSessionTests {
    let logger = Logger(label: "test.hci")

    func makeSession(_ connector: ScriptedConnector, timeout: Duration = .seconds(30)) -> (HCIControllerSession, ScaledSleeper) {
        var config = HCISessionConfiguration()
        config.commandTimeout = timeout
        config.reconnectInitialDelay = .milliseconds(100)
        config.reconnectMaximumDelay = .milliseconds(400)
        let sleeper = ScaledSleeper(scale: 0.01)
        return (HCIControllerSession(connector: connector, configuration: config, clock: sleeper, logger: logger), sleeper)
    }

    /// Bring-up as btmon would show it from the host side.
    static let bringUpCapture = [
        "01 03 0c 00",                               // Reset
        "01 01 10 00",                               // Read Local Version Information
        "01 02 10 00",                               // Read Local Supported Commands
        "01 03 10 00",                               // Read Local Supported Features
        "01 01 0c 08 10 80 00 02 00 00 00 20",       // Set Event Mask: Disconn, HW error, overflow, LE Meta
        "01 03 20 00",                               // LE Read Local Supported Features
        "01 01 20 08 1f 10 00 00 00 00 00 00",       // LE Set Event Mask: default + adv report + ext adv report
        "01 09 10 00",                               // Read BD_ADDR
    ].map(packet)

    @Test func bringUpSendsTheExpectedCommands() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector)
        let info = try await session.start()
        #expect(connector.current.sent == Self.bringUpCapture)
        #expect(info.address == ScriptedController.address)
        #expect(info.version == ScriptedController.version)
        #expect(info.leFeatures.contains(.extendedAdvertising))
        #expect(await session.state == .running)
        let power = try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower())
        #expect(power.txPowerDBm == -4)
        await session.stop()
        #expect(connector.current.isClosed)
    }

    @Test func controllerWithoutLEIsRejected() async throws {
        // Answer Read Local Supported Features with no LE bit: silence the scripted reply and
        // inject our own completion.
        let c2 = ScriptedConnector { c in c.silence(HCIReadLocalSupportedFeatures.opcode) }
        let (session, _) = makeSession(c2, timeout: .seconds(60))
        let started = Task { try await session.start() }
        while c2.controllers.isEmpty || !c2.current.sentOpcodes.contains(HCIReadLocalSupportedFeatures.opcode) {
            try await Task.sleep(for: .milliseconds(2))
        }
        c2.current.inject(HCIEvent.commandComplete(.init(HCIReadLocalSupportedFeatures.self, returning: LMPFeatures(rawValue: 0))).packet)
        await #expect(throws: HCISessionError.controllerLacksLE) { try await started.value }
        #expect(await session.state == .stopped)
    }

    @Test func commandThatIsNeverAnsweredTimesOut() async throws {
        let connector = ScriptedConnector()
        let (session, sleeper) = makeSession(connector, timeout: .seconds(2))
        let events = Recorder<HCISessionEvent>()
        await events.start(session.events)
        try await session.start()
        connector.current.silence(HCILEReadAdvertisingPhysicalChannelTxPower.opcode)
        await #expect(throws: HCISessionError.commandTimedOut(command: "LE Read Advertising Physical Channel Tx Power", timeout: .seconds(2))) {
            try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower())
        }
        #expect(sleeper.requests.contains(.seconds(2)))
        #expect(await events.wait { $0 == .commandTimedOut(command: "LE Read Advertising Physical Channel Tx Power") } != nil)
        // The session goes on: the credit lost with the command is restored.
        try await session.send(HCILESetAdvertisingEnable(enabled: false))
        #expect(await session.state == .running)
        await session.stop()
    }

    @Test func nonZeroStatusIsANamedError() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector)
        try await session.start()
        // Changing the random address while advertising: Command Disallowed.
        try await session.send(HCILESetAdvertisingEnable(enabled: true))
        let address = try BDAddress(string: "1F:22:33:44:55:66")
        await #expect(throws: HCISessionError.commandFailed(command: "LE Set Random Address", status: .commandDisallowed)) {
            try await session.send(HCILESetRandomAddress(address: address))
        }
        // Unknown command answered through Command Status.
        connector.current.answer(HCILEReadAdvertisingPhysicalChannelTxPower.opcode, status: .unknownCommand, viaCommandStatus: true)
        await #expect(throws: HCISessionError.commandFailed(command: "LE Read Advertising Physical Channel Tx Power", status: .unknownCommand)) {
            try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower())
        }
        await session.stop()
    }

    @Test func disablingAnIdleScanToleratesCommandDisallowed() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector)
        try await session.start()
        // The raw command fails as the controller says...
        await #expect(throws: HCISessionError.commandFailed(command: "LE Set Scan Enable", status: .commandDisallowed)) {
            try await session.send(HCILESetScanEnable(enabled: false, filterDuplicates: false))
        }
        // ...and the scan helper tolerates it for a disable, not for an enable.
        try await session.setScanEnable(false)
        try await session.setScanEnable(true)
        try await session.setScanEnable(false)
        connector.current.answer(HCILESetScanEnable.opcode, status: .commandDisallowed)
        await #expect(throws: HCISessionError.commandFailed(command: "LE Set Scan Enable", status: .commandDisallowed)) {
            try await session.setScanEnable(true)
        }
        #expect(connector.current.sent.suffix(4).map(\.bytes) == [
            h("01 0c 20 02 00 00"), h("01 0c 20 02 01 00"), h("01 0c 20 02 00 00"), h("01 0c 20 02 01 00"),
        ])
        await session.stop()
    }

    @Test func commandsWaitForCredits() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector, timeout: .seconds(30))
        try await session.start()
        let controller = connector.current
        controller.setNcmd(0)  // the next completion hands out no credit
        try await session.send(HCILESetAdvertisingEnable(enabled: false))
        let before = controller.sent.count
        let second = Task { try await session.send(HCILESetAdvertisingEnable(enabled: true)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(controller.sent.count == before, "no command may be sent without a credit")
        controller.setNcmd(1)
        controller.inject(HCIEvent.commandComplete(.init(numHCICommandPackets: 1, opcode: .none, returnParameters: [])).packet)
        _ = try await second.value
        #expect(controller.sent.count == before + 1)
        await session.stop()
    }

    @Test func hardwareErrorReconnectsAndTellsTheOwner() async throws {
        let connector = ScriptedConnector()
        let (session, sleeper) = makeSession(connector)
        let events = Recorder<HCISessionEvent>()
        await events.start(session.events)
        try await session.start()
        connector.current.inject(packet("04 10 01 2a"))
        let reconnected = await events.wait { if case .reconnected = $0 { return true } else { return false } }
        #expect(reconnected != nil)
        let items = await events.items
        #expect(items.first == .hardwareError(code: 0x2a))
        #expect(items.contains(.reconnecting(attempt: 1, delay: .milliseconds(100))))
        #expect(connector.controllers.count == 2)
        #expect(connector.controllers[0].isClosed)
        #expect(connector.current.sent == Self.bringUpCapture, "the new connection is brought up from Reset")
        #expect(sleeper.requests.contains(.milliseconds(100)))
        try await session.send(HCILESetAdvertisingEnable(enabled: true))
        await session.stop()
    }

    @Test func restartOnRequestBringsTheControllerUpAgain() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector)
        let events = Recorder<HCISessionEvent>()
        await events.start(session.events)
        try await session.start()
        await session.restart(reason: "scan stalled")
        #expect(await events.wait { if case .reconnected = $0 { return true } else { return false } } != nil)
        #expect(await events.items.first == .transportLost(reason: "restart: scan stalled"))
        #expect(connector.controllers.count == 2 && connector.controllers[0].isClosed)
        #expect(connector.current.sent == Self.bringUpCapture)
        await session.stop()
        await session.restart(reason: "ignored when stopped")
        #expect(connector.controllers.count == 2)
    }

    @Test func endOfStreamReconnectsWithBackoff() async throws {
        let connector = ScriptedConnector()
        // The in-flight command must be ended by the end of stream, not by its timeout: on a
        // loaded machine a 2 s timeout fired first and made this test flaky.
        let (session, sleeper) = makeSession(connector, timeout: .seconds(120))
        let events = Recorder<HCISessionEvent>()
        await events.start(session.events)
        try await session.start()
        // A command in flight when the link drops fails with connectionLost.
        connector.current.silence(HCILESetAdvertisingEnable.opcode)
        let inFlight = Task { try await session.send(HCILESetAdvertisingEnable(enabled: true)) }
        while !connector.current.sentOpcodes.contains(HCILESetAdvertisingEnable.opcode) { try await Task.sleep(for: .milliseconds(2)) }
        connector.failNextConnects(3)
        connector.current.endOfStream()
        await #expect(throws: HCISessionError.self) { try await inFlight.value }
        #expect(await events.wait { if case .reconnected = $0 { return true } else { return false } } != nil)
        let items = await events.items
        #expect(items.first == .transportLost(reason: "end of stream from controller"))
        let delays = items.compactMap { e -> Duration? in if case let .reconnecting(_, d) = e { return d } else { return nil } }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(400)], "doubling, capped")
        #expect(items.filter { if case .reconnectFailed = $0 { return true } else { return false } }.count == 3)
        #expect(sleeper.requests.filter { $0 < .seconds(1) } == delays)
        #expect(await session.state == .running)
        // Running again: commands go through the new connection.
        try await session.send(HCILESetScanEnable(enabled: true, filterDuplicates: false))
        await session.stop()
    }

    @Test func recoveryGivesUpAfterTheLimit() async throws {
        let connector = ScriptedConnector()
        var config = HCISessionConfiguration()
        config.reconnectAttemptLimit = 2
        config.reconnectInitialDelay = .milliseconds(10)
        let session = HCIControllerSession(connector: connector, configuration: config, clock: ScaledSleeper(), logger: logger)
        let events = Recorder<HCISessionEvent>()
        await events.start(session.events)
        try await session.start()
        connector.failNextConnects(10)
        connector.current.endOfStream()
        #expect(await events.wait { if case .gaveUp = $0 { return true } else { return false } } != nil)
        #expect(await session.state == .stopped)
        await #expect(throws: HCISessionError.notRunning(state: "stopped")) { try await session.send(HCIReset()) }
    }

    @Test func garbledAndTruncatedEventsAreSkipped() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector)
        let events = Recorder<HCISessionEvent>()
        let reports = Recorder<LEAdvertisingReport>()
        await events.start(session.events)
        await reports.start(session.advertisingReports)
        try await session.start()
        let c = connector.current
        c.inject(packet("04 0e 04 01 03 0c"))                                          // truncated: header says 4
        c.inject(packet("04 3e 0c 02 02 03 01 11 22 33 44 55 66 00 c4"))              // 2 reports announced, 1 present
        c.inject(packet("04 3e 0e 02 01 07 01 11 22 33 44 55 66 00 c4 00 00"))        // bad event type
        c.inject(packet("04 3e 0e 02 01 03 01 11 22 33 44 55 66 02 01 02 c4"))        // a good report
        c.inject(packet("04 3e 1d 0d 01 10 00 01 11 22 33 44 55 66 01 00 ff 7f c8 00 00 00 00 00 00 00 00 00 03 02 01 06"))
        let first = await reports.wait { _ in true }
        #expect(first == LEAdvertisingReport(address: try BDAddress(string: "66:55:44:33:22:11"), addressType: .random, kind: .advNonconnInd, rssi: -60, data: [1, 2]))
        #expect(await reports.wait { $0.rssi == -56 } != nil, "extended report arrives too")
        let discarded = await events.items.filter { if case .eventDiscarded = $0 { return true } else { return false } }
        #expect(discarded.count == 3)
        #expect(discarded.first == .eventDiscarded(reason: "HCI event Command Complete (0x0e) parameters: length mismatch, expected 4 bytes, got 3"))
        try await session.send(HCILESetAdvertisingEnable(enabled: false))
        #expect(await session.state == .running)
        await session.stop()
    }

    @Test func stopFailsPendingCommandsAndEndsStreams() async throws {
        let connector = ScriptedConnector()
        let (session, _) = makeSession(connector, timeout: .seconds(60))
        try await session.start()
        connector.current.silence(HCIReset.opcode)
        let pending = Task { try await session.send(HCIReset()) }
        while connector.current.sentOpcodes.filter({ $0 == HCIReset.opcode }).count < 2 { try await Task.sleep(for: .milliseconds(2)) }
        await session.stop()
        await #expect(throws: HCISessionError.connectionLost(command: "Reset", reason: "session stopped")) { try await pending.value }
        var it = session.events.makeAsyncIterator()
        #expect(await it.next() == nil)
    }
}
