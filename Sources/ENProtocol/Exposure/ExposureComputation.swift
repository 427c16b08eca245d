import Dispatch
import Foundation

/// The one exposure computation: key files + a sightings log + a data mapping -> matches ->
/// exposure windows. The daemon (ProvideDiagnosisKeys) and `gaenctl match`/`windows` both run
/// it, so the same sightings and key files give the same windows on either path.
///
/// The rules, written once:
/// - **Order of keys**: files in the order given; in each file its `keys`, then its
///   `revised_keys`; keys reach the matcher in batches of `batchSize`.
/// - **Dedup**: a TEK counts once. Its last occurrence in that order (a revised key, a later
///   file) is the one that counts: its validity, report type and days since onset. Every
///   sighting matches a TEK at most once (the same file twice, or a key listed twice, adds
///   nothing).
/// - **Sort**: matches by sighting time, then RPI (both words), then TEK bytes; windows as
///   `ExposureWindows.compute` orders them (date, then first scan instance).
public struct ExposureComputation: Sendable {
    /// Keys per matcher batch: large enough that handing parts to threads is cheap (50,000
    /// keys are about 5 MB), small enough that cancellation is checked often.
    public static let batchSize = 50_000

    public let matcher: ExposureMatcher
    public let log: SightingsLog
    public let mapping: DiagnosisKeysDataMapping

    /// `workers`: threads per batch (pass the core count; 1 runs on the caller's thread).
    public init(log: SightingsLog, mapping: DiagnosisKeysDataMapping = .default, workers: Int, tableSeed: UInt64? = nil) throws {
        self.log = log
        self.mapping = mapping
        let seed = try tableSeed ?? SightingIndex.randomTableSeed()
        matcher = ExposureMatcher(index: SightingIndex(sightings: log.sightings, tableSeed: seed), workers: workers)
    }

    /// What a run found.
    public struct Outcome: Sendable {
        /// Matches in the one sort order, after dedup.
        public var matches: [Match]
        /// For each match, the index (in the files given) of the file whose key counted.
        public var matchFiles: [Int]
        public var statistics: MatchStatistics

        /// Distinct TEKs with at least one match.
        public var matchedKeys: Int { Set(matches.map(\.key.key)).count }

        /// The TEKs matched by keys of files `first...` (a call's own files when the earlier
        /// files came first).
        public func matchedKeys(fromFile first: Int) -> Int {
            Set(zip(matches, matchFiles).filter { $0.1 >= first }.map(\.0.key.key)).count
        }

        /// The matches of keys from files `first...`.
        public func matches(fromFile first: Int) -> [Match] {
            zip(matches, matchFiles).filter { $0.1 >= first }.map(\.0)
        }
    }

    /// Matches every key of `files` (see the rules above). `isCancelled` is asked between
    /// batches; when it says yes the run throws `CancellationError`.
    public func match(_ files: [KeyExportFile], isCancelled: () -> Bool = { false }) throws -> Outcome {
        var statistics = MatchStatistics()
        // Per TEK matched so far: the occurrence that counts (file, batch sequence, position).
        var last: [TemporaryExposureKey: (file: Int, sequence: Int, key: DiagnosisKey)] = [:]
        var found: [(match: Match, sequence: Int)] = []
        var sequence = 0
        for (fileIndex, file) in files.enumerated() {
            let encoded = file.encodedKeyBatches(size: Self.batchSize) + file.encodedRevisedKeyBatches(size: Self.batchSize)
            // Batches are decoded a group at a time, one per worker thread, so that decoding
            // (a third of the work for a large file) uses every core as the matching does.
            for groupStart in stride(from: 0, to: encoded.count, by: matcher.workers) {
                if isCancelled() { throw CancellationError() }
                let group = Array(encoded[groupStart..<min(encoded.count, groupStart + matcher.workers)])
                for batch in Self.decode(group) {
                    if isCancelled() { throw CancellationError() }
                    let r = try matcher.match(batch)
                    statistics += r.statistics
                    for m in r.matches { found.append((m, sequence)) }
                    // The occurrence that counts for every TEK matched so far: a TEK that
                    // matched in an earlier batch is looked for in every later one, and one
                    // that matched here has its last occurrence in this batch or later.
                    for m in r.matches where last[m.key.key] == nil { last[m.key.key] = (fileIndex, sequence, m.key) }
                    if !last.isEmpty {
                        for k in batch where last[k.key] != nil { last[k.key] = (fileIndex, sequence, k) }
                    }
                    sequence += 1
                }
            }
        }
        // Keep the matches of the occurrence that counts, each sighting once per TEK.
        struct Seen: Hashable { var tek: TemporaryExposureKey; var sighting: Sighting }
        var kept: [(match: Match, file: Int)] = []
        var once = Set<Seen>()
        for (m, seq) in found {
            guard let l = last[m.key.key], l.sequence == seq, l.key == m.key else { continue }
            guard once.insert(Seen(tek: m.key.key, sighting: m.sighting)).inserted else { continue }
            kept.append((m, l.file))
        }
        kept.sort { a, b in
            let x = a.match.sighting, y = b.match.sighting
            if x.time != y.time { return x.time < y.time }
            if x.rpiLow != y.rpiLow { return x.rpiLow < y.rpiLow }
            if x.rpiHigh != y.rpiHigh { return x.rpiHigh < y.rpiHigh }
            return a.match.key.key.bytes.lexicographicallyPrecedes(b.match.key.key.bytes)
        }
        // Statistics after dedup: what the caller reports is what counts.
        statistics.matches = kept.count
        statistics.keysMatched = Set(kept.map(\.match.key.key)).count
        statistics.implausibleTxPower = kept.filter { !$0.match.txPowerPlausible }.count
        return Outcome(matches: kept.map(\.match), matchFiles: kept.map(\.file), statistics: statistics)
    }

    /// Decodes encoded batches, each on its own thread when there are several.
    static func decode(_ group: [EncodedKeyBatch]) -> [[DiagnosisKey]] {
        guard group.count > 1 else { return group.map { $0.decode() } }
        let out = DecodedBatches(count: group.count)
        DispatchQueue.concurrentPerform(iterations: group.count) { out.set($0, group[$0].decode()) }
        return out.all
    }

    /// Windows of `matches` (an outcome's, or a subset of them) against this log's scans.
    public func windows(_ matches: [Match]) throws -> (windows: [ExposureWindow], statistics: ExposureWindows.Statistics) {
        try ExposureWindows.compute(matches: matches, scans: log.scans, mapping: mapping)
    }

    /// Matches, then windows: the whole computation.
    public func run(_ files: [KeyExportFile], isCancelled: () -> Bool = { false })
        throws -> (outcome: Outcome, windows: [ExposureWindow], statistics: ExposureWindows.Statistics) {
        let outcome = try match(files, isCancelled: isCancelled)
        let (windows, stats) = try windows(outcome.matches)
        return (outcome, windows, stats)
    }
}

/// Slots the decoding threads fill, one each; read after concurrentPerform returns.
private final class DecodedBatches: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [[DiagnosisKey]]
    init(count: Int) { slots = Array(repeating: [], count: count) }
    func set(_ i: Int, _ keys: [DiagnosisKey]) { lock.withLock { slots[i] = keys } }
    var all: [[DiagnosisKey]] { lock.withLock { slots } }
}
