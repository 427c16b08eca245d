#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The node's scheduling policy: when to rotate the advertisement and when to scan.
///
/// Pure: the caller passes every clock reading and the random source in, so the daemon (on
/// the real or a scaled clock) and `gaenctl simulate` (on a virtual clock) run exactly the
/// same policy, and tests run days of it in milliseconds.
///
/// ## Rules (also in docs/schedule.md)
/// 1. Timers run on monotonic time only. A rotation is due `RotationPolicy.nextDelay` (a
///    uniformly random 10-20 min) of monotonic time after the previous one; a scan start is
///    due `ScanPolicy.nextStartDelay` after the previous start. A step of the wall clock, in
///    either direction, neither fires nor delays a timer, so there is no rotation storm.
/// 2. A timer that fires late (the process was stopped, the machine was busy) fires once and
///    the next deadline is measured from the moment it actually fired: nothing catches up.
/// 3. The content of a rotation is read from the wall clock at the moment of the rotation:
///    the RPI of the interval containing it, the TEK of the UTC day containing it. The store
///    hands out the existing key of that day or creates one atomically, so a backward step
///    into a day that already has a key reuses that key: never a second key for a day. A
///    forward step skips days without creating keys for them (nothing was advertised then).
/// 4. Midnight does not force a rotation: the advertisement that is on air at 00:00 UTC keeps
///    the previous day's RPI until its rotation, at most 20 minutes later. `advertising.day`
///    says which day's key is on air, for whoever releases keys (a key is released only
///    once its day is over and it is no longer on air).
/// 5. Durations are never negative: a scan's end time is its start wall time plus the
///    monotonic time it lasted; report times inside a scan are derived the same way.
/// 6. While the clock is not synchronised (and the check is not waived) the node neither
///    advertises nor starts scans: advertising stops at once, a scan in progress still ends
///    and is recorded (its times derive from its start, taken while the clock was trusted).
///    When the clock becomes synchronised the node rotates and scans at once.
public struct NodeSchedule: Sendable {
    public let rotation: RotationPolicy
    public let scan: ScanPolicy
    /// While paused for an unsynchronised clock, how often to look again (seconds).
    public let syncRecheckSeconds: Double

    /// What is on air now, if anything.
    public private(set) var advertising: AdvertisingSlot?
    /// The scan in progress, if any.
    public private(set) var currentScan: ScanWindow?
    /// Monotonic deadlines (seconds).
    public private(set) var nextRotation: Double?
    public private(set) var nextScanStart: Double?
    /// Whether the last reading found the clock unusable.
    public private(set) var paused = true
    private var lastMonotonic: Double?

    public init(rotation: RotationPolicy = RotationPolicy(), scan: ScanPolicy = .default, syncRecheckSeconds: Double = 5) {
        self.rotation = rotation
        self.scan = scan
        self.syncRecheckSeconds = syncRecheckSeconds
    }

    /// Applies everything due at `reading` and returns the actions to perform, in order.
    /// Call it at (or after) `nextDeadline`, and whenever the synchronisation state changes.
    public mutating func advance(to reading: ClockReading, random: inout some RandomBytesGenerator) throws -> [ScheduleAction] {
        // Monotonic time never goes back; a reading that does is clamped so no timer misfires.
        let now = max(reading.monotonic, lastMonotonic ?? reading.monotonic)
        lastMonotonic = now
        var actions: [ScheduleAction] = []

        if let running = currentScan, now >= running.plannedEndMonotonic {
            actions.append(.finishScan(running.completed(atMonotonic: now)))
            currentScan = nil
        }

        guard reading.synchronized else {
            pause(&actions)
            return actions
        }

        if paused {
            paused = false
            nextRotation = now
            nextScanStart = now
        }

        if let due = nextRotation, now >= due {
            let slot = AdvertisingSlot(wall: reading.wall)
            actions.append(.rotate(slot))
            advertising = slot
            nextRotation = now + (try rotation.nextDelay(using: &random))
        }

        if currentScan == nil, let due = nextScanStart, now >= due {
            let window = ScanWindow(startWall: reading.wall, startMonotonic: now, duration: scan.duration)
            actions.append(.startScan(window))
            currentScan = window
            nextScanStart = now + (try scan.nextStartDelay(using: &random))
        }
        return actions
    }

