import Foundation
import HCIHost
import HCIProtocol

/// An in-process controller behind a fake transport: it records every command packet the
/// host sends (so tests compare them with expected captures) and answers like a controller
/// would, with knobs for the faults under test.
package final class ScriptedController: HCITransport, @unchecked Sendable {
    package let packets: AsyncThrowingStream<H4Packet, any Error>
    private let continuation: AsyncThrowingStream<H4Packet, any Error>.Continuation
    private let lock = NSLock()
    private var _sent: [H4Packet] = []
    private var closed = false

    // Behaviour (set before or during a test; guarded by lock).
    private var _silent: Set<HCIOpcode> = []
    private var _status: [HCIOpcode: HCIStatusCode] = [:]
    private var _ncmd: UInt8 = 1
    private var _useCommandStatusFor: Set<HCIOpcode> = []
    private var _failNext: [HCIOpcode: (status: HCIStatusCode, count: Int)] = [:]
    private var scanEnabled = false
    private var advertisingEnabled = false
    private var _wedged = false
    private let wedge = DispatchSemaphore(value: 0)

    package init() {
        (packets, continuation) = AsyncThrowingStream.makeStream(of: H4Packet.self, throwing: (any Error).self)
    }

    package var sent: [H4Packet] { lock.withLock { _sent } }
    package var sentOpcodes: [HCIOpcode] { sent.compactMap { try? HCICommandPacket($0).opcode } }
    package var isClosed: Bool { lock.withLock { closed } }
    package func silence(_ opcode: HCIOpcode) { lock.withLock { _ = _silent.insert(opcode) } }
    package func answer(_ opcode: HCIOpcode, status: HCIStatusCode, viaCommandStatus: Bool = false) {
        lock.withLock {
            _status[opcode] = status
            if viaCommandStatus { _useCommandStatusFor.insert(opcode) }
        }
    }
    package func setNcmd(_ n: UInt8) { lock.withLock { _ncmd = n } }
    /// The next `count` commands with `opcode` are answered with `status` (not executed).
    package func failNext(_ opcode: HCIOpcode, status: HCIStatusCode, count: Int = 1) { lock.withLock { _failNext[opcode] = (status, count) } }
    package var advertising: Bool { lock.withLock { advertisingEnabled } }
    package var scanning: Bool { lock.withLock { scanEnabled } }

    /// Delivers a packet as if the controller had sent it.
    package func inject(_ packet: H4Packet) { continuation.yield(packet) }
    /// The controller's end of the link closes (EOF).
    package func endOfStream() { continuation.finish() }

    /// From now on a write blocks its thread until `unwedgeWrites()`, as a write to a stuck
    /// kernel socket or UART would.
    package func wedgeWrites() { lock.withLock { _wedged = true } }
    package func unwedgeWrites() {
        if lock.withLock({ let w = _wedged; _wedged = false; return w }) { wedge.signal() }
    }

    package func send(_ packet: H4Packet) throws {
        if lock.withLock({ _wedged }) { wedge.wait() }
        let replies: [H4Packet] = try lock.withLock {
            guard !closed else { throw HCITransportError.closed }
            _sent.append(packet)
            let command = try HCICommandPacket(packet)
            return reply(to: command)
        }
        for r in replies { continuation.yield(r) }
    }

    package func close() {
        lock.withLock { closed = true }
        continuation.finish()
    }

    /// Must be called with the lock held.
    private func reply(to command: HCICommandPacket) -> [H4Packet] {
        let op = command.opcode
        if _silent.contains(op) { return [] }
        if let f = _failNext[op], f.count > 0 {
            _failNext[op] = f.count > 1 ? (f.status, f.count - 1) : nil
            return [HCIEvent.commandComplete(.init(numHCICommandPackets: _ncmd, opcode: op, returnParameters: [f.status.rawValue])).packet]
        }
        var status = _status[op] ?? .success
        // Like a BCM43455: disabling a scan that is off is Command Disallowed; so is
        // changing the random address while advertising or scanning.
        if op == HCILESetScanEnable.opcode, let c = try? HCILESetScanEnable(parameters: command.parameters[...]) {
            if !c.enabled && !scanEnabled && _status[op] == nil { status = .commandDisallowed }
            if status == .success { scanEnabled = c.enabled }
        }
        if op == HCILESetRandomAddress.opcode, advertisingEnabled || scanEnabled, _status[op] == nil { status = .commandDisallowed }
        if op == HCILESetAdvertisingEnable.opcode, status == .success, let c = try? HCILESetAdvertisingEnable(parameters: command.parameters[...]) {
            advertisingEnabled = c.enabled
        }
        if op == HCIReset.opcode { scanEnabled = false; advertisingEnabled = false }
        if _useCommandStatusFor.contains(op) {
            return [HCIEvent.commandStatus(.init(status: status, numHCICommandPackets: _ncmd, opcode: op)).packet]
        }
        var returned = [status.rawValue]
        if status == .success { returned += Self.returnParameters(op) }
        return [HCIEvent.commandComplete(.init(numHCICommandPackets: _ncmd, opcode: op, returnParameters: returned)).packet]
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
package final class ScriptedConnector: HCITransportConnector, @unchecked Sendable {
    private let lock = NSLock()
    private var _controllers: [ScriptedController] = []
    private var failures = 0
    private let configure: @Sendable (ScriptedController) -> Void

    package init(configure: @escaping @Sendable (ScriptedController) -> Void = { _ in }) { self.configure = configure }

    package var description: String { "scripted" }
    package var controllers: [ScriptedController] { lock.withLock { _controllers } }
    package var current: ScriptedController { controllers.last! }
    package func failNextConnects(_ n: Int) { lock.withLock { failures = n } }

    package func connect() async throws -> any HCITransport {
        try lock.withLock {
            if failures > 0 {
                failures -= 1
                throw HCITransportError.connectionRefused(address: "scripted")
            }
            let c = ScriptedController()
            configure(c)
            _controllers.append(c)
            return c
        }
    }
}

/// A standard `Clock` for the session's timeouts and backoff that sleeps a scaled-down real
/// time and records what was asked, so that they keep their order but tests take
/// milliseconds. Its `now` stands still at zero, so `sleep(for: d)` arrives here as a
/// deadline of exactly `d`.
package final class ScaledSleeper: Clock, @unchecked Sendable {
    package struct Instant: InstantProtocol {
        package var offset: Duration
        package func advanced(by d: Duration) -> Instant { Instant(offset: offset + d) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }
    private let lock = NSLock()
    private var _requests: [Duration] = []
    package let scale: Double
    package init(scale: Double = 0.01) { self.scale = scale }
    package var requests: [Duration] { lock.withLock { _requests } }
    package var now: Instant { Instant(offset: .zero) }
    package var minimumResolution: Duration { .nanoseconds(1) }
    package func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        lock.withLock { _requests.append(deadline.offset) }
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

package func h(_ s: String) -> [UInt8] {
    let digits = s.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

package func packet(_ s: String) -> H4Packet {
    let b = h(s)
    return H4Packet(type: H4PacketType(rawValue: b[0])!, payload: Array(b.dropFirst()))
}
