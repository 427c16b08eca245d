import ENProtocol
import Foundation
import Logging

/// Protocol time for the radio: Unix seconds now, and a sleep measured in protocol seconds.
/// A scaled clock (`--time-scale N`) makes protocol time run N times faster than real time.
public struct RadioClock: Sendable {
    public let now: @Sendable () -> Double
    public let sleep: @Sendable (Double) async throws -> Void

    public init(now: @escaping @Sendable () -> Double, sleep: @escaping @Sendable (Double) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// Real time, or real time sped up `scale` times from the moment this is called.
    public static func system(scale: Double = 1) -> RadioClock {
        precondition(scale >= 1, "time scale must be at least 1")
        let wallStart = Date().timeIntervalSince1970
        let monoStart = ContinuousClock.now
        return RadioClock(
            now: { wallStart + (ContinuousClock.now - monoStart).seconds * scale },
            sleep: { seconds in
                guard seconds > 0 else { return }
                try await Task.sleep(for: .seconds(seconds / scale))
            })
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// Rotates GAEN beacons: at each rotation, the TEK of the UTC day, the RPI and AEM of the
/// current interval and a fresh address go on air together; the next rotation comes after the
/// node's own `RotationPolicy` delay (uniformly random 10-20 minutes of protocol time, GAEN
/// Bluetooth spec), so `gaenctl radio advertise` and gaend rotate by one rule. A rotation
/// period never shorter than the 10-minute interval means one RPI is never sent from two
/// addresses.
public struct GAENAdvertisingRotation: Sendable {
    public let policy: RotationPolicy

    public init(policy: RotationPolicy = RotationPolicy()) {
        self.policy = policy
    }

    public func nextDelay(random: inout some RandomBytesGenerator) throws -> Double {
        try policy.nextDelay(using: &random)
    }

    /// Advertises until cancelled or `until` (protocol time) passes; calls `onRotation` after
    /// each beacon went on air. Returns normally at `until`; advertising is left on for the
    /// caller to stop.
    public func run(advertiser: BeaconAdvertiser, clock: RadioClock, metadata: BluetoothMetadata, logger: Logger,
                    keyForDay: @Sendable (UTCDay) async throws -> TemporaryExposureKey,
                    until: Double? = nil,
                    onRotation: @Sendable (GAENBeacon, Double) async -> Void) async throws {
        let factory = try GAENBeaconFactory()
        var random = SecureRandom()
        while !Task.isCancelled {
            let t = clock.now()
            if let until, t >= until { return }
            let interval = ENIntervalNumber(unixSeconds: t)
            let tek = try await keyForDay(interval.utcDay)
            let b = try factory.beacon(tek: tek, interval: interval, metadata: metadata, random: &random)
            try await showRetrying(b.beacon, advertiser: advertiser, logger: logger)
            await onRotation(b, t)
            var delay = try nextDelay(random: &random)
            if let until { delay = min(delay, max(0, until - clock.now())) }
            try await clock.sleep(delay)
        }
    }

    /// Retries a failed rotation with the SAME beacon (real-time backoff 0.25 s doubling to
    /// 4 s): a failed enable may still have reached the air, and a retry with a new address
    /// would then send one RPI from two addresses.
    func showRetrying(_ beacon: Beacon, advertiser: BeaconAdvertiser, logger: Logger) async throws {
        var backoff = 0.25
        while true {
            do {
                try await advertiser.show(beacon)
                return
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning("rotation failed; retrying the same beacon", metadata: ["radio.error": "\(error)", "radio.retry_in_s": "\(backoff)"])
                try await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 4)
            }
        }
    }
}
