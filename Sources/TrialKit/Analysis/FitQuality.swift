import Foundation
import TrialFormats

/// The log-distance model fitted with the sensitivity limit taken into account. Readings weaker
/// than the receiver's sensitivity are never recorded, so at long range only the strongest
/// packets arrive and ordinary least squares sees attenuation flatten with distance. Here the
/// readings are modelled as normal around A(1 m) + slope x log10(d), truncated at the limit
/// (the weakest attenuation observed, + 0.5 dB for whole-dB readings), and fitted by maximum
/// likelihood (truncated-normal regression; the Tobit fit over scans, TobitFit, counts the
/// scans that lost the transmitter instead). Written here: no optimisation package is in
/// the offline set; Nelder-Mead on three parameters over grouped data is small.
public struct CensoredFit: Sendable, Codable, Equatable {
    public var attenuationAt1m: Double
    public var slopePerDecade: Double
    public var sigma: Double
    /// The truncation point used (dB).
    public var limitDb: Double
    public var count: Int

    /// nil when there are too few points or distances, or the optimiser does not settle.
    public init?(points: [(x: Double, y: Double)], limit: Double, start: (a: Double, b: Double, sigma: Double)) {
        self.init(weighted: points.map { ($0.x, $0.y, 1) }, limit: limit, start: start)
    }

    /// Grouped points: (x, y) seen `count` times each.
    public init?(weighted points: [(x: Double, y: Double, count: Int)], limit: Double, start: (a: Double, b: Double, sigma: Double)) {
        let total = points.reduce(0) { $0 + $1.count }
        guard total >= 3, start.sigma > 0 else { return nil }
        // Group identical (x, y): whole-dB readings at a few distances collapse to a few hundred;
        // summed in a fixed order so the result does not depend on hashing.
        var groups: [Pair: Int] = [:]
        for p in points { groups[Pair(x: (p.x * 1e4).rounded() / 1e4, y: p.y), default: 0] += p.count }
        let data = groups.map { ($0.key.x, $0.key.y, Double($0.value)) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        func nll(_ v: [Double]) -> Double {
            let a = v[0], b = v[1], s = exp(v[2])
            var total = 0.0
            for (x, y, n) in data {
                let mu = a + b * x
                let z = (y - mu) / s
                let cdf = Statistics.normalCDF((limit - mu) / s)
                guard cdf > 1e-300 else { return .infinity }
                total += n * (0.5 * z * z + log(s) + log(cdf))
            }
            return total
        }
        guard let best = NelderMead.minimise(nll, start: [start.a, start.b, log(start.sigma)], steps: [2, 2, 0.2]) else { return nil }
        attenuationAt1m = best[0]; slopePerDecade = best[1]; sigma = exp(best[2])
        limitDb = limit; count = total
        guard attenuationAt1m.isFinite, slopePerDecade.isFinite, sigma.isFinite else { return nil }
    }

    struct Pair: Hashable { var x: Double; var y: Double }
}

/// The log-distance model fitted as a Tobit model (type I censored regression) on scans: each
/// scan of a receiver with a transmitter present at a known distance (from the markers) is one
/// observation. When the scan heard the transmitter, its value is the mean attenuation of the
/// transmitter's readings in that scan; when it did not, the value is censored: weaker than the
/// limit (the weakest attenuation received). The likelihood takes both: the normal density for
/// the heard scans, the normal tail above the limit for the unheard ones. Unlike the truncated
/// fit, which only knows the readings that arrived, this one counts the scans that lost the
/// transmitter, so the weak end of the channel is seen. sigma is the spread of a scan's mean
/// (smaller than a single reading's when readings within a scan vary independently).
public struct TobitFit: Sendable, Codable, Equatable {
    public var attenuationAt1m: Double
    public var slopePerDecade: Double
    public var sigma: Double
    public var limitDb: Double
    /// Scans in which the transmitter was heard, and not heard (censored).
    public var heardScans: Int
    public var censoredScans: Int

