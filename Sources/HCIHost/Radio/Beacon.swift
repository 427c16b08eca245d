import HCIProtocol

/// What goes on air: a random address and the advertising data sent from it. The radio owner
/// knows nothing of GAEN; `GAENBeaconFactory` makes the GAEN ones.
package struct Beacon: Equatable, Sendable {
    package var address: BDAddress
    package var advertisingData: [UInt8]
    package init(address: BDAddress, advertisingData: [UInt8]) {
        self.address = address
        self.advertisingData = advertisingData
    }
}

/// Advertising bounds (GAEN Bluetooth spec: 200-270 ms, all three channels), sent as legacy
/// ADV_NONCONN_IND from a random address.
package struct AdvertisingTiming: Equatable, Sendable {
    package var intervalMinMs: Double
    package var intervalMaxMs: Double
    package init(intervalMinMs: Double = 200, intervalMaxMs: Double = 270) {
        self.intervalMinMs = intervalMinMs
        self.intervalMaxMs = intervalMaxMs
    }
}