    /// Stops everything (node disabled or shutting down): the scan in progress is recorded up
    /// to now, advertising stops. A later `advance` starts again as after a pause.
    public mutating func stop(at reading: ClockReading) -> [ScheduleAction] {
        var actions: [ScheduleAction] = []
        let now = max(reading.monotonic, lastMonotonic ?? reading.monotonic)
        lastMonotonic = now
        if let running = currentScan {
            actions.append(.finishScan(running.completed(atMonotonic: now)))
            currentScan = nil
        }
        pause(&actions)
        return actions
    }

    /// Advertising stops and no timer runs until an `advance` with a synchronised clock.
    private mutating func pause(_ actions: inout [ScheduleAction]) {
        if advertising != nil {
            actions.append(.stopAdvertising)
            advertising = nil
        }
        nextRotation = nil
        nextScanStart = nil
        paused = true
    }

    /// The monotonic time at which `advance` has something to do next.
    public var nextDeadline: Double {
        if paused { return (lastMonotonic ?? 0) + syncRecheckSeconds }
        let candidates = [nextRotation, currentScan?.plannedEndMonotonic, currentScan == nil ? nextScanStart : nil]
        return candidates.compactMap { $0 }.min() ?? (lastMonotonic ?? 0) + syncRecheckSeconds
    }
}

/// One reading of the node's clocks: wall time (UTC Unix seconds, may step), monotonic
/// seconds (never step) and whether the wall clock is synchronised (or the check waived).
public struct ClockReading: Sendable, Equatable {
    public var wall: Double
    public var monotonic: Double
    public var synchronized: Bool
    public init(wall: Double, monotonic: Double, synchronized: Bool = true) {
        self.wall = wall
        self.monotonic = monotonic
        self.synchronized = synchronized
    }
}

/// What the node must do, in the order given.
public enum ScheduleAction: Sendable, Equatable {
    /// One operation: stop advertising, new non-resolvable address, the RPI and AEM of the
    /// slot (TEK of `slot.day`, RPI of `slot.interval`), start advertising.
    case rotate(AdvertisingSlot)
    case stopAdvertising
    case startScan(ScanWindow)
    /// Stop scanning and record the scan (also when it saw nothing).
    case finishScan(CompletedScan)
}

/// The key day and interval an advertisement is made from.
public struct AdvertisingSlot: Sendable, Hashable, CustomStringConvertible {
    public var interval: ENIntervalNumber
    public var day: UTCDay { interval.utcDay }
    public init(interval: ENIntervalNumber) { self.interval = interval }
    /// The slot of the wall time `wall` (UTC Unix seconds).
    public init(wall: Double) { interval = ENIntervalNumber(unixSeconds: wall) }
    public var description: String { "day \(day) interval \(interval)" }
}

/// A scan as started: its wall start (trusted clock), monotonic start and planned length.
public struct ScanWindow: Sendable, Equatable {
    public var startWall: Double
    public var startMonotonic: Double
    public var duration: Double
    public var plannedEndMonotonic: Double { startMonotonic + duration }

    public init(startWall: Double, startMonotonic: Double, duration: Double) {
        self.startWall = startWall
        self.startMonotonic = startMonotonic
        self.duration = duration
    }

    /// Wall time of an event seen at monotonic time `m` during this scan: the start wall time
    /// plus elapsed monotonic time, so a wall-clock step during a scan cannot make a report
    /// earlier than its scan or times within a scan go backwards.
    public func wallTime(atMonotonic m: Double) -> Double { startWall + max(0, m - startMonotonic) }

    public func completed(atMonotonic m: Double) -> CompletedScan {
        CompletedScan(startWall: startWall, endWall: wallTime(atMonotonic: m))
    }
}

/// A finished scan's times as recorded: `endWall >= startWall` always.
public struct CompletedScan: Sendable, Equatable {
    public var startWall: Double
    public var endWall: Double
    public init(startWall: Double, endWall: Double) {
        self.startWall = startWall
        self.endWall = max(startWall, endWall)
    }
}

/// Why a schedule setting is refused.
public enum ScheduleConfigError: Error, Equatable, CustomStringConvertible {
    case invalidRange(setting: String, allowed: String, actual: String)
    public var description: String {
        switch self {
        case .invalidRange(let s, let allowed, let actual): return "\(s) must be \(allowed), got \(actual)"
        }
    }
}

/// Advertising rotation: a uniformly random delay between rotations (GAEN Bluetooth spec:
/// address, RPI and AEM change together at a randomised 10-20 minutes).
public struct RotationPolicy: Sendable, Equatable {
    public let minimumSeconds: Double
    public let maximumSeconds: Double

