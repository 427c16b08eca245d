import CGaenCrypto
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport
import Synchronization

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
    public init(sighting: Sighting, key: DiagnosisKey, interval: ENIntervalNumber, metadata: BluetoothMetadata) {
        self.sighting = sighting; self.key = key; self.interval = interval; self.metadata = metadata
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

/// Matches diagnosis keys against an index of sightings. Keys come as parts (of a key file's
/// export.bin, decoded by the thread that takes the part, or of a batch of keys) that the
/// threads take in turn for a whole run, meeting once at its end; each part is filtered, sorted
/// by day and matched by one worker. Workers (key schedule, scratch buffers) are kept and
/// reused from run to run.
///
/// Per key: derive the RPIs of the key's validity [rs, rs + rp) restricted to the intervals
/// that can meet a sighting (the sightings' span widened by the tolerance), look each RPI_j up
/// in the index, and accept a sighting at time t when ENIN(t) is within [j - 12, j + 12]
/// (reference: ContactTracingFeature.tkMatchingClockDriftRollingPeriods = 12).
public final class ExposureMatcher: Sendable {
    public let index: SightingIndex
    public let workers: Int
    /// The AES and HKDF code used (`.fastest` unless a caller forces another path).
    public let crypto: MatchCrypto
    fileprivate let pool: WorkerPool
    private let profile = Mutex<RunProfile?>(nil)

    /// `workers`: threads to use per run (the caller passes the core count; 1 = this thread).
    /// `crypto`: `.fastest` in production; tests and GaenBench also run `.portable` (OpenSSL)
    /// and every path the CPU supports. A path the CPU lacks falls back to `.portable`.
    public init(index: SightingIndex, workers: Int, crypto: MatchCrypto = .fastest) {
        self.index = index
        self.workers = max(1, workers)
        self.crypto = crypto.isSupported ? crypto : .portable
        pool = WorkerPool(index: index, crypto: self.crypto)
    }

    /// Matches one batch. Matches come back in key order within the batch.
    public func match(_ batch: [DiagnosisKey]) throws -> (matches: [Match], statistics: MatchStatistics) {
        // Parts of `partSize` keys that the threads take in turn (below a few hundred keys a
        // thread hand-off costs more than it saves).
        let parts = workers == 1 ? 1 : min((batch.count + Self.partSize - 1) / Self.partSize, max(1, batch.count / 256))
        let (found, stats) = try run(parts: parts) { worker, part, stats in
            let range = (batch.count * part / parts)..<(batch.count * (part + 1) / parts)
            return try worker.run(batch, range, statistics: &stats)
        }
        return (found, stats)
    }

    /// Keys per part taken by one thread at a time: small enough that the last parts of a
    /// run leave little imbalance between threads (4,096 keys are about 1.5 ms on one core),
    /// large enough that taking a part costs nothing in comparison.
    public static let partSize = 4_096
}

extension ExposureMatcher {
    /// Matches the keys of encoded batches (cut from one file's export.bin), each batch a part
    /// that a worker decodes straight into compact key records and matches: decoding one part
    /// overlaps matching the others, and no key becomes a DiagnosisKey unless it matched.
    /// `position` in the result counts keys across `batches` in order; matches come back in
    /// that order. `isCancelled` is asked on the caller's thread before each part it takes.
    public func match(encoded batches: [EncodedKeyBatch], isCancelled: () -> Bool = { false })
        throws -> (matches: [(match: Match, position: Int)], statistics: MatchStatistics) {
        var firsts: [Int] = [], total = 0
        for b in batches { firsts.append(total); total += b.count }
        let starts = firsts
        return try match(parts: batches.count, isCancelled: isCancelled) { (batches[$0], starts[$0]) }
    }

    /// Matches `count` parts of encoded keys for a whole run: every thread takes the next part
    /// from one shared counter until none is left, so the threads meet once, at the end of the
    /// run, not after every batch. `part(i)` runs on the thread that took part i (it may cut,
    /// read or build the part there) and gives the part and the position of its first key.
    /// `isCancelled` is asked on the caller's thread before each part it takes; when it says
    /// yes no thread takes another part and the run throws `CancellationError`.
    public func match(parts count: Int, isCancelled: () -> Bool = { false },
                      part: @escaping @Sendable (Int) throws -> (batch: EncodedKeyBatch, firstPosition: Int))
        throws -> (matches: [(match: Match, position: Int)], statistics: MatchStatistics) {
        try run(parts: count, isCancelled: isCancelled) { worker, i, stats in
            let (batch, first) = try part(i)
            return try worker.run(encoded: batch, firstPosition: first, statistics: &stats).map { ($0.match, Int($0.position)) }
        }
    }

    /// How the threads of the last run spent it (GaenBench prints it: it shows idle time
    /// apart from time spent waiting for a core on a loaded machine).
    public var lastRun: RunProfile? { profile.withLock { $0 } }

    /// Runs `count` parts on up to `workers` threads (the caller's and `workers - 1` from the
    /// global pool) for the whole run, results kept per part and joined once in part order.
    private func run<R: Sendable>(parts count: Int, isCancelled: () -> Bool = { false },
                        _ body: @escaping @Sendable (MatchWorker, Int, inout MatchStatistics) throws -> [R])
        throws -> ([R], MatchStatistics) {
        let threads = max(1, min(workers, count))
        let shared = RunState<R>(parts: count)
        let start = ThreadTimes.now()
        let pool = self.pool
        @Sendable func loop(_ stillWanted: () -> Bool) -> ThreadTimes {
            var times = ThreadTimes.begin(runStart: start)
            var stats = MatchStatistics()
            do {
                let worker = try pool.take()
                defer { pool.give(worker) }
                while stillWanted(), let i = shared.take() {
                    times.parts += 1
                    shared.store(i, try body(worker, i, &stats))
                }
            } catch {
                shared.fail(error)
            }
            shared.add(stats)
            times.end()
            return times
        }
        let group = DispatchGroup()
        for _ in 1..<threads {
            DispatchQueue.global().async(group: group) { shared.report(loop { true }) }
        }
        var mine = loop {
            if isCancelled() { shared.fail(CancellationError()); return false }
            return true
        }
        let waitStart = ThreadTimes.now()
        group.wait() // the run's one barrier
        mine.barrierWait = ThreadTimes.now() - waitStart
        shared.report(mine)
        let (results, stats, threadTimes) = try shared.collect()
        let end = ThreadTimes.now()
        profile.withLock { $0 = RunProfile(wall: end - start, parts: count, threads: threadTimes.map { t in
            var t = t
            t.idleAtEnd = max(0, end - t.endWall)
            return t
        }) }
        return (results, stats)
    }
}

/// How one run's threads spent it, from the kernel's per-thread accounting
/// (/proc/thread-self/schedstat): on a core, runnable but waiting for a core (a loaded
/// machine), and the rest of the run, when the thread had nothing to do (starting late,
/// asleep, or done before the others). Seconds.
public struct RunProfile: Sendable {
    public var wall: Double
    public var parts: Int
    public var threads: [ThreadTimes]
    /// Times the threads met and waited for each other: one, at the end of the run.
    public var barriers: Int { threads.count > 1 ? 1 : 0 }
    /// Seconds no thread of the run had work, summed over threads: late start, sleeping, and
    /// waiting at the end for the last part.
    public var idle: Double { threads.reduce(0) { $0 + $1.idle(runWall: wall) } }
    public var onCPU: Double { threads.reduce(0) { $0 + $1.onCPU } }
    public var waitingForCPU: Double { threads.reduce(0) { $0 + $1.waitingForCPU } }
}

public struct ThreadTimes: Sendable {
    /// Parts this thread matched.
    public var parts = 0
    /// From the run's start to this thread's first instruction in it.
    public var startDelay = 0.0
    public var onCPU = 0.0
    public var waitingForCPU = 0.0
    /// The caller's wait at the end of the run for the other threads (0 for the others).
    public var barrierWait = 0.0
    /// From this thread's end to the run's end.
    public var idleAtEnd = 0.0
    var endWall = 0.0
    private var startWall = 0.0
    private var startSched = (run: 0.0, wait: 0.0)

    /// Seconds of `runWall` this thread neither ran nor waited for a core.
    public func idle(runWall: Double) -> Double { max(0, runWall - onCPU - waitingForCPU) }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    static func begin(runStart: Double) -> ThreadTimes {
        var t = ThreadTimes()
        t.startWall = now()
        t.startDelay = max(0, t.startWall - runStart)
        t.startSched = schedstat()
        return t
    }

    mutating func end() {
        endWall = Self.now()
        let s = Self.schedstat()
        onCPU = s.run - startSched.run
        waitingForCPU = s.wait - startSched.wait
    }

    /// This thread's time on a core and waiting for one, in seconds (0 where /proc is absent).
    static func schedstat() -> (run: Double, wait: Double) {
        let fd = open("/proc/thread-self/schedstat", O_RDONLY)
        guard fd >= 0 else { return (0, 0) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 96)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return (0, 0) }
        let fields = buffer[..<n].split(separator: UInt8(ascii: " ")).prefix(2).map { Double(String(decoding: $0, as: UTF8.self)) ?? 0 }
        guard fields.count == 2 else { return (0, 0) }
        return (fields[0] / 1e9, fields[1] / 1e9)
    }
}

