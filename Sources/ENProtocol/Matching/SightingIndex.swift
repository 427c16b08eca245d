/// In-memory index of sighted RPIs, built once per matching run for the derive-and-look-up
/// loop (about 144 look-ups per diagnosis key, almost all of them misses).
///
/// Layout, chosen by measurement (GaenBench match): sightings sorted by RPI; one entry per
/// distinct RPI; and per UTC day a partition holding the RPIs sighted within the day widened by
/// the clock tolerance, each with a small bitmap prefilter (16 bits per RPI, so ~6% false
/// positives and a few tens of KB per day: it stays in L1/L2) in front of an open-addressing
/// table on the RPI's first 8 bytes. A key's RPIs are only looked up in its own day's
/// partition, so a look-up touches memory proportional to one day of sightings, not fourteen.
/// Memory grows with sightings only; keys are never stored.
///
/// Sighted RPIs are chosen by whoever advertises them, so the table's slots come from a keyed
/// mix of both RPI words (`tableSeed`, random per index in production): RPIs crafted to share
/// their first bytes would otherwise pile into one probe chain and make building and
/// searching the index quadratic.
public final class SightingIndex: Sendable {
    /// Clock tolerance in intervals either side (reference: tkMatchingClockDriftRollingPeriods = 12).
    public static let defaultTolerance = 12

    public let tolerance: Int
    /// Sightings sorted by (RPI, time); runs of one RPI are contiguous.
    public let sightings: [Sighting]
    /// ENIN of each sorted sighting.
    let sightingIntervals: [UInt32]
    /// Distinct RPIs (both words) and the start of each one's run in `sightings` (count + 1 entries).
    let rpiLow: [UInt64]
    let rpiHigh: RawWords<UInt64>
    let runStart: [Int32]
    /// Day partitions, indexed by (UTC day - firstDay); nil where no sighting is near that day.
    let partitions: [Partition?]
    let firstDay: Int
    /// Intervals spanned by the sightings (nil when there are none).
    public let intervalSpan: ClosedRange<UInt32>?

    /// A day's look-up structures in raw storage owned by the partition: the matcher takes a
    /// `PartitionLookup` of raw pointers once per run of same-day keys, and its ~144 probes
    /// per key then cost no bounds, exclusivity or reference-counting checks.
    final class Partition: Sendable {
        /// First stage: one probe, `l1BitsPerRPI` bits per RPI, small enough for L1.
        let l1Bitmap: RawWords<UInt64>
        let l1Mask: UInt64
        /// Second stage: the two-probe Bloom filter.
        let bitmap: RawWords<UInt64>
        let bitMask: UInt64
        /// Open addressing on the RPI's first word (0 = empty slot), with the distinct-RPI
        /// index beside it: a probe compares words without touching the global RPI arrays.
        let tableLow: RawWords<UInt64>
        let tableIndex: RawWords<UInt32>
        let slotMask: UInt64
        /// RPIs whose first word is 0 (cannot sit in the table, whose empty mark is 0).
        let zeroLow: RawWords<UInt32>
        let seed: UInt64
        /// The index's second RPI words (shared by every partition; kept alive by each).
        let rpiHigh: RawWords<UInt64>

        init(l1Bitmap: [UInt64], l1Mask: UInt64, bitmap: [UInt64], bitMask: UInt64, tableLow: [UInt64], tableIndex: [UInt32],
             slotMask: UInt64, zeroLow: [UInt32], seed: UInt64, rpiHigh: RawWords<UInt64>) {
            self.l1Bitmap = RawWords(l1Bitmap); self.l1Mask = l1Mask
            self.bitmap = RawWords(bitmap); self.bitMask = bitMask; self.tableLow = RawWords(tableLow)
            self.tableIndex = RawWords(tableIndex); self.slotMask = slotMask; self.zeroLow = RawWords(zeroLow); self.seed = seed
            self.rpiHigh = rpiHigh
        }