    public init() { minimumSeconds = 600; maximumSeconds = 1200 }

    /// Other bounds are for simulation and experiments only; the node uses the default.
    public init(minimumSeconds: Double, maximumSeconds: Double) throws {
        guard minimumSeconds > 0, minimumSeconds.isFinite, maximumSeconds.isFinite, maximumSeconds >= minimumSeconds else {
            throw ScheduleConfigError.invalidRange(setting: "rotation period", allowed: "0 < minimum <= maximum",
                                                   actual: "\(minimumSeconds)...\(maximumSeconds)")
        }
        self.minimumSeconds = minimumSeconds
        self.maximumSeconds = maximumSeconds
    }

    public func nextDelay(using random: inout some RandomBytesGenerator) throws -> Double {
        try UniformRandom.value(in: minimumSeconds...maximumSeconds, using: &random)
    }
}

/// How often the node scans, between the start of one scan and the start of the next.
public enum ScanCadence: Sendable, Equatable {
    /// The reference behaviour: a uniformly random period, by default 210-300 s.
    case randomPeriod(ClosedRange<Double>)
    /// A fixed period (trials that want regular sampling).
    case fixedPeriod(Double)
    /// Back-to-back scans: each scan is one record of `duration` seconds, the next starts as
    /// it ends (the controller may stay in scan mode across records).
    case continuous
}

/// Scan length and cadence. The node's scans are 2-4 s (default 4 s, the reference); in
/// continuous mode a scan is a record of up to 300 s.
public struct ScanPolicy: Sendable, Equatable {
    public let duration: Double
    public let cadence: ScanCadence

    public static let defaultDuration: Double = 4
    public static let defaultPeriod: ClosedRange<Double> = 210...300
    public static let `default` = ScanPolicy(uncheckedDuration: defaultDuration, cadence: .randomPeriod(defaultPeriod))

    private init(uncheckedDuration: Double, cadence: ScanCadence) {
        duration = uncheckedDuration
        self.cadence = cadence
    }

    public init(duration: Double = ScanPolicy.defaultDuration, cadence: ScanCadence = .randomPeriod(ScanPolicy.defaultPeriod)) throws {
        switch cadence {
        case .continuous:
            guard duration.isFinite, (1...300).contains(duration) else {
                throw ScheduleConfigError.invalidRange(setting: "continuous scan record length", allowed: "1...300 s", actual: "\(duration) s")
            }
        case .randomPeriod(let range):
            try Self.checkDuration(duration)
            guard range.lowerBound.isFinite, range.upperBound.isFinite, range.lowerBound >= duration else {
                throw ScheduleConfigError.invalidRange(setting: "scan period", allowed: "finite and at least the scan duration (\(duration) s)",
                                                       actual: "\(range.lowerBound)...\(range.upperBound) s")
            }
        case .fixedPeriod(let p):
            try Self.checkDuration(duration)
            guard p.isFinite, p >= duration else {
                throw ScheduleConfigError.invalidRange(setting: "scan period", allowed: "finite and at least the scan duration (\(duration) s)", actual: "\(p) s")
            }
        }
        self.duration = duration
        self.cadence = cadence
    }

    private static func checkDuration(_ d: Double) throws {
        guard d.isFinite, (2...4).contains(d) else {
            throw ScheduleConfigError.invalidRange(setting: "scan duration", allowed: "2...4 s", actual: "\(d) s")
        }
    }

    /// Delay from one scan's start to the next one's.
    public func nextStartDelay(using random: inout some RandomBytesGenerator) throws -> Double {
        switch cadence {
        case .randomPeriod(let range): return try UniformRandom.value(in: range, using: &random)
        case .fixedPeriod(let p): return p
        case .continuous: return duration
        }
    }
}

/// Uniform doubles from a byte source (53 random bits, the precision of a Double).
public enum UniformRandom {
    public static func unit(using random: inout some RandomBytesGenerator) throws -> Double {
        let bytes = try random.bytes(8)
        var v: UInt64 = 0
        for b in bytes { v = v << 8 | UInt64(b) }
        return Double(v >> 11) / Double(UInt64(1) << 53)
    }

    /// A value in `range`, both ends reachable up to rounding.
    public static func value(in range: ClosedRange<Double>, using random: inout some RandomBytesGenerator) throws -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * (try unit(using: &random))
    }
}
