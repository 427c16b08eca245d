#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a node accepts from an app that provides key files, beyond the format itself
/// (`KeyExportFile(parsing:)` checks that): bounds on how many keys a file and a day may hold,
/// and each key's validity against the node's clock. The clock is a parameter: this stays pure.
public struct KeyAcceptanceLimits: Sendable, Equatable {
    /// Keys (and revised keys) one file may hold. Anchor: key servers cut their exports into
    /// batches; the reference server (google/exposure-notifications-server) and the national
    /// servers publish at most about 750,000 keys per file (`KeyExportLimits`' note). At ~33
    /// bytes a key that is ~25 MB of export.bin, within `maxExportSize` below.
    public var maxKeysPerFile: Int
    /// Keys of one UTC day (rolling start) in one call, all files together. Each device
    /// uploads one key per day, so a day's keys of a region are one server batch: the same
    /// bound as a file.
    public var maxKeysPerDay: Int
    /// export.bin's size per file, checked on the ZIP's declared size before inflating (a zip
    /// bomb is refused before memory is spent) and again while inflating.
    public var maxExportSize: Int

    public init(maxKeysPerFile: Int = 750_000, maxKeysPerDay: Int = 750_000, maxExportSize: Int = 32 << 20) {
        self.maxKeysPerFile = maxKeysPerFile
        self.maxKeysPerDay = maxKeysPerDay
        self.maxExportSize = maxExportSize
    }

    public static let `default` = KeyAcceptanceLimits()

    /// The parse limits that go with these (the archive itself is at most export.bin's size,
    /// since deflate never needs more than a few bytes over it).
    public var parseLimits: KeyExportLimits {
        KeyExportLimits(maxFileSize: maxExportSize + (64 << 10), maxExportSize: maxExportSize, maxSignatureFileSize: 64 << 10)
    }
}

/// Why a parsed key file is not accepted.
public enum KeyAcceptanceError: Error, Equatable, CustomStringConvertible {
    case noKeys
    case tooManyKeys(count: Int, limit: Int)
    case tooManyKeysForDay(day: UTCDay, count: Int, limit: Int)
    /// A key whose validity starts after the start of tomorrow (UTC) on the node's clock.
    case startsInFuture(list: String, index: Int, start: UInt32, latest: UInt32)
    /// A key a rule of `KeyRules` refuses (other than its start, named above).
    case refused(list: String, index: Int, reason: KeyRefusal)

    public var description: String {
        switch self {
        case .noKeys:
            return "the file holds no keys"
        case .tooManyKeys(let c, let l):
            return "the file holds \(c) keys, more than the \(l) a key file may hold"
        case .tooManyKeysForDay(let d, let c, let l):
            return "\(c) keys start on \(d), more than the \(l) one day's keys may be"
        case .startsInFuture(let list, let i, let s, let latest):
            return "\(list)[\(i)]: rolling_start_interval_number \(s) starts after tomorrow (the latest start now is \(latest), 00:00 UTC tomorrow)"
        case .refused(let list, let i, let reason):
            return "\(list)[\(i)]: \(reason)"
        }
    }
}

/// The value rules of one key, the one place every component decides whether a key is
/// acceptable: the parser refuses a file whose keys break the format's ranges, gaend refuses
/// a provided file with a key it would not accept (`checkAcceptable`), and the trial's
/// publisher skips such a key before it signs anything, so it never publishes a package an
/// app or gaend refuses.
public enum KeyRules {
    /// rolling_period: at most one day of intervals (the proto's default, 144, when absent).
    public static let rollingPeriods: ClosedRange<UInt32> = 1...144
    /// days_since_onset_of_symptoms: the framework's range (its data mapping has 29 entries).
    public static let daysSinceOnset: ClosedRange<Int32> = -14...14
    /// transmission_risk_level (deprecated): the framework's levels 0...8; the reference
    /// server refuses anything else on upload.
    public static let transmissionRiskLevels: ClosedRange<Int32> = 0...8

    /// The first interval no key may start after, as of `now` (Unix seconds): 00:00 UTC tomorrow.
    public static func latestStart(now: Double) -> UInt32 {
        UTCDay(UTCDay(unixSeconds: now).rawValue + 1).firstInterval.rawValue
    }

    /// Why a key with these fields is not acceptable as of `now`, or nil. `earliestStart`,
    /// when given, refuses a key that starts before it (the publisher: older than its
    /// retention, which no app needs; gaend ignores age, as old keys simply match nothing).
    public static func refusal(rollingStart: UInt32, rollingPeriod: UInt32, transmissionRisk: Int32?, daysSinceOnset: Int32?,
                               now: Double, earliestStart: UInt32? = nil) -> KeyRefusal? {
        guard rollingPeriods.contains(rollingPeriod) else { return .rollingPeriod(rollingPeriod) }
        if let d = daysSinceOnset, !Self.daysSinceOnset.contains(d) { return .daysSinceOnset(d) }
        if let t = transmissionRisk, !transmissionRiskLevels.contains(t) { return .transmissionRisk(t) }
        let latest = latestStart(now: now)
        if rollingStart > latest { return .startsAfterTomorrow(start: rollingStart, latest: latest) }
        if let earliestStart, rollingStart < earliestStart { return .tooOld(start: rollingStart, earliest: earliestStart) }
        return nil
    }

