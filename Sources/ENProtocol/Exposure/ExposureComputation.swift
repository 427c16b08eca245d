#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one exposure computation: key files + a sightings log + a data mapping -> matches ->
/// exposure windows. The daemon (ProvideDiagnosisKeys) and `gaenctl match`/`windows` both run
/// it, so the same sightings and key files give the same windows on either path.
///
/// The rules, written once:
/// - **Order of keys**: files in the order given; in each file its `keys`, then its
///   `revised_keys`; each list reaches the matcher as one run of parts (`partSize` keys).
/// - **Dedup**: a TEK counts once. Its last occurrence in that order (a revised key, a later
///   file) is the one that counts: its validity, report type and days since onset. Every
///   sighting matches a TEK at most once (the same file twice, or a key listed twice, adds
///   nothing).
/// - **Sort**: matches by sighting time, then RPI (both words), then TEK bytes; windows as
///   `ExposureWindows.compute` orders them (date, then first scan instance).
public struct ExposureComputation: Sendable {
    public let matcher: ExposureMatcher
    public let log: SightingsLog
    public let mapping: DiagnosisKeysDataMapping

    /// `workers`: threads per run (pass the core count; 1 runs on the caller's thread), from
    /// `threads` (MatchingRuntime's `.system`).
    public init(log: SightingsLog, mapping: DiagnosisKeysDataMapping = .default, workers: Int, threads: MatchingThreads,
                tableSeed: UInt64? = nil) throws {
        self.log = log
        self.mapping = mapping
        let seed = try tableSeed ?? SightingIndex.randomTableSeed()
        matcher = ExposureMatcher(index: SightingIndex(sightings: log.sightings, tableSeed: seed), workers: workers, threads: threads)
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

    /// Keys per part of a batch: a worker decodes and matches one part at a time, so a batch
    /// has several parts per thread and decoding overlaps matching.
    static let partSize = 4_096

    /// Matches every key of `files` (see the rules above). `isCancelled` is asked before
    /// each part the caller's thread takes; when it says yes the run throws `CancellationError`.
    public func match(_ files: [KeyExportFile], isCancelled: () -> Bool = { false }) throws -> Outcome {
        var statistics = MatchStatistics()
        // Every match with the position of the key occurrence that made it (keys numbered
        // across files in the order of the rules) and its file.
        var found: [(match: Match, position: Int, file: Int)] = []
        var position = 0
        for (fileIndex, file) in files.enumerated() {
            for list in Self.encodedLists(file) {
                // One run per list: the workers take its parts in turn, decode them straight
                // into compact records and match them, with no barrier between parts.
                let r = try matcher.match(encoded: list, isCancelled: isCancelled)
                statistics += r.statistics
                for (m, p) in r.matches { found.append((m, position + p, fileIndex)) }
                position += list.reduce(0) { $0 + $1.count }
            }
        }
        // The occurrence that counts for each matched TEK is its last; keep the matches it
        // made, each sighting once per TEK.
        let last = Self.lastOccurrences(of: Set(found.map { TEKWords($0.match.key.key) }), in: files)
        struct Seen: Hashable { var tek: TemporaryExposureKey; var sighting: Sighting }
        var kept: [(match: Match, file: Int)] = []
        var once = Set<Seen>()
        for (m, p, file) in found {
            guard last[TEKWords(m.key.key)] == p else { continue }
            guard once.insert(Seen(tek: m.key.key, sighting: m.sighting)).inserted else { continue }
            kept.append((m, file))
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

    /// A file's key lists in the order of the rules (keys, then revised keys), cut into parts.
    static func encodedLists(_ file: KeyExportFile) -> [[EncodedKeyBatch]] {
        [file.encodedKeyBatches(size: partSize), file.encodedRevisedKeyBatches(size: partSize)]
    }

    /// A TEK as two words: hashing it costs no Data.
    struct TEKWords: Hashable {
        var low: UInt64, high: UInt64
        init(_ k: TemporaryExposureKey) {
            (low, high) = k.bytes.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        }
        init(_ words: (UInt64, UInt64)) { (low, high) = words }
    }

    /// The position of the last occurrence of each of `teks` across `files` (numbered as in
    /// `match`): one more pass over the encoded keys, only when something matched, and a
    /// bitmap on the TEK's low bits turns almost every key away before any hashing.
    static func lastOccurrences(of teks: Set<TEKWords>, in files: [KeyExportFile]) -> [TEKWords: Int] {
        guard !teks.isEmpty else { return [:] }
        var filter = [UInt64](repeating: 0, count: 1024) // 65,536 bits
        for t in teks { filter[Int(t.low & 0xffff) >> 6] |= 1 << (t.low & 63) }
        var last: [TEKWords: Int] = [:]
        var position = 0
        for file in files {
            for list in encodedLists(file) {
                for batch in list {
                    batch.forEachRecord { n, record in
                        let low = record.tek.0
                        guard filter[Int(low & 0xffff) >> 6] >> (low & 63) & 1 != 0 else { return }
                        let t = TEKWords(record.tek)
                        if teks.contains(t) { last[t] = position + n }
                    }
                    position += batch.count
                }
            }
        }
        return last
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
