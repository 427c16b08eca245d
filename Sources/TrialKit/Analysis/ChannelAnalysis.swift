import Foundation

/// One matched sighting with its ground-truth distance: the unit of the trial analysis.
public struct Observation: Sendable, Equatable {
    public var time: Double
    public var receiver: String
    public var transmitter: String
    public var distance: Double
    public var attenuation: Double
    /// The sighting behind the value, when it came from matching (attenuation.csv carries them
    /// so a join back to the sightings is exact): its RPI (hex), the TX power from its AEM, the
    /// raw RSSI and the receiver's RSSI correction.
    public var rpi: String?
    public var txPower: Int?
    public var rssi: Int?
    public var rssiCorrection: Int?

    public init(time: Double, receiver: String, transmitter: String, distance: Double, attenuation: Double,
                rpi: String? = nil, txPower: Int? = nil, rssi: Int? = nil, rssiCorrection: Int? = nil) {
        self.time = time; self.receiver = receiver; self.transmitter = transmitter
        self.distance = distance; self.attenuation = attenuation
        self.rpi = rpi; self.txPower = txPower; self.rssi = rssi; self.rssiCorrection = rssiCorrection
    }

    /// Attenuations a reading can have: TX power (-50...+20 dBm, GAEN-FACTS.md) minus an RSSI
    /// of -127...+20 dBm gives -70...147 dB; anything outside is not a reading (the -127 of an
    /// unavailable RSSI fed through as an attenuation, a unit mistake).
    public static let plausibleAttenuation: ClosedRange<Double> = -70...147
}

public struct AnalysisOptions: Sendable, Codable, Equatable {
    /// Attenuation thresholds (dB) of the detection tables: the framework's usual bucket edges.
    public var thresholds: [Double] = [55, 63, 73]
    /// Ground truth "close contact": true distance at most this many metres.
    public var closeContactDistance: Double = 2
    /// Distances below this are taken as this in the model (log10 of 0 is undefined).
    public var minimumDistance: Double = 0.1
    /// At most this many distinct distances are tabulated one by one; more are binned
    /// logarithmically (`binsPerDecade`).
    public var maximumDistinctDistances: Int = 40
    public var binsPerDecade: Int = 10

    public init() {}
}

/// Attenuation at one distance (or distance bin): count, median and quartiles.
public struct DistanceStats: Sendable, Codable, Equatable {
    /// The distance (metres) of the group: its exact value, or the median distance in a bin.
    public var distance: Double
    public var distanceLow: Double
    public var distanceHigh: Double
    public var count: Int
    public var median: Double
    public var q1: Double
    public var q3: Double
    public var mean: Double
    public var min: Double
    public var max: Double
}

/// The fitted log-distance model A(d) = A(1 m) + slope * log10(d) + X, X ~ N(0, sigma).
public struct ChannelFit: Sendable, Codable, Equatable {
    public var attenuationAt1m: Double
    /// dB per decade of distance (10 n for path-loss exponent n).
    public var slopePerDecade: Double
    public var sigma: Double
    public var attenuationAt1mStandardError: Double
    public var slopeStandardError: Double
    public var rSquared: Double
    public var count: Int

    public var pathLossExponent: Double { slopePerDecade / 10 }

    public init(attenuationAt1m: Double, slopePerDecade: Double, sigma: Double) {
        self.attenuationAt1m = attenuationAt1m; self.slopePerDecade = slopePerDecade; self.sigma = sigma
        attenuationAt1mStandardError = 0; slopeStandardError = 0; rSquared = .nan; count = 0
    }

    init(_ f: LinearFit) {
        attenuationAt1m = f.intercept; slopePerDecade = f.slope; sigma = f.residualSigma
        attenuationAt1mStandardError = f.interceptStandardError; slopeStandardError = f.slopeStandardError
        rSquared = f.rSquared; count = f.count
    }

    public func meanAttenuation(at distance: Double) -> Double {
        attenuationAt1m + slopePerDecade * log10(distance)
    }

    /// P(observed attenuation <= threshold) at `distance` under the model; `continuity` is
    /// 0.5 when observations are whole decibels (a reading of T covers T - 0.5 ..< T + 0.5).
    public func probabilityAtOrBelow(_ threshold: Double, distance: Double, continuity: Double) -> Double {
        guard sigma > 0 else { return meanAttenuation(at: distance) <= threshold + continuity ? 1 : 0 }
        return Statistics.normalCDF((threshold + continuity - meanAttenuation(at: distance)) / sigma)
    }
}

/// Detection of close contacts by "attenuation <= threshold", per sighting, against ground
/// truth, observed and as the fitted model expects.
public struct DetectionRow: Sendable, Codable, Equatable {
    public var thresholdDb: Double
    public var closeCount: Int
    public var farCount: Int
    public var truePositives: Int
    public var falsePositives: Int
    public var truePositiveRate: Double
    public var falsePositiveRate: Double
    public var precision: Double
    public var expectedTruePositiveRate: Double
    public var expectedFalsePositiveRate: Double
    public var expectedPrecision: Double
}