    /// `refusal` for a decoded key. report_type needs no check here: `ReportType` holds only
    /// the proto's values, and every decoder refuses others by name.
    public static func refusal(of key: DiagnosisKey, now: Double, earliestStart: UInt32? = nil) -> KeyRefusal? {
        refusal(rollingStart: key.rollingStartIntervalNumber.rawValue, rollingPeriod: key.rollingPeriod,
                transmissionRisk: key.transmissionRiskLevel, daysSinceOnset: key.daysSinceOnsetOfSymptoms, now: now, earliestStart: earliestStart)
    }
}

/// Why one key is not acceptable (`KeyRules`).
public enum KeyRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    case rollingPeriod(UInt32)
    case daysSinceOnset(Int32)
    case transmissionRisk(Int32)
    case startsAfterTomorrow(start: UInt32, latest: UInt32)
    case tooOld(start: UInt32, earliest: UInt32)

    public var description: String {
        switch self {
        case .rollingPeriod(let v): return "rolling_period \(v) is outside \(KeyRules.rollingPeriods.lowerBound)...\(KeyRules.rollingPeriods.upperBound)"
        case .daysSinceOnset(let v): return "days_since_onset_of_symptoms \(v) is outside -14...14"
        case .transmissionRisk(let v): return "transmission_risk_level \(v) is outside 0...8"
        case .startsAfterTomorrow(let s, let latest):
            return "rolling_start_interval_number \(s) starts after tomorrow (the latest start is \(latest), 00:00 UTC the next day)"
        case .tooOld(let s, let earliest): return "rolling_start_interval_number \(s) is older than the retention (the earliest start is \(earliest))"
        }
    }

    /// A short name for counting refusals by kind.
    public var kind: String {
        switch self {
        case .rollingPeriod: return "rolling period"
        case .daysSinceOnset: return "days since onset"
        case .transmissionRisk: return "transmission risk"
        case .startsAfterTomorrow: return "starts after tomorrow"
        case .tooOld: return "older than retention"
        }
    }
}

extension KeyExportFile {
    /// The size export.bin declares in a ZIP archive (its central directory), or the size of
    /// a bare export.bin: what parsing would inflate, known before anything is inflated.
    public static func declaredExportSize(_ data: Data) throws -> Int {
        let prefix = [UInt8](data.prefix(16))
        if prefix.starts(with: [0x50, 0x4b, 0x03, 0x04]) {
            let layout = try ZipLayout(data)
            guard let bin = layout.entries.first(where: { $0.name == KeyExportContainer.exportName }) else {
                throw KeyExportError.missingEntry(name: KeyExportContainer.exportName)
            }
            return Int(bin.uncompressedSize)
        }
        return data.count
    }

    /// Checks the file against `limits` and every key's start against `now` (Unix seconds,
    /// the node's clock): none may start after 00:00 UTC tomorrow. `keysPerDay` counts keys
    /// by the UTC day they start, across the files of one call. `isCancelled` is polled
    /// between batches of keys.
    public func checkAcceptable(now: Double, limits: KeyAcceptanceLimits = .default, keysPerDay: inout [UInt32: Int],
                                isCancelled: () -> Bool = { false }) throws {
        let total = keyCount + revisedKeyCount
        guard total > 0 else { throw KeyAcceptanceError.noKeys }
        guard total <= limits.maxKeysPerFile else { throw KeyAcceptanceError.tooManyKeys(count: total, limit: limits.maxKeysPerFile) }
        let latest = KeyRules.latestStart(now: now)
        for (list, batches) in [("keys", encodedKeyBatches(size: 50_000)), ("revised_keys", encodedRevisedKeyBatches(size: 50_000))] {
            var base = 0
            for batch in batches {
                if isCancelled() { throw CancellationError() }
                var failure: KeyAcceptanceError?
                batch.forEachRecord { n, k in
                    guard failure == nil else { return }
                    switch KeyRules.refusal(rollingStart: k.rollingStartIntervalNumber, rollingPeriod: k.rollingPeriod,
                                            transmissionRisk: k.transmissionRiskLevel, daysSinceOnset: k.daysSinceOnsetOfSymptoms, now: now) {
                    case nil: break
                    case .startsAfterTomorrow?:
                        failure = .startsInFuture(list: list, index: base + n, start: k.rollingStartIntervalNumber, latest: latest)
                        return
                    case let reason?:
                        failure = .refused(list: list, index: base + n, reason: reason)
                        return
                    }
                    keysPerDay[k.rollingStartIntervalNumber / ENIntervalNumber.perDay, default: 0] += 1
                }
                if let failure { throw failure }
                base += batch.count
            }
        }
        for (day, count) in keysPerDay where count > limits.maxKeysPerDay {
            throw KeyAcceptanceError.tooManyKeysForDay(day: UTCDay(Int32(day)), count: count, limit: limits.maxKeysPerDay)
        }
    }
}
