import ENProtocol
import Foundation
import MatchingRuntime

/// The diagnosis keys of one transmitter (a phone or board), named for the report.
public struct TransmitterKeys: Sendable {
    public var name: String
    public var keys: [DiagnosisKey]
    public init(name: String, keys: [DiagnosisKey]) { self.name = name; self.keys = keys }
}

/// A sighting whose RPI belongs to one of the given keys, with the AEM decrypted.
public struct MatchedSighting: Sendable, Equatable {
    public var sightingIndex: Int
    public var transmitter: Int
    public var txPower: Int
    public var calibrationConfidence: CalibrationConfidence?
    /// TX power from the AEM - (RSSI + the receiver's RSSI correction), dB.
    public var attenuation: Double
}

public struct MatchResult: Sendable {
    public var matches: [MatchedSighting]
    /// Sightings whose RPI matched but whose decrypted metadata is implausible (the AEM is
    /// not authenticated, so such a report is dropped rather than trusted).
    public var implausibleMetadata: Int
    /// Sightings whose RPI matched but outside the key's validity plus the clock tolerance.
    public var outsideValidity: Int
}

/// What the trial report needs from a matcher: sightings against named key sets.
/// `ProjectMatcher` (ENProtocol's matcher) is the default; `KeyScheduleMatcher` is a direct,
/// independent implementation the tests check it against.
public protocol SightingMatcher {
    func match(_ sightings: [SightingRow], against transmitters: [TransmitterKeys]) throws -> MatchResult
}

/// A direct matcher on the real key schedule: every key's RPIs into a hash table, one lookup
/// per sighting, by the rules of GAEN-FACTS.md (validity interval, 2-hour clock tolerance,
/// plausible TX power). Kept as an independent cross-check of `ProjectMatcher` in the tests.
public struct KeyScheduleMatcher: SightingMatcher {
    /// Clock tolerance either side of a key's validity, in intervals (reference: 2 hours).
    public var toleranceIntervals: Int

    public init(toleranceIntervals: Int = 12) { self.toleranceIntervals = toleranceIntervals }

    struct RPIKey: Hashable {
        var a: UInt64
        var b: UInt64
        init(_ d: Data) {
            (a, b) = d.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                                         $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        }
    }

    struct Entry {
        var transmitter: Int
        var key: Int
        var interval: UInt32
        var validFrom: UInt32
        var validUntil: UInt32 // exclusive
    }

    struct MetadataCacheKey: Hashable {
        var rpi: RPIKey
        var aem: UInt32
    }

    public func match(_ sightings: [SightingRow], against transmitters: [TransmitterKeys]) throws -> MatchResult {
        try prepare(transmitters).match(sightings)
    }

    /// The transmitters' RPI table, derived once for matching many batches of sightings (the
    /// live calibration matches every scan against the same reference).
    public func prepare(_ transmitters: [TransmitterKeys]) throws -> Prepared {
        let schedule = try GAENKeySchedule()
        var table: [RPIKey: Entry] = [:]
        var aemKeys: [[AssociatedEncryptedMetadataKey]] = []
        for (t, tx) in transmitters.enumerated() {
            var aemk: [AssociatedEncryptedMetadataKey] = []
            for (k, key) in tx.keys.enumerated() {
                aemk.append(schedule.associatedEncryptedMetadataKey(for: key.key))
                if key.reportType == .revoked { continue }
                let rpis = try schedule.rollingProximityIdentifiers(for: key.key, from: key.rollingStartIntervalNumber,
                                                                    count: Int(key.rollingPeriod))
                let from = key.rollingStartIntervalNumber.rawValue
                for (j, rpi) in rpis.enumerated() {
                    table[RPIKey(rpi.bytes)] = Entry(transmitter: t, key: k, interval: from + UInt32(j),
                                                    validFrom: from, validUntil: from + key.rollingPeriod)
                }
            }
            aemKeys.append(aemk)
        }
        return Prepared(table: table, aemKeys: aemKeys, toleranceIntervals: toleranceIntervals)
    }

    public struct Prepared: Sendable {
        let table: [RPIKey: Entry]
        let aemKeys: [[AssociatedEncryptedMetadataKey]]
        let toleranceIntervals: Int