        /// Raw view for a burst of look-ups; valid while this partition is alive.
        var lookup: PartitionLookup {
            PartitionLookup(l1Bitmap: l1Bitmap.base, l1Mask: l1Mask, bitmap: bitmap.base, bitMask: bitMask,
                            tableLow: tableLow.base, tableIndex: tableIndex.base, slotMask: slotMask,
                            zeroLow: zeroLow.base, zeroCount: zeroLow.count, seed: seed, rpiHigh: rpiHigh.base)
        }

        /// The longest run of occupied slots (tests: crafted RPIs must not form one chain).
        var longestProbeRun: Int {
            let slots = Array(tableLow.buffer)
            var longest = 0, run = 0
            for w in slots + slots { run = w == 0 ? 0 : run + 1; longest = max(longest, run) }
            return min(longest, slots.count)
        }
    }

    /// Prefilter: a Bloom filter with two probes (one from each RPI word, bits disjoint from
    /// the table's slot bits) and 32 bits per RPI: ~0.4% false positives in ~128 KB for a busy
    /// day (~17,000 RPIs), which stays in L2 while the keys of that day are matched. Each false
    /// positive costs a table probe that misses cache, so a low rate pays (GaenBench match:
    /// one probe with 8 or 16 bits per RPI was slower).
    static let bitsPerRPI = 32
    /// In front of it, a one-probe bitmap of 8 bits per RPI (~16 KB for a busy day, in L1):
    /// every derived RPI is tested against it, and only the ~6% that pass reach the Bloom
    /// filter, whose loads would otherwise come from L2 for every RPI.
    static let l1BitsPerRPI = 8

    /// `tableSeed` keys the table's slot mix; give a fresh random one (`randomTableSeed()`)
    /// wherever the sightings come from the air. Results never depend on it, only speed.
    public init(sightings input: [Sighting], tolerance: Int = SightingIndex.defaultTolerance, tableSeed: UInt64) {
        self.tolerance = tolerance
        // Sort compact (RPI, time, index) records rather than the sightings themselves (fewer
        // bytes moved per swap), then gather the sightings once in that order. The index
        // breaks ties, so the order is the same as a stable sort by (RPI, time).
        var order = [SortKey]()
        order.reserveCapacity(input.count)
        for (i, s) in input.enumerated() { order.append(SortKey(low: s.rpiLow, high: s.rpiHigh, time: s.time, index: UInt32(i))) }
        order.sort(by: SortKey.precedes)
        let sorted = order.map { input[Int($0.index)] }
        sightings = sorted
        sightingIntervals = sorted.map { ENIntervalNumber(unixSeconds: $0.time).rawValue }
        var low: [UInt64] = [], high: [UInt64] = [], starts: [Int32] = []
        for (i, s) in sorted.enumerated() where i == 0 || s.rpiLow != sorted[i - 1].rpiLow || s.rpiHigh != sorted[i - 1].rpiHigh {
            low.append(s.rpiLow); high.append(s.rpiHigh); starts.append(Int32(i))
        }
        starts.append(Int32(sorted.count))
        rpiLow = low; rpiHigh = RawWords(high); runStart = starts

        guard let minI = sightingIntervals.min(), let maxI = sightingIntervals.max() else {
            intervalSpan = nil; partitions = []; firstDay = 0
            return
        }
        let tolerance = self.tolerance
        intervalSpan = minI...maxI
        let perDay = Int(ENIntervalNumber.perDay)
        // A partition for day d holds RPIs sighted in [d*144 - tol, (d+1)*144 + tol).
        let first = max(0, (Int(minI) - tolerance) / perDay)
        let last = (Int(maxI) + tolerance) / perDay
        firstDay = first
        var members = [[UInt32]](repeating: [], count: last - first + 1)
        for r in 0..<low.count {
            // Runs are time-sorted: the first and last sighting bound the days this RPI can
            // match in (a replayed RPI spanning days just lands in each of them).
            let tFirst = Int(sightingIntervals[Int(starts[r])]), tLast = Int(sightingIntervals[Int(starts[r + 1]) - 1])
            for d in max(first, (tFirst - tolerance) / perDay)...min(last, (tLast + tolerance) / perDay) {
                members[d - first].append(UInt32(r))
            }
        }
        let rpiHigh = self.rpiHigh
        partitions = members.map { m in m.isEmpty ? nil : Self.buildPartition(m, low, high, seed: tableSeed, rpiHigh: rpiHigh) }
    }

