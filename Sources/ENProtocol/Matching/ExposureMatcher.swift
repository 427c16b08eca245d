import Dispatch
import Foundation

/// One sighting whose RPI a diagnosis key derives, with what its AEM says.
public struct Match: Sendable {
    public var sighting: Sighting
    public var key: DiagnosisKey
    /// The interval j of the derived RPI_j (the sighting's own interval is within tolerance of it).
    public var interval: ENIntervalNumber
    /// The AEM decrypted with the key's AEMK. Not authenticated: see `txPowerPlausible`.
    public var metadata: BluetoothMetadata

    public var txPower: Int { Int(metadata.txPower) }
    /// False when the TX power lies outside the reference bounds (-50...+20 dB): the AEM is not
    /// authenticated, so such a value is reported but not used (reference: ExposureMatchingTracer
    /// rejects sightings outside matchingTxPowerLowerBound/UpperBound).
    public var txPowerPlausible: Bool { BluetoothMetadata.plausibleTxPower.contains(txPower) }
    /// TX power - (RSSI + RSSI correction), or nil when the TX power is not plausible.
    public var attenuation: Int? {
        txPowerPlausible ? txPower - (Int(sighting.rssi) + Int(sighting.rssiCorrection)) : nil
    }
    /// "1.0", "1.1", ...
    public var metadataVersion: String { metadata.versionString }
    /// From metadata v1.1 on; nil for v1.0.
    public var calibrationConfidence: CalibrationConfidence? { metadata.calibrationConfidence }
}

/// Counters of one matching run.
public struct MatchStatistics: Sendable, Equatable {
    /// Keys offered to the matcher.
    public var keys = 0
    /// Keys whose validity, widened by the tolerance, cannot overlap the sightings' span: no
    /// derivation was done for them.
    public var keysSkipped = 0
    /// Keys with a rolling period outside 1...144 (not matched).
    public var keysInvalid = 0
    /// Keys with at least one matched sighting.
    public var keysMatched = 0
    /// RPIs derived (one AES block each).
    public var rpisDerived = 0
    /// Matched sightings, and those among them whose TX power was implausible.
    public var matches = 0
    public var implausibleTxPower = 0

    public init() {}

    public static func += (a: inout MatchStatistics, b: MatchStatistics) {
        a.keys += b.keys; a.keysSkipped += b.keysSkipped; a.keysInvalid += b.keysInvalid
        a.keysMatched += b.keysMatched; a.rpisDerived += b.rpisDerived
        a.matches += b.matches; a.implausibleTxPower += b.implausibleTxPower
    }
}

/// Matches diagnosis keys against an index of sightings. Keys come in batches (from key files
/// read incrementally, never all in memory); each batch is split across `workers` threads,
/// each with its own key schedule (GAENKeySchedule holds OpenSSL state and is not Sendable).
///
/// Per key: derive the RPIs of the key's validity [rs, rs + rp) restricted to the intervals
/// that can meet a sighting (the sightings' span widened by the tolerance), look each RPI_j up
/// in the index, and accept a sighting at time t when ENIN(t) is within [j - 12, j + 12]
/// (reference: ContactTracingFeature.tkMatchingClockDriftRollingPeriods = 12).
public final class ExposureMatcher: Sendable {
    public let index: SightingIndex
    public let workers: Int

    /// `workers`: threads to use per batch (the caller passes the core count; 1 = this thread).
    public init(index: SightingIndex, workers: Int) {
        self.index = index
        self.workers = max(1, workers)
    }

    /// Matches one batch. Matches come back in key order within the batch.
    public func match(_ batch: [DiagnosisKey]) throws -> (matches: [Match], statistics: MatchStatistics) {
        // One pass on this thread: drop the keys that cannot match and sort the rest by day.
        var stats = MatchStatistics()
        let work = MatchWorker.prepare(batch, index: index, statistics: &stats)
        // Below a few hundred keys a thread hand-off costs more than it saves. Parts are runs
        // of consecutive days, so each thread keeps its own days' filters in cache; there are
        // more parts than threads, so that a thread the OS preempts (a shared machine) does
        // not hold the others at the end of the batch.
        let parts = workers == 1 ? 1 : min(workers * 4, max(1, work.count / 256))
        if parts == 1 {
            var worker = try MatchWorker(index: index)
            var matches: [Match] = []
            try worker.process(work[...], keys: batch, into: &matches, statistics: &stats)
            return (matches, stats)
        }
        let results = PartResults(count: parts)
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let range = (work.count * part / parts)..<(work.count * (part + 1) / parts)
            do {
                var worker = try MatchWorker(index: index)
                var matches: [Match] = []
                var partStats = MatchStatistics()
                try worker.process(work[range], keys: batch, into: &matches, statistics: &partStats)
                results.store(part, matches, partStats)
            } catch {
                results.fail(error)
            }
        }
        let (matches, partStats) = try results.collect()
        stats += partStats
        return (matches, stats)
    }
}