/// The shared state of one run: the next part to take, each part's results, the statistics,
/// the first error (after which no thread takes another part).
private final class RunState<R: Sendable>: @unchecked Sendable {
    private struct State {
        var next = 0
        var failed = false
        var error: Error?
        var results: [[R]]
        var stats = MatchStatistics()
        var threads: [ThreadTimes] = []
    }
    private let parts: Int
    private let state: Mutex<State>

    init(parts: Int) {
        self.parts = parts
        state = Mutex(State(results: Array(repeating: [], count: parts)))
    }

    func take() -> Int? {
        state.withLock { s in
            guard !s.failed, s.next < parts else { return nil }
            defer { s.next += 1 }
            return s.next
        }
    }

    func store(_ i: Int, _ r: [R]) { state.withLock { $0.results[i] = r } }
    func add(_ stats: MatchStatistics) { state.withLock { $0.stats += stats } }
    func report(_ t: ThreadTimes) { state.withLock { $0.threads.append(t) } }

    func fail(_ e: Error) {
        state.withLock { s in
            if s.error == nil { s.error = e }
            s.failed = true
        }
    }

    func collect() throws -> ([R], MatchStatistics, [ThreadTimes]) {
        try state.withLock { s in
            if let error = s.error { throw error }
            return (s.results.flatMap { $0 }, s.stats, s.threads)
        }
    }
}

