import ENProtocol
import Foundation

/// How sure a replay's rates are, and how a rule trades true for false positives.
///
/// - Wilson score intervals (95 %) treat contacts as independent: right when every contact is a
///   pair of its own, too narrow when a pair or a scenario contributes several correlated
///   contacts.
/// - Cluster bootstrap intervals resample whole clusters (a contact's `cluster`: its pair or
///   scenario; by default each contact alone) with replacement and take the 2.5 and 97.5
///   percentiles of the rate over the resamples, so correlation within a cluster widens them.
///   The resampling is seeded: the same contacts give the same interval.
/// - ROC and precision-recall curves sweep a threshold over each contact's score (the first
///   number the rule decided on: the value it held against its own threshold), higher meaning
///   more notify-worthy; AUC is the trapezoid area (ties count half).
public enum ReplayAccuracy {
    public struct Interval: Sendable, Equatable, Encodable {
        public var low: Double
        public var high: Double
        public init(low: Double, high: Double) { self.low = low; self.high = high }
    }

    /// The Wilson score interval of `successes` out of `n` at 95 % (z = 1.959964); nil when n is 0.
    public static func wilson(_ successes: Int, _ n: Int, z: Double = 1.959963984540054) -> Interval? {
        guard n > 0 else { return nil }
        let p = Double(successes) / Double(n), nn = Double(n), z2 = z * z
        let centre = (p + z2 / (2 * nn)) / (1 + z2 / nn)
        let half = z * ((p * (1 - p) / nn + z2 / (4 * nn * nn)).squareRoot()) / (1 + z2 / nn)
        return Interval(low: max(0, centre - half), high: min(1, centre + half))
    }

    /// One contact as the accuracy sees it.
    public struct Outcome: Sendable, Equatable {
        public var cluster: String
        public var close: Bool
        public var notified: Bool
        public var score: Double
        public init(cluster: String, close: Bool, notified: Bool, score: Double) {
            self.cluster = cluster; self.close = close; self.notified = notified; self.score = score
        }
    }

    public struct Rates: Sendable, Equatable {
        public var tp = 0, fp = 0, close = 0, far = 0
        public var tpr: Double { close == 0 ? .nan : Double(tp) / Double(close) }
        public var fpr: Double { far == 0 ? .nan : Double(fp) / Double(far) }
        public var precision: Double { tp + fp == 0 ? .nan : Double(tp) / Double(tp + fp) }
        init(_ outcomes: some Sequence<Outcome>) {
            for o in outcomes {
                if o.close { close += 1; if o.notified { tp += 1 } } else { far += 1; if o.notified { fp += 1 } }
            }
        }
    }

    public struct Summary: Sendable, Equatable, Encodable {
        public var clusters: Int
        public var bootstrapResamples: Int
        public var tprWilson: Interval?
        public var fprWilson: Interval?
        public var precisionWilson: Interval?
        public var tprBootstrap: Interval?
        public var fprBootstrap: Interval?
        public var precisionBootstrap: Interval?
        public var rocAUC: Double?
        public var averagePrecision: Double?
    }

    public static func summary(_ outcomes: [Outcome], resamples: Int = 2_000, seed: UInt64 = 2020) -> Summary {
        let r = Rates(outcomes)
        var s = Summary(clusters: 0, bootstrapResamples: resamples,
                        tprWilson: wilson(r.tp, r.close), fprWilson: wilson(r.fp, r.far), precisionWilson: wilson(r.tp, r.tp + r.fp))
        // Clusters in first-seen order, so the resampling does not depend on hashing.
        var order: [String] = [], members: [String: [Outcome]] = [:]
        for o in outcomes {
            if members[o.cluster] == nil { order.append(o.cluster) }
            members[o.cluster, default: []].append(o)
        }
        s.clusters = order.count
        if !order.isEmpty && resamples > 0 {
            // Seeded: the intervals are reproducible and need no system randomness.
            var rng = SeededRandom(seed: seed)
            var tprs: [Double] = [], fprs: [Double] = [], precisions: [Double] = []
            let groups = order.map { Rates(members[$0]!) }
            for _ in 0..<resamples {
                var total = Rates([])
                for _ in 0..<groups.count {
                    let g = groups[Int(rng.next() % UInt64(groups.count))]
                    total.tp += g.tp; total.fp += g.fp; total.close += g.close; total.far += g.far
                }
                if !total.tpr.isNaN { tprs.append(total.tpr) }
                if !total.fpr.isNaN { fprs.append(total.fpr) }
                if !total.precision.isNaN { precisions.append(total.precision) }
            }
            func percentile(_ v: [Double]) -> Interval? {
                guard !v.isEmpty else { return nil }
                let sorted = v.sorted()
                return Interval(low: Statistics.quantile(sorted: sorted, 0.025), high: Statistics.quantile(sorted: sorted, 0.975))
            }
            s.tprBootstrap = percentile(tprs); s.fprBootstrap = percentile(fprs); s.precisionBootstrap = percentile(precisions)
        }
        let roc = rocCurve(outcomes)
        s.rocAUC = roc.isEmpty ? nil : auc(roc.map { ($0.fpr, $0.tpr) })
        s.averagePrecision = averagePrecision(outcomes)
        return s
    }

    /// One threshold of a sweep: contacts scoring at least `threshold` are notified.
    public struct CurvePoint: Sendable, Equatable, Encodable {
        public var threshold: Double
        public var tpr: Double
        public var fpr: Double
        public var precision: Double?
    }

    /// The ROC curve from (0, 0) (nobody notified) to (1, 1), one point per distinct score, high
    /// to low. Empty when there is no close or no far contact.
    public static func rocCurve(_ outcomes: [Outcome]) -> [CurvePoint] {
        let close = outcomes.filter(\.close).count, far = outcomes.count - close
        guard close > 0, far > 0 else { return [] }
        let scores = Set(outcomes.map(\.score)).sorted(by: >)
        var points = [CurvePoint(threshold: .infinity, tpr: 0, fpr: 0, precision: nil)]
        for t in scores {
            let tp = outcomes.filter { $0.close && $0.score >= t }.count
            let fp = outcomes.filter { !$0.close && $0.score >= t }.count
            points.append(CurvePoint(threshold: t, tpr: Double(tp) / Double(close), fpr: Double(fp) / Double(far),
                                     precision: tp + fp == 0 ? nil : Double(tp) / Double(tp + fp)))
        }
        return points
    }

    /// Trapezoid area under points sorted by x.
    static func auc(_ points: [(x: Double, y: Double)]) -> Double {
        var area = 0.0
        for (a, b) in zip(points, points.dropFirst()) { area += (b.x - a.x) * (a.y + b.y) / 2 }
        return area
    }

    /// Average precision: the precision at each threshold weighted by the recall it adds.
    public static func averagePrecision(_ outcomes: [Outcome]) -> Double? {
        let roc = rocCurve(outcomes)
        guard !roc.isEmpty else { return nil }
        var ap = 0.0
        for (a, b) in zip(roc, roc.dropFirst()) { ap += (b.tpr - a.tpr) * (b.precision ?? 0) }
        return ap
    }
}