/// Per-part results of a parallel batch. Each part writes only its own slot; the lock makes the
/// hand-over to the collecting thread explicit (concurrentPerform returns after all parts).
private final class PartResults: @unchecked Sendable {
    private let lock = NSLock()
    private var matches: [[Match]]
    private var stats: [MatchStatistics]
    private var error: Error?

    init(count: Int) {
        matches = Array(repeating: [], count: count)
        stats = Array(repeating: MatchStatistics(), count: count)
    }

    func store(_ part: Int, _ m: [Match], _ s: MatchStatistics) {
        lock.lock(); defer { lock.unlock() }
        matches[part] = m
        stats[part] = s
    }

    func fail(_ e: Error) {
        lock.lock(); defer { lock.unlock() }
        if error == nil { error = e }
    }

    func collect() throws -> (matches: [Match], statistics: MatchStatistics) {
        lock.lock(); defer { lock.unlock() }
        if let error { throw error }
        var total = MatchStatistics()
        for s in stats { total += s }
        return (matches.flatMap { $0 }, total)
    }
}

/// The single-threaded matching loop: one key schedule and one RPI buffer, reused per key.
struct MatchWorker {
    let index: SightingIndex
    let schedule: GAENKeySchedule
    var rpis: [UInt8]
    /// Offsets of the RPIs that passed the prefilter, per day run (at most 144).
    var candidates: [Int32]

    init(index: SightingIndex) throws {
        candidates = [Int32](repeating: 0, count: Int(ENIntervalNumber.perDay))
        self.index = index
        schedule = try GAENKeySchedule()
        rpis = [UInt8](repeating: 0, count: Int(ENIntervalNumber.perDay) * 16)
    }

    /// The keys that can match, as compact records in day order; counts the others.
    ///
    /// One pass in file order copies each key's TEK words, first interval and count (the
    /// validity clipped to the sightings' span widened by the tolerance); the records are then
    /// sorted by day, so that consecutive keys probe the same day partition while it is in
    /// cache. Sorting records touches no key object (each TEK's Data is a separate heap block,
    /// and reading them out of order costs a cache miss each).
    static func prepare(_ keys: [DiagnosisKey], index: SightingIndex, statistics stats: inout MatchStatistics) -> [CompactKey] {
        stats.keys += keys.count
        guard let span = index.intervalSpan else {
            stats.keysSkipped += keys.count
            return []
        }
        let spanLow = Int(span.lowerBound) - index.tolerance, spanHigh = Int(span.upperBound) + index.tolerance
        var work = [CompactKey]()
        work.reserveCapacity(keys.count)
        for (n, key) in keys.enumerated() {
            let period = Int(key.rollingPeriod)
            guard (1...Int(ENIntervalNumber.perDay)).contains(period), key.key.bytes.count == 16 else {
                stats.keysInvalid += 1
                continue
            }
            let start = Int(key.rollingStartIntervalNumber.rawValue)
            let first = max(start, spanLow), last = min(start + period - 1, spanHigh)
            guard first <= last else {
                stats.keysSkipped += 1
                continue
            }
            let words = key.key.bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            work.append(CompactKey(tek: words, first: UInt32(first), count: UInt16(last - first + 1), position: UInt32(n)))
        }
        return dayOrder(work)
    }

    /// Derives and looks up the RPIs of `work` (records of `keys`), appending the matches.
    mutating func process(_ work: ArraySlice<CompactKey>, keys: [DiagnosisKey], into matches: inout [Match],
                          statistics stats: inout MatchStatistics) throws {
        for var item in work {
            let count = Int(item.count)
            try withUnsafeBytes(of: &item.tek) { tek in
                try rpis.withUnsafeMutableBytes { out in
                    try schedule.deriveRPIs(tek: tek, first: ENIntervalNumber(item.first), count: count, into: out)
                }
            }
            stats.rpisDerived += count
            let before = matches.count
            try lookUp(first: Int(item.first), count: count, key: { keys[Int(item.position)] }, into: &matches)
            let found = matches.count - before
            if found > 0 {
                stats.keysMatched += 1
                stats.matches += found
                for m in matches[before...] where !m.txPowerPlausible { stats.implausibleTxPower += 1 }
            }
        }
    }

