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
    let rpiHigh: [UInt64]
    let runStart: [Int32]
    /// Day partitions, indexed by (UTC day - firstDay); nil where no sighting is near that day.
    let partitions: [Partition?]
    let firstDay: Int
    /// Intervals spanned by the sightings (nil when there are none).
    public let intervalSpan: ClosedRange<UInt32>?

    /// A class so that handing a partition to the look-up loop is one reference, not a copy
    /// of four arrays.
    final class Partition: Sendable {
        /// First stage: one probe, `l1BitsPerRPI` bits per RPI, small enough for L1.
        let l1Bitmap: [UInt64]
        let l1Mask: UInt64
        /// Second stage: the two-probe Bloom filter.
        let bitmap: [UInt64]
        let bitMask: UInt64
        /// Open addressing on the RPI's first word (0 = empty slot), with the distinct-RPI
        /// index beside it: a probe compares words without touching the global RPI arrays.
        let tableLow: [UInt64]
        let tableIndex: [UInt32]
        let slotMask: UInt64
        /// RPIs whose first word is 0 (cannot sit in the table, whose empty mark is 0).
        let zeroLow: [UInt32]
        let seed: UInt64

        init(l1Bitmap: [UInt64], l1Mask: UInt64, bitmap: [UInt64], bitMask: UInt64, tableLow: [UInt64], tableIndex: [UInt32],
             slotMask: UInt64, zeroLow: [UInt32], seed: UInt64) {
            self.l1Bitmap = l1Bitmap; self.l1Mask = l1Mask
            self.bitmap = bitmap; self.bitMask = bitMask; self.tableLow = tableLow
            self.tableIndex = tableIndex; self.slotMask = slotMask; self.zeroLow = zeroLow; self.seed = seed
        }

        /// The longest run of occupied slots (tests: crafted RPIs must not form one chain).
        var longestProbeRun: Int {
            var longest = 0, run = 0
            for w in tableLow + tableLow { run = w == 0 ? 0 : run + 1; longest = max(longest, run) }
            return min(longest, tableLow.count)
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
        let sorted = input.sorted { ($0.rpiLow, $0.rpiHigh, $0.time) < ($1.rpiLow, $1.rpiHigh, $1.time) }
        sightings = sorted
        sightingIntervals = sorted.map { ENIntervalNumber(unixSeconds: $0.time).rawValue }
        var low: [UInt64] = [], high: [UInt64] = [], starts: [Int32] = []
        for (i, s) in sorted.enumerated() where i == 0 || s.rpiLow != sorted[i - 1].rpiLow || s.rpiHigh != sorted[i - 1].rpiHigh {
            low.append(s.rpiLow); high.append(s.rpiHigh); starts.append(Int32(i))
        }
        starts.append(Int32(sorted.count))
        rpiLow = low; rpiHigh = high; runStart = starts

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
        partitions = members.map { m in m.isEmpty ? nil : Self.buildPartition(m, low, high, seed: tableSeed) }
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

    static func buildPartition(_ members: [UInt32], _ low: [UInt64], _ high: [UInt64], seed: UInt64) -> Partition {
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
                         slotMask: slotMask, zeroLow: zeroLow, seed: seed)
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

    /// Runs `body` with a raw view of partition `p` for a burst of look-ups (no bounds checks
    /// or reference counting per probe: the hot loop does ~144 of them per key).
    @inline(__always)
    func withLookup<R>(_ p: Partition, _ body: (PartitionLookup) throws -> R) rethrows -> R {
        try p.l1Bitmap.withUnsafeBufferPointer { l1 in try p.bitmap.withUnsafeBufferPointer { bitmap in
            try p.tableLow.withUnsafeBufferPointer { tableLow in
                try p.tableIndex.withUnsafeBufferPointer { tableIndex in
                    try rpiHigh.withUnsafeBufferPointer { high in
                        try body(PartitionLookup(l1Bitmap: l1, l1Mask: p.l1Mask, bitmap: bitmap, bitMask: p.bitMask,
                                                 tableLow: tableLow, tableIndex: tableIndex,
                                                 slotMask: p.slotMask, zeroLow: p.zeroLow, seed: p.seed, rpiHigh: high))
                    }
                }
            }
        } }
    }

    /// Distinct-RPI index of (low, high) in `p`, or -1.
    func lookup(low: UInt64, high: UInt64, in p: Partition) -> Int {
        withLookup(p) { $0.mayContain(low: low, high: high) ? $0.find(low: low, high: high) : -1 }
    }

    /// Range in `sightings` of the distinct RPI `r`.
    func run(_ r: Int) -> Range<Int> { Int(runStart[r])..<Int(runStart[r + 1]) }
}

/// A partition's arrays as raw buffers, valid inside `SightingIndex.withLookup` only. Masks
/// keep every index inside its buffer, so unchecked access is safe.
struct PartitionLookup {
    let l1Bitmap: UnsafeBufferPointer<UInt64>
    let l1Mask: UInt64
    let bitmap: UnsafeBufferPointer<UInt64>
    let bitMask: UInt64
    let tableLow: UnsafeBufferPointer<UInt64>
    let tableIndex: UnsafeBufferPointer<UInt32>
    let slotMask: UInt64
    let zeroLow: [UInt32]
    let seed: UInt64
    let rpiHigh: UnsafeBufferPointer<UInt64>

    /// 1 when both prefilter bits of the RPI are set, else 0 (branch-free, so a loop can collect
    /// candidates without mispredicting on the few that pass).
    @inline(__always)
    func prefilterBit(low: UInt64, high: UInt64) -> Int {
        let words = bitmap.baseAddress.unsafelyUnwrapped
        let a = (low >> 40) & bitMask, b = high & bitMask
        return Int(truncatingIfNeeded: (words[Int(a >> 6)] >> (a & 63)) & (words[Int(b >> 6)] >> (b & 63)) & 1)
    }

    /// The first-stage bit (0 or 1), from the RPI's second word only.
    @inline(__always)
    func firstStageBit(high: UInt64) -> Int {
        let a = (high >> 32) & l1Mask
        return Int(truncatingIfNeeded: (l1Bitmap.baseAddress.unsafelyUnwrapped[Int(a >> 6)] >> (a & 63)) & 1)
    }

    @inline(__always)
    func mayContain(low: UInt64, high: UInt64) -> Bool { firstStageBit(high: high) != 0 && prefilterBit(low: low, high: high) != 0 }

    /// Distinct-RPI index of (low, high), or -1; call after the prefilter passed.
    @inline(__always)
    func find(low: UInt64, high: UInt64) -> Int {
        if low == 0 {
            for r in zeroLow where rpiHigh[Int(r)] == high { return Int(r) }
            return -1
        }
        var slot = SightingIndex.homeSlot(low: low, high: high, seed: seed, mask: slotMask)
        while true {
            let w = tableLow.baseAddress.unsafelyUnwrapped[Int(slot)]
            if w == 0 { return -1 }
            if w == low {
                let r = Int(tableIndex.baseAddress.unsafelyUnwrapped[Int(slot)])
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