/// Idle workers, kept across batches (each holds a key schedule and its scratch memory).
fileprivate final class WorkerPool: @unchecked Sendable {
    private let idle = Mutex<[MatchWorker]>([])
    private let index: SightingIndex
    private let crypto: MatchCrypto

    init(index: SightingIndex, crypto: MatchCrypto) {
        self.index = index
        self.crypto = crypto
    }

    func take() throws -> MatchWorker {
        if let w = idle.withLock({ $0.popLast() }) { return w }
        return try MatchWorker(index: index, crypto: crypto)
    }

    func give(_ w: MatchWorker) {
        idle.withLock { $0.append(w) }
    }
}

/// The single-threaded matching loop over one part of a batch. A class, kept by the pool:
/// its key schedule and scratch memory are made once, not per batch. Unchecked Sendable: one
/// thread at a time uses it, between taking it from the pool and giving it back.
final class MatchWorker: @unchecked Sendable {
    let index: SightingIndex
    let crypto: MatchCrypto
    let schedule: GAENKeySchedule
    /// Scratch: the RPIs of one key (144 x 16 bytes), the offsets of those that passed the
    /// first stage (144, plus 16 of slack the vector filter may write), the RPIKs of a group.
    private let scratch: UnsafeMutableRawPointer
    private var rpis: UnsafeMutableRawPointer { scratch }
    private var candidates: UnsafeMutablePointer<Int32> { (scratch + Self.candidatesOffset).assumingMemoryBound(to: Int32.self) }
    private var rpiks: UnsafeMutablePointer<UInt8> { (scratch + Self.rpiksOffset).assumingMemoryBound(to: UInt8.self) }
    /// Keys whose RPIKs are derived in one call (lockstep HKDF runs 2 or 4 of them at once).
    static let group = 16
    private static let candidatesOffset = 16 * Int(ENIntervalNumber.perDay)
    private static let rpiksOffset = candidatesOffset + 4 * (Int(ENIntervalNumber.perDay) + 16)
    private static let scratchSize = rpiksOffset + 16 * group
    /// The current part's keys, reused from part to part.
    private var work: [CompactKey] = []

