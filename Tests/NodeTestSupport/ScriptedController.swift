import Foundation
import HCIHost
import HCIProtocol
import HCITestSupport
import Synchronization

/// An in-process controller behind a fake transport: it records every command packet the
/// host sends (so tests compare them with expected captures) and answers like a controller
/// would, with knobs for the faults under test.
package final class ScriptedController: HCITransport, @unchecked Sendable {
    package let packets: AsyncThrowingStream<H4Packet, any Error>
    private let continuation: AsyncThrowingStream<H4Packet, any Error>.Continuation
    /// What was sent, and the behaviour a test sets before or during its run.
    private struct Link {
        var sent: [H4Packet] = []
        var closed = false
        var silent: Set<HCIOpcode> = []
        var status: [HCIOpcode: HCIStatusCode] = [:]
        var ncmd: UInt8 = 1
        var useCommandStatusFor: Set<HCIOpcode> = []
        var failNext: [HCIOpcode: (status: HCIStatusCode, count: Int)] = [:]
        var scanEnabled = false
        var advertisingEnabled = false
        var wedged = false
    }
    private let link = Mutex(Link())
    private let wedge = DispatchSemaphore(value: 0)

    package init() {
        (packets, continuation) = AsyncThrowingStream.makeStream(of: H4Packet.self, throwing: (any Error).self)
    }

    package var sent: [H4Packet] { link.withLock { $0.sent } }
    package var sentOpcodes: [HCIOpcode] { sent.compactMap { try? HCICommandPacket($0).opcode } }
    package var isClosed: Bool { link.withLock { $0.closed } }
    package func silence(_ opcode: HCIOpcode) { link.withLock { _ = $0.silent.insert(opcode) } }
    package func answer(_ opcode: HCIOpcode, status: HCIStatusCode, viaCommandStatus: Bool = false) {
        link.withLock { link in
            link.status[opcode] = status
            if viaCommandStatus { link.useCommandStatusFor.insert(opcode) }
        }
    }
    package func setNcmd(_ n: UInt8) { link.withLock { $0.ncmd = n } }
    /// The next `count` commands with `opcode` are answered with `status` (not executed).
    package func failNext(_ opcode: HCIOpcode, status: HCIStatusCode, count: Int = 1) { link.withLock { $0.failNext[opcode] = (status, count) } }
    package var advertising: Bool { link.withLock { $0.advertisingEnabled } }
    package var scanning: Bool { link.withLock { $0.scanEnabled } }

    /// Delivers a packet as if the controller had sent it.
    package func inject(_ packet: H4Packet) { continuation.yield(packet) }
    /// The controller's end of the link closes (EOF).
    package func endOfStream() { continuation.finish() }

    /// From now on a write blocks its thread until `unwedgeWrites()`, as a write to a stuck
    /// kernel socket or UART would.
    package func wedgeWrites() { link.withLock { $0.wedged = true } }
    package func unwedgeWrites() {
        if link.withLock({ let w = $0.wedged; $0.wedged = false; return w }) { wedge.signal() }
    }

    package func send(_ packet: H4Packet) throws {
        if link.withLock({ $0.wedged }) { wedge.wait() }
        let replies: [H4Packet] = try link.withLock { link in
            guard !link.closed else { throw HCITransportError.closed }
            link.sent.append(packet)
            let command = try HCICommandPacket(packet)
            return Self.reply(to: command, &link)
        }
        for r in replies { continuation.yield(r) }
    }

    package func close() {
        link.withLock { $0.closed = true }
        continuation.finish()
    }

    /// The controller's answer to `command`, as it changes `link` (called holding the Mutex).
    private static func reply(to command: HCICommandPacket, _ l: inout Link) -> [H4Packet] {
        let op = command.opcode
        if l.silent.contains(op) { return [] }
        if let f = l.failNext[op], f.count > 0 {
            l.failNext[op] = f.count > 1 ? (f.status, f.count - 1) : nil
            return [HCIEvent.commandComplete(.init(numHCICommandPackets: l.ncmd, opcode: op, returnParameters: [f.status.rawValue])).packet]
        }
        var status = l.status[op] ?? .success
        // Like a BCM43455: disabling a scan that is off is Command Disallowed; so is
        // changing the random address while advertising or scanning.
        if op == HCILESetScanEnable.opcode, let c = try? HCILESetScanEnable(parameters: command.parameters[...]) {
            if !c.enabled && !l.scanEnabled && l.status[op] == nil { status = .commandDisallowed }
            if status == .success { l.scanEnabled = c.enabled }
        }
        if op == HCILESetRandomAddress.opcode, l.advertisingEnabled || l.scanEnabled, l.status[op] == nil { status = .commandDisallowed }
        if op == HCILESetAdvertisingEnable.opcode, status == .success, let c = try? HCILESetAdvertisingEnable(parameters: command.parameters[...]) {
            l.advertisingEnabled = c.enabled
        }
        if op == HCIReset.opcode { l.scanEnabled = false; l.advertisingEnabled = false }
        if l.useCommandStatusFor.contains(op) {
            return [HCIEvent.commandStatus(.init(status: status, numHCICommandPackets: l.ncmd, opcode: op)).packet]
        }
        var returned = [status.rawValue]
        if status == .success { returned += returnParameters(op) }
        return [HCIEvent.commandComplete(.init(numHCICommandPackets: l.ncmd, opcode: op, returnParameters: returned)).packet]
    }

    package static let version = HCIReadLocalVersionInformation.ReturnParameters(hciVersion: 0x0c, hciSubversion: 0x0100, lmpVersion: 0x0c, companyIdentifier: 0x000F, lmpSubversion: 0x2209)
    package static let address = try! BDAddress(string: "B8:27:EB:01:02:03")

    package static func returnParameters(_ op: HCIOpcode) -> [UInt8] {
        switch op {
        case HCIReadLocalVersionInformation.opcode: return HCIReadLocalVersionInformation.encodeReturnParameters(version)
        case HCIReadLocalSupportedCommands.opcode: return [UInt8](repeating: 0xFF, count: 64)
        case HCIReadLocalSupportedFeatures.opcode: return HCIReadLocalSupportedFeatures.encodeReturnParameters(.leSupportedController)
        case HCILEReadLocalSupportedFeatures.opcode: return HCILEReadLocalSupportedFeatures.encodeReturnParameters([.encryption, .extendedAdvertising])
        case HCIReadBDAddr.opcode: return address.littleEndianBytes
        case HCILEReadAdvertisingPhysicalChannelTxPower.opcode: return [UInt8(bitPattern: -4)]
        default: return []
        }
    }
}