        public func match(_ sightings: [SightingRow]) throws -> MatchResult {
            var cache: [MetadataCacheKey: BluetoothMetadata] = [:]
            var matches: [MatchedSighting] = []
            var implausible = 0, outside = 0
            let tol = Int64(toleranceIntervals)
            for (i, s) in sightings.enumerated() {
                guard let rpi = s.rpi, let aem = s.aem, let rssi = s.rssi else { continue }
                let rk = RPIKey(rpi.bytes)
                guard let e = table[rk] else { continue }
                let enin = Int64(ENIntervalNumber(unixSeconds: s.time).rawValue)
                guard enin >= Int64(e.validFrom) - tol, enin < Int64(e.validUntil) + tol else { outside += 1; continue }
                let ck = MetadataCacheKey(rpi: rk, aem: aem.bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
                let md: BluetoothMetadata
                if let m = cache[ck] { md = m } else {
                    md = try GAENKeySchedule.decryptMetadata(aem, rpi: rpi, aemk: aemKeys[e.transmitter][e.key])
                    cache[ck] = md
                }
                guard md.isPlausible else { implausible += 1; continue }
                matches.append(MatchedSighting(sightingIndex: i, transmitter: e.transmitter, txPower: Int(md.txPower),
                                               calibrationConfidence: md.calibrationConfidence,
                                               attenuation: Double(md.txPower) - Double(rssi + s.rssiCorrection)))
            }
            return MatchResult(matches: matches, implausibleMetadata: implausible, outsideValidity: outside)
        }
    }
}

/// The project's matcher (ENProtocol `ExposureMatcher`: a day-partitioned RPI index, keys in
/// parallel batches) behind the report's interface.
public struct ProjectMatcher: SightingMatcher {
    public var workers: Int
    public init(workers: Int = ProcessInfo.processInfo.activeProcessorCount) { self.workers = workers }

    /// What identifies one report in the matcher's own sighting type, to find its row again.
    struct ReportKey: Hashable {
        var time: UInt64
        var rpiLow: UInt64
        var rpiHigh: UInt64
        var aem: UInt32
        var rssi: Int8
        init(_ s: Sighting) { time = s.time.bitPattern; rpiLow = s.rpiLow; rpiHigh = s.rpiHigh; aem = s.aemBits; rssi = s.rssi }
    }

    public func match(_ rows: [SightingRow], against transmitters: [TransmitterKeys]) throws -> MatchResult {
        var converted: [Sighting] = []
        var rowsOf: [ReportKey: [Int]] = [:]
        converted.reserveCapacity(rows.count)
        for (i, r) in rows.enumerated() {
            guard let rpi = r.rpi, let aem = r.aem, let rssi = r.rssi else { continue }
            let s = Sighting(time: r.time, rpi: rpi, aem: aem, rssi: rssi, rssiCorrection: r.rssiCorrection)
            converted.append(s)
            rowsOf[ReportKey(s), default: []].append(i)
        }
        var owner: [TemporaryExposureKey: Int] = [:]
        var keys: [DiagnosisKey] = []
        for (t, tx) in transmitters.enumerated() {
            // Revoked keys yield nothing (GAEN-FACTS.md), as in KeyScheduleMatcher.
            for k in tx.keys where owner[k.key] == nil && k.reportType != .revoked { owner[k.key] = t; keys.append(k) }
        }
        let matcher = ExposureMatcher(index: SightingIndex(sightings: converted, tableSeed: try SightingIndex.randomTableSeed()), workers: workers, threads: .system)
        let (found, statistics) = try matcher.match(keys)
        var matches: [MatchedSighting] = []
        var used: [ReportKey: Int] = [:]
        for m in found where m.txPowerPlausible {
            // Identical reports (same time, RPI, AEM, RSSI) map to their rows in turn.
            let rk = ReportKey(m.sighting)
            guard let candidates = rowsOf[rk], let t = owner[m.key.key] else { continue }
            let n = used[rk, default: 0]
            guard n < candidates.count else { continue }
            used[rk] = n + 1
            let row = rows[candidates[n]]
            matches.append(MatchedSighting(sightingIndex: candidates[n], transmitter: t, txPower: m.txPower,
                                           calibrationConfidence: m.calibrationConfidence,
                                           attenuation: Double(m.txPower) - Double(row.rssi! + row.rssiCorrection)))
        }
        matches.sort { $0.sightingIndex < $1.sightingIndex }
        return MatchResult(matches: matches, implausibleMetadata: statistics.implausibleTxPower, outsideValidity: 0)
    }
}