    init(index: SightingIndex, crypto: MatchCrypto) throws {
        self.index = index
        self.crypto = crypto
        schedule = try GAENKeySchedule()
        scratch = UnsafeMutableRawPointer.allocate(byteCount: Self.scratchSize, alignment: 64)
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: Self.scratchSize)
    }

    deinit { scratch.deallocate() }

    /// Where the keys of the current part come from: a key turns into a DiagnosisKey only when
    /// it matched (an encoded one is decoded again from its entry).
    private enum Source {
        case none
        case keys([DiagnosisKey])
        case encoded(Data)
    }
    private var source = Source.none

    /// Matches keys[range]; the matches come back in key order.
    func run(_ keys: [DiagnosisKey], _ range: Range<Int>, statistics stats: inout MatchStatistics) throws -> [Match] {
        source = .keys(keys)
        defer { source = .none }
        prepare(keys, range, statistics: &stats)
        var found: [(position: UInt32, match: Match)] = []
        try process(statistics: &stats, into: &found)
        if found.count > 1 { found.sort { $0.position < $1.position } } // stable: intervals stay in order per key
        return found.map(\.match)
    }

    /// Matches the keys of one encoded batch, numbered from `firstPosition`, in key order.
    func run(encoded batch: EncodedKeyBatch, firstPosition: Int, statistics stats: inout MatchStatistics) throws -> [(position: UInt32, match: Match)] {
        source = .encoded(batch.exportBin)
        defer { source = .none }
        work.removeAll(keepingCapacity: true)
        work.reserveCapacity(batch.count)
        let span = clipSpan
        var n = 0, invalid = 0
        batch.exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(UnsafeRawBufferPointer(rebasing: raw[..<batch.range.upperBound]), offset: batch.range.lowerBound)
            while let f = try? walker.next() {
                guard f.number == batch.field, f.wireType == 2 else { continue }
                let position = firstPosition + n
                n += 1
                // Every key was validated when the file was parsed; this decodes it again, fast.
                guard let k = try? KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: "", index: 0) else {
                    invalid += 1
                    continue
                }
                admit(tek: k.tek, start: Int(k.rollingStartIntervalNumber), period: Int(k.rollingPeriod), position: position,
                      entry: f.range.lowerBound, span: span, statistics: &stats)
            }
        }
        stats.keys += n
        stats.keysInvalid += invalid
        work = Self.dayOrder(work)
        var found: [(position: UInt32, match: Match)] = []
        try process(statistics: &stats, into: &found)
        if found.count > 1 { found.sort { $0.position < $1.position } }
        return found
    }

    /// The intervals a key's RPIs must fall in to meet a sighting (nil: no sightings).
    private var clipSpan: ClosedRange<Int>? {
        index.intervalSpan.map { (Int($0.lowerBound) - index.tolerance)...(Int($0.upperBound) + index.tolerance) }
    }

    /// Adds a key's record to `work` with its validity clipped to `span`, or counts it skipped.
    @inline(__always)
    private func admit(tek: (UInt64, UInt64), start: Int, period: Int, position: Int, entry: Int, span: ClosedRange<Int>?,
                       statistics stats: inout MatchStatistics) {
        guard let span else {
            stats.keysSkipped += 1
            return
        }
        let first = max(start, span.lowerBound), last = min(start + period - 1, span.upperBound)
        guard first <= last else {
            stats.keysSkipped += 1
            return
        }
        work.append(CompactKey(tek: tek, first: UInt32(first), count: UInt16(last - first + 1), position: UInt32(position),
                               entry: UInt32(truncatingIfNeeded: entry)))
    }

    /// The DiagnosisKey of a record that matched.
    private func diagnosisKey(position: UInt32, entry: UInt32) -> DiagnosisKey {
        switch source {
        case .keys(let keys): return keys[Int(position)]
        case .encoded(let exportBin):
            return exportBin.withUnsafeBytes { raw in
                var walker = WireWalker(raw, offset: Int(entry))
                let f = try! walker.next()! // the entry was walked when the record was made
                return try! KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: "", index: 0).diagnosisKey
            }
        case .none: preconditionFailure("no key source")
        }
    }

    /// The keys that can match, as compact records in day order; counts the others.
    ///
    /// One pass in key order copies each key's TEK words, first interval and count (the
    /// validity clipped to the sightings' span widened by the tolerance); the records are then
    /// sorted by day, so that consecutive keys probe the same day partition while it is in
    /// cache, and a day's partition is entered once per run of its keys.
    func prepare(_ keys: [DiagnosisKey], _ range: Range<Int>, statistics stats: inout MatchStatistics) {
        work.removeAll(keepingCapacity: true)
        work.reserveCapacity(range.count)
        stats.keys += range.count
        let span = clipSpan
        for n in range {
            let key = keys[n]
            let period = Int(key.rollingPeriod)
            guard (1...Int(ENIntervalNumber.perDay)).contains(period), key.key.bytes.count == 16 else {
                stats.keysInvalid += 1
                continue
            }
            let words = key.key.bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            admit(tek: words, start: Int(key.rollingStartIntervalNumber.rawValue), period: period, position: n, entry: 0,
                  span: span, statistics: &stats)
        }
        work = Self.dayOrder(work)
    }

    /// Derives and looks up the RPIs of the prepared keys, appending the matches.
    private func process(statistics stats: inout MatchStatistics, into found: inout [(position: UInt32, match: Match)]) throws {
        let perDay = Int(ENIntervalNumber.perDay)
        let aes = crypto.aes.rawValue
        let fused = crypto.aes != .evp
        let rpis = self.rpis, candidates = self.candidates, rpiks = self.rpiks
        var currentDay = Int.min
        var partition: SightingIndex.Partition? = nil
        var lookup: PartitionLookup? = nil
        try work.withUnsafeBufferPointer { w in
            var i = 0
            while i < w.count {
                let g = min(Self.group, w.count - i)
                deriveRPIKs(w.baseAddress.unsafelyUnwrapped + i, count: g, into: rpiks)
                for k in 0..<g {
                    let item = w[i &+ k]
                    let first = Int(item.first), count = Int(item.count)
                    let rpik = rpiks + 16 &* k
                    let day = first / perDay
                    if day != currentDay {
                        // Once per run of same-day keys (the records are in day order).
                        currentDay = day
                        partition = index.partition(forInterval: UInt32(first))
                        lookup = partition?.lookup
                    }
                    let before = found.count
                    if (first + count - 1) / perDay == day {
                        // The usual case: the whole run of RPIs meets one day's partition.
                        guard let p = partition, let l = lookup else { continue } // nothing sighted near that day
                        stats.rpisDerived += count
                        let n: Int
                        if fused {
                            n = gaen_derive_rpis(aes, rpik, UInt32(first), count, rpis.assumingMemoryBound(to: UInt8.self),
                                                 p.l1Bitmap.base, p.l1Mask, candidates)
                        } else {
                            try schedule.encryptRPIs(rpik: rpik, first: UInt32(first), count: count, into: rpis)
                            n = gaen_first_stage(rpis.assumingMemoryBound(to: UInt8.self), count, p.l1Bitmap.base, p.l1Mask, candidates)
                        }
                        try secondStage(l, candidates: n, offset: 0, first: first, item: item, into: &found)
                    } else {
                        // A validity that crosses midnight: derive all, then filter each day's part.
                        stats.rpisDerived += count
                        if fused {
                            _ = gaen_derive_rpis(aes, rpik, UInt32(first), count, rpis.assumingMemoryBound(to: UInt8.self), nil, 0, candidates)
                        } else {
                            try schedule.encryptRPIs(rpik: rpik, first: UInt32(first), count: count, into: rpis)
                        }
                        var j = first
                        while j < first + count {
                            let dayEnd = min(first + count, (j / perDay + 1) * perDay)
                            if let p = index.partition(forInterval: UInt32(j)) {
                                let n = gaen_first_stage(rpis.assumingMemoryBound(to: UInt8.self) + (j - first) * 16, dayEnd - j,
                                                         p.l1Bitmap.base, p.l1Mask, candidates)
                                try secondStage(p.lookup, candidates: n, offset: j - first, first: first, item: item, into: &found)
                            }
                            j = dayEnd
                        }
                    }
                    if found.count > before {
                        stats.keysMatched += 1
                        stats.matches += found.count - before
                        for m in found[before...] where !m.match.txPowerPlausible { stats.implausibleTxPower += 1 }
                    }
                }
                i += g
            }
        }
    }

    /// The RPIKs of `count` records (at most `group`) into `out` (16 bytes each).
    @inline(__always)
    private func deriveRPIKs(_ records: UnsafePointer<CompactKey>, count: Int, into out: UnsafeMutablePointer<UInt8>) {
        let tek = UnsafeRawPointer(records) // the TEK is the record's first field
        if crypto.hkdfLanes > 0 {
            _ = GAENKeySchedule.rpikInfo.withUnsafeBufferPointer { info in
                gaen_hkdf16(UInt32(crypto.hkdfLanes), tek.assumingMemoryBound(to: UInt8.self), MemoryLayout<CompactKey>.stride, count,
                            info.baseAddress, info.count, out)
            }
        } else {
            for k in 0..<count { schedule.deriveRPIK(tek: tek + k * MemoryLayout<CompactKey>.stride, into: out + 16 * k) }
        }
    }

    /// Second stage for the `n` candidates of the first (offsets from `offset` in `rpis`): the
    /// Bloom filter, then the table; a hit decrypts the AEM of every sighting of that RPI
    /// within the tolerance.
    @inline(__always)
    private func secondStage(_ lookup: PartitionLookup, candidates n: Int, offset: Int, first: Int, item: CompactKey,
                             into found: inout [(position: UInt32, match: Match)]) throws {
        let candidates = self.candidates, rpis = self.rpis
        for c in 0..<n {
            let k = offset &+ Int(candidates[c])
            let low = rpis.loadUnaligned(fromByteOffset: k &* 16, as: UInt64.self).littleEndian
            let high = rpis.loadUnaligned(fromByteOffset: k &* 16 &+ 8, as: UInt64.self).littleEndian
            guard lookup.prefilterBit(low: low, high: high) != 0 else { continue }
            let r = lookup.find(low: low, high: high)
            if r >= 0 {
                try record(hit: r, interval: first + k, key: diagnosisKey(position: item.position, entry: item.entry), position: item.position,
                           into: &found)
            }
        }
    }

    /// Rare path: the sightings of distinct RPI `r` within the tolerance of interval `j`.
    @inline(never)
    private func record(hit r: Int, interval j: Int, key: DiagnosisKey, position: UInt32,
                        into found: inout [(position: UInt32, match: Match)]) throws {
        let aemk = schedule.associatedEncryptedMetadataKey(for: key.key)
        for s in index.run(r) where abs(Int(index.sightingIntervals[s]) - j) <= index.tolerance {
            let sighting = index.sightings[s]
            let metadata = try GAENKeySchedule.decryptMetadata(sighting.aem, rpi: sighting.rpi, aemk: aemk)
            found.append((position, Match(sighting: sighting, key: key, interval: ENIntervalNumber(UInt32(j)), metadata: metadata)))
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

    /// A key reduced to what the derive-and-look-up loop needs. The TEK comes first: the
    /// lockstep HKDF reads it from the records with their stride.
    struct CompactKey {
        var tek: (UInt64, UInt64)
        var first: UInt32
        var count: UInt16
        var position: UInt32
        /// For an encoded key, the offset of its entry in export.bin (decoded again on a hit).
        var entry: UInt32
    }
}
