import HCIProtocol

/// What goes on air: a random address and the advertising data sent from it. The radio owner
/// knows nothing of GAEN; `GAENBeaconFactory` makes the GAEN ones.
public struct Beacon: Equatable, Sendable {
    public var address: BDAddress
    public var advertisingData: [UInt8]
    public init(address: BDAddress, advertisingData: [UInt8]) {
        self.address = address
        self.advertisingData = advertisingData
    }
}

/// Advertising bounds (GAEN Bluetooth spec: 200-270 ms, all three channels), sent as legacy
/// ADV_NONCONN_IND from a random address.
public struct AdvertisingTiming: Equatable, Sendable {
    public var intervalMinMs: Double
    public var intervalMaxMs: Double
    public init(intervalMinMs: Double = 200, intervalMaxMs: Double = 270) {
        self.intervalMinMs = intervalMinMs
        self.intervalMaxMs = intervalMaxMs
    }
}
