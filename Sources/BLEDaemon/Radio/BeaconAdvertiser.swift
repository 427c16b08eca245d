import HCIProtocol
import Logging

/// What goes on air: a random address and the advertising data sent from it. The advertiser
/// knows nothing of GAEN; `GAENBeaconFactory` makes the GAEN ones.
public struct Beacon: Equatable, Sendable {
    public var address: BDAddress
    public var advertisingData: [UInt8]
    public init(address: BDAddress, advertisingData: [UInt8]) {
        self.address = address
        self.advertisingData = advertisingData
    }
}

/// Advertising bounds (GAEN Bluetooth spec: 200-270 ms, all three channels).
public struct AdvertisingTiming: Equatable, Sendable {
    public var intervalMinMs: Double
    public var intervalMaxMs: Double
    public init(intervalMinMs: Double = 200, intervalMaxMs: Double = 270) {
        self.intervalMinMs = intervalMinMs
        self.intervalMaxMs = intervalMaxMs
    }
}

/// Shows beacons as legacy ADV_NONCONN_IND from a random address on all channels.
///
/// Changing what is on air is ONE operation (`show`): disable, set random address, set
/// parameters, set data, enable. Controllers reject LE Set Random Address while advertising,
/// and enabling only at the end means a failure midway leaves advertising off rather than a new
/// RPI paired with an old address (or the reverse).
public actor BeaconAdvertiser {
    private let session: HCIControllerSession
    private let timing: AdvertisingTiming
    private let logger: Logger
    /// The beacon that should be on air (nil when stopped): set before a rotation starts, so a
    /// controller reset in the middle of one restores the beacon it was putting up.
    public private(set) var intended: Beacon?
    /// True once `intended` was fully put on air.
    public private(set) var onAir = false
    /// Number of beacons put on air, for status counters.
    public private(set) var rotations = 0
    // Operations on the controller are serialized: a restore after a reconnect must not
    // interleave its commands with a rotation in progress (the actor alone would let them
    // interleave at every await).
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init(session: HCIControllerSession, timing: AdvertisingTiming = .init(), logger: Logger) {
        self.session = session
        self.timing = timing
        self.logger = logger
    }

    /// Puts `beacon` on air, replacing the current one as one operation. On failure
    /// advertising is off; calling `show` again with the same beacon is always safe.
    public func show(_ beacon: Beacon) async throws {
        await lock()
        defer { unlock() }
        let isNew = beacon != intended || !onAir
        intended = beacon
        onAir = false
        try await disable()
        try await session.send(HCILESetRandomAddress(address: beacon.address))
        try await session.send(HCILESetAdvertisingParameters(
            intervalMin: AdvertisingInterval(milliseconds: timing.intervalMinMs),
            intervalMax: AdvertisingInterval(milliseconds: timing.intervalMaxMs),
            type: .advNonconnInd, ownAddressType: .random, channelMap: .all))
        try await session.send(HCILESetAdvertisingData(data: beacon.advertisingData))
        try await session.send(HCILESetAdvertisingEnable(enabled: true))
        onAir = true
        if isNew { rotations += 1 }
        logger.debug("advertising", metadata: ["radio.address": "\(beacon.address)"])
    }

    /// Puts the intended beacon on air again after the controller was reset (same address and
    /// data, so the pairing of address and RPI is unchanged). No-op when stopped.
    public func restore() async throws {
        guard let beacon = intended else { return }
        try await show(beacon)
    }

    /// Stops advertising.
    public func stop() async throws {
        await lock()
        defer { unlock() }
        intended = nil
        onAir = false
        try await disable()
    }

    /// The controller's own advertising TX power (LE Read Advertising Physical Channel Tx
    /// Power), reported for calibration; it is not what goes into the AEM.
    public func controllerTxPower() async throws -> Int8 {
        try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower()).txPowerDBm
    }

    private func disable() async throws {
        do {
            try await session.send(HCILESetAdvertisingEnable(enabled: false))
        } catch HCISessionError.commandFailed(_, .commandDisallowed) {
            // Some controllers refuse to disable what is already off; that is the state we want.
        }
    }

    private func lock() async {
        if busy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            busy = true
        }
    }

    /// Hands the lock straight to the next waiter, so nobody can slip in between.
    private func unlock() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}