public struct ChannelAnalysis: Sendable, Codable, Equatable {
    public var options: AnalysisOptions
    public var observationCount: Int
    /// True when every attenuation is a whole number of dB (the analytic rates then use a
    /// continuity correction of 0.5 dB).
    public var wholeDecibels: Bool
    public var distances: [DistanceStats]
    public var fit: ChannelFit?
    /// Why there is no fit, when there is none.
    public var fitError: String?
    public var detection: [DetectionRow]
    /// The fit with the sensitivity limit taken into account (FitQuality.swift).
    public var censoredFit: CensoredFit?
    /// Plain-language warnings on the fit (poor, censored by sensitivity).
    public var warnings: [String]
    public var pairs: [GroupStats]
    public var receivers: [GroupStats]
    /// Recall and precision at every whole-dB threshold from the strongest to the weakest reading.
    public var sweep: [SweepRow]

    public init(observations: [Observation], options: AnalysisOptions = AnalysisOptions()) {
        self.init(tally: ObservationTally(observations), options: options)
    }

    /// The analysis of a tally (ObservationTally): the same numbers as of the observations it
    /// counted, computed from their distinct values.
    public init(tally: ObservationTally, options: AnalysisOptions = AnalysisOptions()) {
        self.options = options
        observationCount = tally.count
        wholeDecibels = tally.wholeDecibels
        let floor = options.minimumDistance
        let entries = tally.entries()
        distances = Self.distanceStats(entries, options: options)
        let points = entries.map { (x: log10(max($0.distance, floor)), y: $0.attenuation, count: $0.count) }
        var fit: ChannelFit? = nil
        do {
            fit = ChannelFit(try LinearFit(weighted: points))
            fitError = nil
        } catch {
            fitError = "\(error)"
        }
        self.fit = fit
        let whole = tally.wholeDecibels
        if let fit, let limit = entries.map(\.attenuation).max() {
            censoredFit = CensoredFit(weighted: points, limit: limit + (whole ? 0.5 : 0), start: (fit.attenuationAt1m, fit.slopePerDecade, fit.sigma))
        } else {
            censoredFit = nil
        }
        warnings = Self.warnings(fit: fit, censored: censoredFit, farthest: entries.map(\.distance).max(), floor: floor)
        pairs = Self.groups(tally, entries, floor: floor, byPair: true)
        receivers = Self.groups(tally, entries, floor: floor, byPair: false)
        sweep = Self.sweep(entries, closeDistance: options.closeContactDistance)
        let continuity = whole ? 0.5 : 0.0
        detection = options.thresholds.map { t in
            var close = 0, far = 0, tp = 0, fp = 0
            var eTP = 0.0, eFP = 0.0
            for e in entries {
                let isClose = e.distance <= options.closeContactDistance
                let positive = e.attenuation <= t
                let p = (fit?.probabilityAtOrBelow(t, distance: max(e.distance, floor), continuity: continuity) ?? .nan) * Double(e.count)
                if isClose { close += e.count; if positive { tp += e.count }; eTP += p } else { far += e.count; if positive { fp += e.count }; eFP += p }
            }
            func ratio(_ a: Double, _ b: Double) -> Double { b > 0 ? a / b : .nan }
            return DetectionRow(thresholdDb: t, closeCount: close, farCount: far, truePositives: tp, falsePositives: fp,
                                truePositiveRate: ratio(Double(tp), Double(close)),
                                falsePositiveRate: ratio(Double(fp), Double(far)),
                                precision: ratio(Double(tp), Double(tp + fp)),
                                expectedTruePositiveRate: ratio(eTP, Double(close)),
                                expectedFalsePositiveRate: ratio(eFP, Double(far)),
                                expectedPrecision: ratio(eTP, eTP + eFP))
        }
    }

    static func distanceStats(_ entries: [ObservationTally.Entry], options: AnalysisOptions) -> [DistanceStats] {
        var byDistance: [Double: [(value: Double, count: Int)]] = [:]
        for e in entries { byDistance[e.distance, default: []].append((e.attenuation, e.count)) }
        if byDistance.count <= options.maximumDistinctDistances {
            return byDistance.keys.sorted().map { d in stats(WeightedValues(byDistance[d]!), distance: d, low: d, high: d) }
        }
        // Logarithmic bins: bin k covers [10^(k/b), 10^((k+1)/b)).
        let b = Double(options.binsPerDecade)
        var bins: [Int: (ds: [(value: Double, count: Int)], as: [(value: Double, count: Int)])] = [:]
        for e in entries {
            let d = max(e.distance, options.minimumDistance)
            var k = Int((log10(d) * b).rounded(.down))
            // log10 rounding can put an edge value one bin off; settle it against the edges.
            while pow(10, Double(k + 1) / b) <= d { k += 1 }
            while pow(10, Double(k) / b) > d { k -= 1 }
            bins[k, default: ([], [])].ds.append((e.distance, e.count))
            bins[k]!.as.append((e.attenuation, e.count))
        }
        return bins.keys.sorted().map { k in
            let bin = bins[k]!
            let ds = WeightedValues(bin.ds)
            // Distances under the floor share its bin; the bin's low edge then reaches down to them.
            return stats(WeightedValues(bin.as), distance: ds.quantile(0.5), low: min(pow(10, Double(k) / b), ds.smallest),
                         high: pow(10, Double(k + 1) / b))
        }
    }

    static func stats(_ v: WeightedValues, distance: Double, low: Double, high: Double) -> DistanceStats {
        DistanceStats(distance: distance, distanceLow: low, distanceHigh: high, count: v.total,
                      median: v.quantile(0.5), q1: v.quantile(0.25), q3: v.quantile(0.75), mean: v.mean,
                      min: v.smallest, max: v.largest)
    }
}
