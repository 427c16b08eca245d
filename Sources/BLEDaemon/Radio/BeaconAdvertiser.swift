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
    /// The beacon on air (nil when stopped). Kept to restore it after a controller reset.
    public private(set) var current: Beacon?
    /// Number of beacons shown (rotations), for status counters.
    public private(set) var rotations = 0

    public init(session: HCIControllerSession, timing: AdvertisingTiming = .init(), logger: Logger) {
        self.session = session
        self.timing = timing
        self.logger = logger
    }

    /// Puts `beacon` on air, replacing the current one as one operation.
    public func show(_ beacon: Beacon) async throws {
        try await disable()
        current = nil
        try await session.send(HCILESetRandomAddress(address: beacon.address))
        try await session.send(HCILESetAdvertisingParameters(
            intervalMin: AdvertisingInterval(milliseconds: timing.intervalMinMs),
            intervalMax: AdvertisingInterval(milliseconds: timing.intervalMaxMs),
            type: .advNonconnInd, ownAddressType: .random, channelMap: .all))
        try await session.send(HCILESetAdvertisingData(data: beacon.advertisingData))
        try await session.send(HCILESetAdvertisingEnable(enabled: true))
        current = beacon
        rotations += 1
        logger.debug("advertising", metadata: ["radio.address": "\(beacon.address)"])
    }

    /// Shows the current beacon again after the controller was reset (same address and data,
    /// so the pairing of address and RPI is unchanged). No-op when stopped.
    public func restore() async throws {
        guard let beacon = current else { return }
        rotations -= 1
        try await show(beacon)
    }

    /// Stops advertising.
    public func stop() async throws {
        current = nil
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
}