    /// A sighting's place in the index order (see `init`).
    struct SortKey {
        var low: UInt64
        var high: UInt64
        var time: Double
        var index: UInt32

        @inline(__always)
        static func precedes(_ a: SortKey, _ b: SortKey) -> Bool {
            if a.low != b.low { return a.low < b.low }
            if a.high != b.high { return a.high < b.high }
            if a.time != b.time { return a.time < b.time }
            return a.index < b.index
        }
    }

    /// A seed from the system's CSPRNG.
    public static func randomTableSeed() throws -> UInt64 {
        var random = SecureRandom()
        return try random.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// murmur3's 64-bit finalizer: every input bit reaches every output bit.
    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z ^= z >> 33; z &*= 0xff51_afd7_ed55_8ccd
        z ^= z >> 33; z &*= 0xc4ce_b9fe_1a85_ec53
        return z ^ (z >> 33)
    }

    /// The home slot of an RPI: both words under the seed.
    @inline(__always)
    static func homeSlot(low: UInt64, high: UInt64, seed: UInt64, mask: UInt64) -> UInt64 {
        mix(low ^ mix(high ^ seed)) & mask
    }

    static func buildPartition(_ members: [UInt32], _ low: [UInt64], _ high: [UInt64], seed: UInt64, rpiHigh: RawWords<UInt64>) -> Partition {
        let bits = max(1024, (members.count * bitsPerRPI).nextPowerOfTwo)
        var bitmap = [UInt64](repeating: 0, count: bits / 64)
        let l1Bits = max(1024, (members.count * l1BitsPerRPI).nextPowerOfTwo)
        var l1Bitmap = [UInt64](repeating: 0, count: l1Bits / 64)
        let l1Mask = UInt64(l1Bits - 1)
        let slots = max(16, (members.count * 2).nextPowerOfTwo)
        var tableLow = [UInt64](repeating: 0, count: slots)
        var tableIndex = [UInt32](repeating: 0, count: slots)
        var zeroLow: [UInt32] = []
        let bitMask = UInt64(bits - 1), slotMask = UInt64(slots - 1)
        for r in members {
            let w = low[Int(r)]
            for b in [(w >> 40) & bitMask, high[Int(r)] & bitMask] { bitmap[Int(b >> 6)] |= 1 << (b & 63) }
            let l1 = (high[Int(r)] >> 32) & l1Mask
            l1Bitmap[Int(l1 >> 6)] |= 1 << (l1 & 63)
            if w == 0 { zeroLow.append(r); continue }
            var slot = homeSlot(low: w, high: high[Int(r)], seed: seed, mask: slotMask)
            while tableLow[Int(slot)] != 0 { slot = (slot + 1) & slotMask }
            tableLow[Int(slot)] = w
            tableIndex[Int(slot)] = r
        }
        return Partition(l1Bitmap: l1Bitmap, l1Mask: l1Mask, bitmap: bitmap, bitMask: bitMask, tableLow: tableLow, tableIndex: tableIndex,
                         slotMask: slotMask, zeroLow: zeroLow, seed: seed, rpiHigh: rpiHigh)
    }

    public var distinctRPICount: Int { rpiLow.count }

    /// Approximate bytes held (for the benchmark's memory figures).
    public var approximateBytes: Int {
        var n = sightings.count * MemoryLayout<Sighting>.stride + sightingIntervals.count * 4
        n += rpiLow.count * 16 + runStart.count * 4
        for p in partitions { if let p { n += p.l1Bitmap.count * 8 + p.bitmap.count * 8 + p.tableLow.count * 12 + p.zeroLow.count * 4 } }
        return n
    }

    /// The partition an RPI of interval `j` is looked up in.
    @inline(__always)
    func partition(forInterval j: UInt32) -> Partition? {
        let d = Int(j) / Int(ENIntervalNumber.perDay) - firstDay
        guard d >= 0, d < partitions.count else { return nil }
        return partitions[d]
    }