/// Hands out a new ScriptedController per connect; can be told to refuse connects.
package final class ScriptedConnector: HCITransportConnector, Sendable {
    private let state = Mutex<(controllers: [ScriptedController], failures: Int)>(([], 0))
    private let configure: @Sendable (ScriptedController) -> Void

    package init(configure: @escaping @Sendable (ScriptedController) -> Void = { _ in }) { self.configure = configure }

    package var description: String { "scripted" }
    package var controllers: [ScriptedController] { state.withLock { $0.controllers } }
    package var current: ScriptedController { controllers.last! }
    package func failNextConnects(_ n: Int) { state.withLock { $0.failures = n } }

    package func connect() async throws -> any HCITransport {
        try state.withLock { state in
            if state.failures > 0 {
                state.failures -= 1
                throw HCITransportError.connectionRefused(address: "scripted")
            }
            let c = ScriptedController()
            configure(c)
            state.controllers.append(c)
            return c
        }
    }
}

/// A standard `Clock` for the session's timeouts and backoff that sleeps a scaled-down real
/// time and records what was asked, so that they keep their order but tests take
/// milliseconds. Its `now` stands still at zero, so `sleep(for: d)` arrives here as a
/// deadline of exactly `d`.
package final class ScaledSleeper: Clock, Sendable {
    package struct Instant: InstantProtocol {
        package var offset: Duration
        package func advanced(by d: Duration) -> Instant { Instant(offset: offset + d) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }
    private let requested = Mutex<[Duration]>([])
    package let scale: Double
    package init(scale: Double = 0.01) { self.scale = scale }
    package var requests: [Duration] { requested.withLock { $0 } }
    package var now: Instant { Instant(offset: .zero) }
    package var minimumResolution: Duration { .nanoseconds(1) }
    package func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        requested.withLock { $0.append(deadline.offset) }
        try await Task.sleep(for: deadline.offset * scale)
    }
}

/// Collects a stream in the background; tests wait for an element matching a predicate.
package actor Recorder<Element: Sendable> {
    package private(set) var items: [Element] = []
    private var task: Task<Void, Never>?

    package init() {}

    package func start(_ stream: AsyncStream<Element>) {
        task = Task { for await e in stream { self.append(e) } }
    }
    private func append(_ e: Element) { items.append(e) }

    /// Waits up to `timeout` for an element satisfying `predicate`; nil if none came.
    /// The default is generous: only a failing test waits that long, and a loaded CI machine
    /// has taken over 5 s for a scripted reconnect.
    package func wait(timeout: Duration = .seconds(60), _ predicate: @Sendable (Element) -> Bool) async -> Element? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let e = items.first(where: predicate) { return e }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return items.first(where: predicate)
    }
}
