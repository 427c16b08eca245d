import ENProtocol
import Foundation

/// The schedule's actions applied to the radio owner: the one set of radio effects that gaend,
/// `gaenctl radio advertise|scan` and the `schedule-idle` benchmark run. What to advertise
/// and what to do with a finished scan come from the caller (gaend: the day's key from the
/// store, scans into the store).
public struct RadioScheduleEffects: ScheduleEffects {
    public struct Roles: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let advertising = Roles(rawValue: 1)
        public static let scanning = Roles(rawValue: 2)
        public static let all: Roles = [.advertising, .scanning]
    }

    public let radio: RadioOwner
    public let roles: Roles
    /// The beacon of a slot; nil (or a throw, logged by the caller) keeps what is on air.
    let beacon: @Sendable (AdvertisingSlot, ClockReading) async -> GAENBeacon?
    let rotated: @Sendable (GAENBeacon, ClockReading) async -> Void
    let scanned: @Sendable (ScanRecord) async -> Void

    public init(radio: RadioOwner, roles: Roles = .all,
                beacon: @escaping @Sendable (AdvertisingSlot, ClockReading) async -> GAENBeacon?,
                rotated: @escaping @Sendable (GAENBeacon, ClockReading) async -> Void = { _, _ in },
                scanned: @escaping @Sendable (ScanRecord) async -> Void = { _ in }) {
        self.radio = radio
        self.roles = roles
        self.beacon = beacon
        self.rotated = rotated
        self.scanned = scanned
    }

    public func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        var i = actions.startIndex
        while i < actions.endIndex {
            // A scan that ends as the next one starts (continuous mode): one record ends and
            // the next begins without turning scanning off and on.
            if case .finishScan(let done) = actions[i], i + 1 < actions.endIndex, case .startScan(let next) = actions[i + 1],
               roles.contains(.scanning) {
                if let record = await radio.finishScan(done, continuingWith: next) { await scanned(record) }
                i += 2
                continue
            }
            await perform(actions[i], at: reading)
            i += 1
        }
    }

    public func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        switch action {
        case .rotate(let slot):
            guard roles.contains(.advertising), let b = await beacon(slot, reading) else { return }
            // One operation; a failure is retried by the owner at once, with backoff.
            await radio.advertise(b.beacon)
            await rotated(b, reading)
        case .stopAdvertising:
            await radio.stopAdvertising()
        case .startScan(let window):
            guard roles.contains(.scanning) else { return }
            await radio.startScan(window)
        case .finishScan(let done):
            // nil: scanning never reached the air (no controller), nothing was observed.
            if let record = await radio.finishScan(done) { await scanned(record) }
        }
    }
}