    /// - Parameters:
    ///   - heard: (log10 distance, mean attenuation of the scan) and how many scans had it.
    ///   - censored: log10 distance and how many scans at it did not hear the transmitter.
    public init?(heard: [(x: Double, y: Double, count: Int)], censored: [(x: Double, count: Int)], limit: Double,
                 start: (a: Double, b: Double, sigma: Double)? = nil) {
        let nHeard = heard.reduce(0) { $0 + $1.count }, nCensored = censored.reduce(0) { $0 + $1.count }
        guard nHeard >= 3 else { return nil }
        let xs = Set(heard.map(\.x) + censored.map(\.x))
        guard xs.count >= 2 else { return nil }
        // Sorted first: the callers' points come from dictionaries, and the start's sums (so the
        // last digits of the result) must not depend on their order.
        let heard = heard.sorted { ($0.x, $0.y) < ($1.x, $1.y) }
        let initial: (a: Double, b: Double, sigma: Double)
        if let start { initial = start } else {
            guard let ols = try? LinearFit(weighted: heard) else { return nil }
            initial = (ols.intercept, ols.slope, max(ols.residualSigma, 0.5))
        }
        let h = heard.map { ($0.x, $0.y, Double($0.count)) }
        let c = censored.sorted { $0.x < $1.x }.map { ($0.x, Double($0.count)) }
        func nll(_ v: [Double]) -> Double {
            let a = v[0], b = v[1], ls = v[2], s = exp(ls)
            var total = 0.0
            for (x, y, n) in h {
                let z = (y - a - b * x) / s
                total += n * (0.5 * z * z + ls)
            }
            for (x, n) in c {
                // log P(Y > limit) = log Phi((mu - limit) / s), with erfc for the far tail.
                let tail = Statistics.normalCDF((a + b * x - limit) / s)
                guard tail > 1e-300 else { return .infinity }
                total -= n * log(tail)
            }
            return total
        }
        // Restarted once from its own result: Nelder-Mead can settle early on a long valley.
        guard let first = NelderMead.minimise(nll, start: [initial.a, initial.b, log(initial.sigma)], steps: [2, 2, 0.2], iterations: 4000),
              let best = NelderMead.minimise(nll, start: first, steps: [0.5, 0.5, 0.05], iterations: 4000) else { return nil }
        attenuationAt1m = best[0]; slopePerDecade = best[1]; sigma = exp(best[2])
        limitDb = limit; heardScans = nHeard; censoredScans = nCensored
        guard attenuationAt1m.isFinite, slopePerDecade.isFinite, sigma.isFinite else { return nil }
    }
}

enum NelderMead {
    static func minimise(_ f: ([Double]) -> Double, start: [Double], steps: [Double], iterations: Int = 2000) -> [Double]? {
        let n = start.count
        var simplex = [start]
        for i in 0..<n { var p = start; p[i] += steps[i]; simplex.append(p) }
        var values = simplex.map(f)
        for _ in 0..<iterations {
            let order = values.indices.sorted { values[$0] < values[$1] }
            simplex = order.map { simplex[$0] }; values = order.map { values[$0] }
            if abs(values[n] - values[0]) < 1e-10 * (abs(values[0]) + 1e-10) { break }
            var centroid = [Double](repeating: 0, count: n)
            for p in simplex.dropLast() { for i in 0..<n { centroid[i] += p[i] / Double(n) } }
            func along(_ t: Double) -> [Double] { (0..<n).map { centroid[$0] + t * (simplex[n][$0] - centroid[$0]) } }
            let r = along(-1), fr = f(r)
            if fr < values[0] {
                let e = along(-2), fe = f(e)
                if fe < fr { simplex[n] = e; values[n] = fe } else { simplex[n] = r; values[n] = fr }
            } else if fr < values[n - 1] {
                simplex[n] = r; values[n] = fr
            } else {
                let c = along(fr < values[n] ? -0.5 : 0.5), fc = f(c)
                if fc < min(fr, values[n]) { simplex[n] = c; values[n] = fc } else {
                    for k in 1...n { simplex[k] = (0..<n).map { simplex[0][$0] + 0.5 * (simplex[k][$0] - simplex[0][$0]) }; values[k] = f(simplex[k]) }
                }
            }
        }
        return values[0].isFinite ? simplex[0] : nil
    }
}

/// Counts and attenuation of one receiver/transmitter pair or one receiver.
public struct GroupStats: Sendable, Codable, Equatable {
    public var receiver: String
    /// nil in the per-receiver table.
    public var transmitter: String?
    public var count: Int
    public var distances: Int
    public var minDistance: Double
    public var maxDistance: Double
    public var medianAttenuation: Double
    public var meanAttenuation: Double
    /// The pair's own log-distance slope (dB/decade), when it was seen at two distances or more.
    public var slopePerDecade: Double?
}

/// Recall (TPR) and precision at one attenuation threshold of the sweep.
public struct SweepRow: Sendable, Codable, Equatable {
    public var thresholdDb: Double
    public var truePositives: Int
    public var falsePositives: Int
    public var recall: Double
    public var falsePositiveRate: Double
    public var precision: Double
}

extension ChannelAnalysis {
    static func groups(_ tally: ObservationTally, _ entries: [ObservationTally.Entry], floor: Double, byPair: Bool) -> [GroupStats] {
        var buckets: [NodePair: [ObservationTally.Entry]] = [:]
        for e in entries {
            let p = tally.pairs[e.pair]
            buckets[NodePair(receiver: p.receiver, transmitter: byPair ? p.transmitter : ""), default: []].append(e)
        }
        return buckets.keys.sorted().map { k in
            let list = buckets[k]!
            let atts = WeightedValues(list.map { ($0.attenuation, $0.count) })
            let ds = Set(list.map(\.distance))
            let slope = ds.count >= 2 ? (try? LinearFit(weighted: list.map { (log10(max($0.distance, floor)), $0.attenuation, $0.count) }))?.slope : nil
            return GroupStats(receiver: k.receiver, transmitter: byPair ? k.transmitter : nil, count: atts.total, distances: ds.count,
                              minDistance: ds.min() ?? .nan, maxDistance: ds.max() ?? .nan,
                              medianAttenuation: atts.quantile(0.5), meanAttenuation: atts.mean,
                              slopePerDecade: slope)
        }
    }

