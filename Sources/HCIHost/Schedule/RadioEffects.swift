import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The schedule's actions applied to the radio owner: the one set of radio effects that gaend,
/// `gaenctl radio advertise|scan` and the `schedule-idle` benchmark run. What to advertise
/// and what to do with a finished scan come from the caller (gaend: the day's key from the
/// store, scans into the store).
package struct RadioScheduleEffects: ScheduleEffects {
    package struct Roles: OptionSet, Sendable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }
        package static let advertising = Roles(rawValue: 1)
        package static let scanning = Roles(rawValue: 2)
        package static let all: Roles = [.advertising, .scanning]
    }

    package let radio: RadioOwner
    package let roles: Roles
    /// The beacon of a slot; nil (or a throw, logged by the caller) keeps what is on air.
    let beacon: @Sendable (AdvertisingSlot, ClockReading) async -> GAENBeacon?
    let rotated: @Sendable (GAENBeacon, ClockReading) async -> Void
    let scanned: @Sendable (Scan) async -> Void
    /// The receiver's RSSI correction in use, read as each scan ends (nil: none known).
    let rssiCorrection: @Sendable () -> Int?

    package init(radio: RadioOwner, roles: Roles = .all,
                beacon: @escaping @Sendable (AdvertisingSlot, ClockReading) async -> GAENBeacon?,
                rotated: @escaping @Sendable (GAENBeacon, ClockReading) async -> Void = { _, _ in },
                rssiCorrection: @escaping @Sendable () -> Int? = { nil },
                scanned: @escaping @Sendable (Scan) async -> Void = { _ in }) {
        self.radio = radio
        self.roles = roles
        self.beacon = beacon
        self.rotated = rotated
        self.rssiCorrection = rssiCorrection
        self.scanned = scanned
    }

    package func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        var consumed = Set<Int>()
        for (i, action) in actions.enumerated() where !consumed.contains(i) {
            // A scan that ends as the next one starts (continuous mode, possibly with a rotation
            // due at the same moment in between): one record ends and the next begins without
            // turning scanning off and on, so the rotation pauses scanning as any other does.
            if case .finishScan(let done) = action, roles.contains(.scanning),
               let j = actions.indices.first(where: { $0 > i && actions[$0].isScanStart }),
               case .startScan(let next) = actions[j] {
                consumed.insert(j)
                if let record = await radio.finishScan(done, continuingWith: next, rssiCorrection: rssiCorrection()) { await scanned(record) }
                continue
            }
            await perform(action, at: reading)
        }
    }

    package func perform(_ action: ScheduleAction, at reading: ClockReading) async {
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
            if let record = await radio.finishScan(done, rssiCorrection: rssiCorrection()) { await scanned(record) }
        }
    }
}

extension ScheduleAction {
    var isScanStart: Bool {
        if case .startScan = self { return true }
        return false
    }
}