    /// Distinct-RPI index of (low, high) in `p`, or -1.
    func lookup(low: UInt64, high: UInt64, in p: Partition) -> Int {
        withExtendedLifetime(p) {
            let l = p.lookup
            return l.mayContain(low: low, high: high) ? l.find(low: low, high: high) : -1
        }
    }

    /// Range in `sightings` of the distinct RPI `r`.
    func run(_ r: Int) -> Range<Int> { Int(runStart[r])..<Int(runStart[r + 1]) }
}

/// A partition's storage as raw pointers, valid while the partition is alive (the matcher
/// holds it for the run of keys it serves). Masks keep every index inside its buffer, so
/// unchecked access is safe.
struct PartitionLookup {
    let l1Bitmap: UnsafeMutablePointer<UInt64>
    let l1Mask: UInt64
    let bitmap: UnsafeMutablePointer<UInt64>
    let bitMask: UInt64
    let tableLow: UnsafeMutablePointer<UInt64>
    let tableIndex: UnsafeMutablePointer<UInt32>
    let slotMask: UInt64
    let zeroLow: UnsafeMutablePointer<UInt32>
    let zeroCount: Int
    let seed: UInt64
    let rpiHigh: UnsafeMutablePointer<UInt64>

    /// 1 when both prefilter bits of the RPI are set, else 0 (branch-free, so a loop can collect
    /// candidates without mispredicting on the few that pass).
    @inline(__always)
    func prefilterBit(low: UInt64, high: UInt64) -> Int {
        let words = bitmap
        let a = (low >> 40) & bitMask, b = high & bitMask
        return Int(truncatingIfNeeded: (words[Int(a >> 6)] >> (a & 63)) & (words[Int(b >> 6)] >> (b & 63)) & 1)
    }

    /// The first-stage bit (0 or 1), from the RPI's second word only.
    @inline(__always)
    func firstStageBit(high: UInt64) -> Int {
        let a = (high >> 32) & l1Mask
        return Int(truncatingIfNeeded: (l1Bitmap[Int(a >> 6)] >> (a & 63)) & 1)
    }

    @inline(__always)
    func mayContain(low: UInt64, high: UInt64) -> Bool { firstStageBit(high: high) != 0 && prefilterBit(low: low, high: high) != 0 }

    /// Distinct-RPI index of (low, high), or -1; call after the prefilter passed.
    @inline(__always)
    func find(low: UInt64, high: UInt64) -> Int {
        if low == 0 {
            for i in 0..<zeroCount where rpiHigh[Int(zeroLow[i])] == high { return Int(zeroLow[i]) }
            return -1
        }
        var slot = SightingIndex.homeSlot(low: low, high: high, seed: seed, mask: slotMask)
        while true {
            let w = tableLow[Int(slot)]
            if w == 0 { return -1 }
            if w == low {
                let r = Int(tableIndex[Int(slot)])
                if rpiHigh[r] == high { return r }
            }
            slot = (slot + 1) & slotMask
        }
    }
}

extension Int {
    var nextPowerOfTwo: Int {
        guard self > 1 else { return 1 }
        return 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}

/// An immutable array in memory this object owns (allocated once, freed in deinit): raw
/// pointers into it stay valid while the object lives, with none of an Array's per-access
/// checks. Written only in init, so sharing it across threads is safe.
final class RawWords<T: BitwiseCopyable>: @unchecked Sendable {
    let base: UnsafeMutablePointer<T>
    let count: Int

    init(_ values: [T]) {
        count = values.count
        base = .allocate(capacity: Swift.max(1, values.count))
        _ = UnsafeMutableBufferPointer(start: base, count: values.count).initialize(from: values)
    }

    deinit { base.deallocate() }

    var buffer: UnsafeBufferPointer<T> { UnsafeBufferPointer(start: base, count: count) }

    /// Checked access (tests, set-up); the hot loop reads `base` directly.
    subscript(i: Int) -> T {
        precondition(i >= 0 && i < count, "index \(i) outside 0..<\(count)")
        return base[i]
    }
}