    static func sweep(_ entries: [ObservationTally.Entry], closeDistance: Double) -> [SweepRow] {
        guard let lo = entries.map(\.attenuation).min(), let hi = entries.map(\.attenuation).max() else { return [] }
        var close = 0, far = 0
        for e in entries { if e.distance <= closeDistance { close += e.count } else { far += e.count } }
        func ratio(_ a: Int, _ b: Int) -> Double { b > 0 ? Double(a) / Double(b) : .nan }
        let byAttenuation = entries.sorted { $0.attenuation < $1.attenuation }
        var rows: [SweepRow] = []
        var next = 0, tp = 0, fp = 0
        var t = lo.rounded(.down)
        while t <= hi.rounded(.up) {
            while next < byAttenuation.count, byAttenuation[next].attenuation <= t {
                let e = byAttenuation[next]
                if e.distance <= closeDistance { tp += e.count } else { fp += e.count }
                next += 1
            }
            rows.append(SweepRow(thresholdDb: t, truePositives: tp, falsePositives: fp, recall: ratio(tp, close),
                                 falsePositiveRate: ratio(fp, far), precision: ratio(tp, tp + fp)))
            t += 1
        }
        return rows
    }

    /// Plain-language warnings on the fit: poor (R² below 0.3) or flattened by the sensitivity
    /// limit (the fit expects more than 10 % of the readings at the farthest distance to be
    /// weaker than anything received, or the censoring-aware slope is 1.5 times OLS's or more).
    static func warnings(fit: ChannelFit?, censored: CensoredFit?, farthest: Double?, floor: Double) -> [String] {
        guard let fit else { return [] }
        var out: [String] = []
        if fit.rSquared < 0.3 {
            out.append("poor fit: R² = \(Format.fixed(fit.rSquared, 3)); distance explains little of the attenuation at this site (bodies, occupancy, orientation, device differences, or readings cut off by sensitivity)")
        }
        if let c = censored, let far = farthest {
            let beyond = 1 - Statistics.normalCDF((c.limitDb - fit.meanAttenuation(at: max(far, floor))) / max(fit.sigma, 1e-9))
            if beyond > 0.1 || (fit.slopePerDecade > 0 && c.slopePerDecade >= 1.5 * fit.slopePerDecade) || (fit.slopePerDecade <= 0 && c.slopePerDecade > 0) {
                out.append("censored by sensitivity: nothing weaker than \(Format.fixed(c.limitDb, 1)) dB was received, yet the least-squares model puts \(Format.fixed(beyond * 100, 0)) % of the readings at \(Format.readable(far)) m beyond it; the weak readings that were lost flatten the least-squares slope (\(Format.fixed(fit.slopePerDecade, 2)) dB/decade) — the censoring-aware fit gives \(Format.fixed(c.slopePerDecade, 2)) dB/decade")
            }
        }
        return out
    }
}
