import Foundation
import TrialFormats

/// The analysed sightings as the report needs them, gathered while they stream in: a count per
/// distinct (pair, distance, attenuation). Every statistic of the report (quantiles, the fits,
/// the detection tables, the per-pair tables) is a function of these counts, so memory grows
/// with the distinct values (whole-dB readings at the ground-truth distances: a few thousand
/// cells), not with the number of rows. The plot's sample is kept beside them (`PlotSample`).
public struct ObservationTally: Sendable {
    struct Cell: Hashable, Sendable {
        var pair: Int32
        var distance: Double
        var attenuation: Double
    }

    /// One distinct (pair, distance, attenuation) and how many sightings had it.
    public struct Entry: Sendable, Equatable {
        public var pair: Int
        public var distance: Double
        public var attenuation: Double
        public var count: Int
    }

    public private(set) var pairs: [NodePair] = []
    var pairIndex: [NodePair: Int32] = [:]
    var cells: [Cell: Int] = [:]
    public private(set) var count = 0
    /// True while every attenuation is a whole number of dB.
    public private(set) var wholeDecibels = true
    public private(set) var sample = PlotSample()

    public init() {}

    public init(_ observations: [Observation]) {
        for o in observations { add(o) }
    }

    public mutating func add(_ o: Observation) {
        let key = NodePair(receiver: o.receiver, transmitter: o.transmitter)
        let p: Int32
        if let i = pairIndex[key] { p = i } else {
            p = Int32(pairs.count)
            pairs.append(key)
            pairIndex[key] = p
        }
        cells[Cell(pair: p, distance: o.distance, attenuation: o.attenuation), default: 0] += 1
        count += 1
        if wholeDecibels, o.attenuation != o.attenuation.rounded() { wholeDecibels = false }
        sample.add(distance: o.distance, attenuation: o.attenuation, pair: Int(p))
    }

    /// One piece of input counted on its own (pairs numbered in their order of first appearance
    /// in the piece), so pieces can be counted on several threads and merged in input order:
    /// the merged tally, sample included, is the one `add` would have built row by row.
    struct Part: Sendable {
        var pairs: [NodePair] = []
        var cells: [Cell: Int] = [:]
        var wholeDecibels = true
        /// Every counted row in input order (the plot's sample is taken from them when merged).
        var distances: [Double] = []
        var attenuations: [Double] = []
        var pairOfRow: [Int32] = []
    }

    mutating func merge(_ part: Part) {
        var global: [Int32] = []
        global.reserveCapacity(part.pairs.count)
        for key in part.pairs {
            if let i = pairIndex[key] { global.append(i); continue }
            let p = Int32(pairs.count)
            pairs.append(key)
            pairIndex[key] = p
            global.append(p)
        }
        for (c, n) in part.cells {
            cells[Cell(pair: global[Int(c.pair)], distance: c.distance, attenuation: c.attenuation), default: 0] += n
        }
        count += part.distances.count
        if !part.wholeDecibels { wholeDecibels = false }
        for i in part.distances.indices {
            sample.add(distance: part.distances[i], attenuation: part.attenuations[i], pair: Int(global[Int(part.pairOfRow[i])]))
        }
    }

    /// The cells in a fixed order (distance, attenuation, receiver, transmitter), so every sum
    /// is taken in the same order whatever order the rows came in: a report read back from its
    /// own attenuation.csv prints the same digits.
    public func entries() -> [Entry] {
        cells.map { Entry(pair: Int($0.key.pair), distance: $0.key.distance, attenuation: $0.key.attenuation, count: $0.value) }
            .sorted {
                if $0.distance != $1.distance { return $0.distance < $1.distance }
                if $0.attenuation != $1.attenuation { return $0.attenuation < $1.attenuation }
                return pairs[$0.pair] < pairs[$1.pair]
            }
    }
}

/// The sightings drawn on plot.svg: every s-th analysed sighting in arrival order, s doubling
/// whenever more than twice `maximumPoints` are held (so between `maximumPoints` and twice that
/// are kept, deterministically, however many rows stream past), and the distance range of all.
public struct PlotSample: Sendable {
    public static let maximumPoints = 4000
    public private(set) var points: [(distance: Double, attenuation: Double, pair: Int)] = []
    var stride = 1
    var seen = 0
    public private(set) var minDistance = Double.infinity
    public private(set) var maxDistance = -Double.infinity

    mutating func add(distance: Double, attenuation: Double, pair: Int) {
        minDistance = min(minDistance, distance)
        maxDistance = max(maxDistance, distance)
        defer { seen += 1 }
        guard seen % stride == 0 else { return }
        points.append((distance, attenuation, pair))
        if points.count > 2 * Self.maximumPoints {
            // Keep every other point: those whose arrival index is a multiple of the new stride.
            var kept: [(distance: Double, attenuation: Double, pair: Int)] = []
            kept.reserveCapacity(Self.maximumPoints + 1)
            for (i, p) in points.enumerated() where i % 2 == 0 { kept.append(p) }
            points = kept
            stride *= 2
        }
    }
}

/// Values with multiplicities, sorted by value: quantiles and means of grouped data.
struct WeightedValues {
    var values: [(value: Double, count: Int)] = []
    var total = 0

    /// `pairs` need not be sorted nor distinct.
    init(_ pairs: [(value: Double, count: Int)]) {
        var merged: [(value: Double, count: Int)] = []
        for p in pairs.sorted(by: { $0.value < $1.value }) {
            if let last = merged.last, last.value == p.value { merged[merged.count - 1].count += p.count } else { merged.append(p) }
            total += p.count
        }
        values = merged
    }

    /// The value of rank `k` (0-based) in the expanded sorted list.
    func value(atRank k: Int) -> Double {
        var seen = 0
        for v in values {
            seen += v.count
            if k < seen { return v.value }
        }
        return values.last?.value ?? .nan
    }

    /// As Statistics.quantile on the expanded list (type 7, linear interpolation).
    func quantile(_ p: Double) -> Double {
        guard total > 0 else { return .nan }
        let h = Double(total - 1) * min(max(p, 0), 1)
        let lo = Int(h.rounded(.down))
        let hi = min(lo + 1, total - 1)
        let a = value(atRank: lo), b = value(atRank: hi)
        return a + (h - Double(lo)) * (b - a)
    }

    var mean: Double {
        guard total > 0 else { return .nan }
        var s = 0.0
        for v in values { s += v.value * Double(v.count) }
        return s / Double(total)
    }

    var smallest: Double { values.first?.value ?? .nan }
    var largest: Double { values.last?.value ?? .nan }
}