    /// `work` ordered by first interval: a counting sort when the batch spans fewer than 65,536
    /// intervals (a key file covers about 14 days = 2,016), a comparison sort otherwise.
    static func dayOrder(_ work: [CompactKey]) -> [CompactKey] {
        guard let lo = work.lazy.map(\.first).min(), let hi = work.lazy.map(\.first).max(), hi - lo < 1 << 16 else {
            return work.sorted { $0.first < $1.first }
        }
        var start = [Int](repeating: 0, count: Int(hi - lo) + 2)
        for w in work { start[Int(w.first - lo) + 1] += 1 }
        for i in 1..<start.count { start[i] += start[i - 1] }
        var out = work // overwritten below; same count
        for w in work {
            let b = Int(w.first - lo)
            out[start[b]] = w
            start[b] += 1
        }
        return out
    }

    /// A key reduced to what the derive-and-look-up loop needs.
    struct CompactKey {
        var tek: (UInt64, UInt64)
        var first: UInt32
        var count: UInt16
        var position: UInt32
    }

    /// Looks up the `count` RPIs in `rpis` (intervals from `first`) and appends the matches.
    private mutating func lookUp(first: Int, count: Int, key keyAt: () -> DiagnosisKey, into matches: inout [Match]) throws {
        var hits: [(rpi: Int, interval: Int)] = []
        rpis.withUnsafeBytes { buffer in
            let perDay = Int(ENIntervalNumber.perDay)
            var j = first
            while j < first + count {
                // One partition per UTC day of the key's intervals (usually exactly one).
                let dayEnd = min(first + count, (j / perDay + 1) * perDay)
                if let p = index.partition(forInterval: UInt32(j)) {
                    index.withLookup(p) { lookup in
                        // Pass 1, branch-free: offsets of the RPIs the prefilter lets through.
                        let base = j
                        var n = 0
                        candidates.withUnsafeMutableBufferPointer { cand in
                            // Wrapping arithmetic on a raw cursor: the bounds are the loop's
                            // (at most 144 RPIs of 16 bytes), and overflow checks cost here.
                            let c = cand.baseAddress.unsafelyUnwrapped
                            var cursor = buffer.baseAddress.unsafelyUnwrapped + ((base &- first) &* 16 &+ 8)
                            for k in 0..<Int32(truncatingIfNeeded: dayEnd &- base) {
                                let high = cursor.loadUnaligned(as: UInt64.self).littleEndian
                                c[n] = k
                                n &+= lookup.firstStageBit(high: high)
                                cursor += 16
                            }
                        }
                        // Pass 2: the Bloom filter, then the table, for those few.
                        for i in 0..<n {
                            let jj = base + Int(candidates[i])
                            let o = (jj - first) * 16
                            let low = buffer.loadUnaligned(fromByteOffset: o, as: UInt64.self).littleEndian
                            let high = buffer.loadUnaligned(fromByteOffset: o + 8, as: UInt64.self).littleEndian
                            guard lookup.prefilterBit(low: low, high: high) != 0 else { continue }
                            let r = lookup.find(low: low, high: high)
                            if r >= 0 { hits.append((r, jj)) }
                        }
                        j = dayEnd
                    }
                }
                j = dayEnd
            }
        }
        guard !hits.isEmpty else { return }
        // Rare path: derive the AEMK only for keys that matched.
        let key = keyAt()
        let aemk = schedule.associatedEncryptedMetadataKey(for: key.key)
        for (r, j) in hits {
            for s in index.run(r) where abs(Int(index.sightingIntervals[s]) - j) <= index.tolerance {
                let sighting = index.sightings[s]
                let metadata = try GAENKeySchedule.decryptMetadata(sighting.aem, rpi: sighting.rpi, aemk: aemk)
                matches.append(Match(sighting: sighting, key: key, interval: ENIntervalNumber(UInt32(j)), metadata: metadata))
            }
        }
    }
}
