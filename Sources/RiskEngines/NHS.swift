#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The NHS COVID-19 app's exposure scoring, read from the app's exposure configuration JSON
/// (`exposureNotification`, `riskCalculation`, `riskScore`, `v2RiskCalculation`).
///
/// v2 (exposure windows): the scan instances' minimum attenuations (instances with
/// secondsSinceLastScan 0 dropped) are laid on a time grid of `sampleResolution` seconds; an
/// unscented Kalman smoother estimates the distance at every step from log(attenuation)
/// (observation model: weightCoefficient x ln(distance) + intercept); each step's distance is the
/// median of a gamma distribution with the smoothed mean and variance; the score is the sum over
/// steps of step minutes x min(1, (minimumDistance / distance)^2). The window's risk score is
/// 60 x score x infectiousnessWeights[infectiousness]; it is risky when it reaches
/// `v2RiskCalculation.riskThreshold`.
///
/// v1 fallback (exposure information, for phones without v2): seconds in the three attenuation
/// buckets (`exposureNotification.attenuationDurationThresholds`, each capped at 30 minutes)
/// weighted by `riskCalculation.durationBucketWeights`, times the infectiousness factor
/// exp(-0.5 (daysFromOnset / 2.75)^2) with daysFromOnset = 8 - transmissionRiskLevel
/// (NHS: equation 3 of arXiv:2005.11057); risky when it reaches `riskCalculation.riskThreshold`.
///
/// Behaviour learnt from ukhsa-collaboration/riskscore-swift-public and the app repositories
/// (covid-19-app-ios-ag-public, covid-19-app-android-ag-public); no app code is used.
public struct NHSExposureConfiguration: Sendable, Equatable, Codable {
    public struct ExposureNotification: Sendable, Equatable, Codable {
        public var attenuationDurationThresholds: [Int]
    }
    public struct RiskCalculation: Sendable, Equatable, Codable {
        public var durationBucketWeights: [Double]
        public var riskThreshold: Double
    }
    public struct V2RiskCalculation: Sendable, Equatable, Codable {
        public var infectiousnessWeights: [Double]
        public var riskThreshold: Double
    }
    public struct RiskScore: Sendable, Equatable, Codable {
        public struct RssiParameters: Sendable, Equatable, Codable {
            public var weightCoefficient: Double
            public var intercept: Double
            public var covariance: Double
        }
        public struct PowerLossParameters: Sendable, Equatable, Codable {
            public var wavelength: Double
            public var pathLossFactor: Double
            public var refDeviceLoss: Double
        }
        public struct InitialData: Sendable, Equatable, Codable {
            public var mean: Double
            public var covariance: Double
        }
        public struct SmootherParameters: Sendable, Equatable, Codable {
            public var alpha: Double
            public var beta: Double
            public var kappa: Double
        }
        /// Seconds per step of the time grid.
        public var sampleResolution: Double
        /// Expected movement per step, metres (its square is the transition variance).
        public var expectedDistance: Double
        /// Distances below this count as this, metres.
        public var minimumDistance: Double
        public var rssiParameters: RssiParameters
        public var powerLossParameters: PowerLossParameters
        /// "log" (the app's) or "gen".
        public var observationType: String
        public var initialData: InitialData
        public var smootherParameters: SmootherParameters
    }

    public var exposureNotification: ExposureNotification?
    public var riskCalculation: RiskCalculation?
    public var riskScore: RiskScore?
    public var v2RiskCalculation: V2RiskCalculation?

    public func validate() throws {
        if let r = riskScore {
            guard r.sampleResolution > 0, r.sampleResolution.isFinite else {
                throw RiskError.invalidParameter(name: "riskScore.sampleResolution", expected: "> 0 seconds", actual: "\(r.sampleResolution)")
            }
            guard ["log", "gen"].contains(r.observationType) else {
                throw RiskError.invalidParameter(name: "riskScore.observationType", expected: "log or gen", actual: r.observationType)
            }
            guard r.rssiParameters.covariance > 0, r.initialData.covariance > 0 else {
                throw RiskError.invalidParameter(name: "riskScore covariances", expected: "> 0",
                                                 actual: "rssi \(r.rssiParameters.covariance), initial \(r.initialData.covariance)")
            }
            guard r.smootherParameters.alpha > 0 else {
                throw RiskError.invalidParameter(name: "riskScore.smootherParameters.alpha", expected: "> 0", actual: "\(r.smootherParameters.alpha)")
            }
        }
        if let v2 = v2RiskCalculation, v2.infectiousnessWeights.isEmpty {
            throw RiskError.invalidParameter(name: "v2RiskCalculation.infectiousnessWeights", expected: "at least 1 value", actual: "none")
        }
        if let rc = riskCalculation, rc.durationBucketWeights.count != 3 {
            throw RiskError.invalidParameter(name: "riskCalculation.durationBucketWeights", expected: "3 values", actual: "\(rc.durationBucketWeights.count) values")
        }
        if let t = exposureNotification?.attenuationDurationThresholds, t.count != 2 || t[0] >= t[1] {
            throw RiskError.invalidParameter(name: "exposureNotification.attenuationDurationThresholds", expected: "2 increasing values", actual: "\(t)")
        }
    }
}

/// The NHS v2 score of a sequence of scan instances (attenuation in dB, seconds since last scan).
public struct NHSRiskScoreCalculator: Sendable {
    public let parameters: NHSExposureConfiguration.RiskScore

    public init(parameters: NHSExposureConfiguration.RiskScore) {
        self.parameters = parameters
    }

    /// The model's observation: mean log-attenuation expected at a distance.
    func expectedObservation(distance d: Double) -> Double {
        let p = parameters
        switch p.observationType {
        case "gen":
            // Friis-based variant, with the NHS model's conventions (unit distance slope, the
            // wavelength term scaled by the path-loss factor, forced negative).
            let pl = p.powerLossParameters
            let effective = d > 0 ? d : 1e-3
            var rssi = -log10(effective) + pl.pathLossFactor * log10(pl.wavelength / (4 * .pi)) + pl.refDeviceLoss
            if rssi >= 0 { rssi = -1e-3 }
            return p.rssiParameters.weightCoefficient * log(-rssi) + p.rssiParameters.intercept
        default:
            return p.rssiParameters.weightCoefficient * log(d) + p.rssiParameters.intercept
        }
    }

    /// Observations on the time grid: log(attenuation) at step floor(cumulative seconds /
    /// resolution), nil (missing) on steps without a scan or with a non-finite log. The first
    /// instance sits at step 0 whatever its secondsSinceLastScan. An instance that lands on an
    /// already used step takes the next step (the NHS code assumes this never happens).
    func observations(_ instances: [(attenuation: Double, seconds: Double)]) -> [Double?] {
        var result: [Double?] = []
        var cumulative = 0.0
        for (i, s) in instances.enumerated() {
            if i > 0 { cumulative += s.seconds / parameters.sampleResolution }
            let step = Int(cumulative)
            if step > result.count { result.append(contentsOf: Array(repeating: nil, count: step - result.count)) }
            let value = log(s.attenuation)
            result.append(value.isFinite ? value : nil)
        }
        return result
    }

    /// Score in minutes-at-or-under-minimumDistance equivalents; 0 for no instances.
    public func score(_ instances: [(attenuation: Double, seconds: Double)]) -> Double {
        let obs = observations(instances)
        guard !obs.isEmpty else { return 0 }
        let p = parameters
        let smoother = UnscentedKalmanSmoother1D(
            initial: .init(mean: p.initialData.mean, covariance: p.initialData.covariance),
            transitionCovariance: p.expectedDistance * p.expectedDistance,
            observationCovariance: p.rssiParameters.covariance,
            alpha: p.smootherParameters.alpha, beta: p.smootherParameters.beta, kappa: p.smootherParameters.kappa,
            transition: { state, noise in abs(state + noise) },
            observation: { [self] state, noise in expectedObservation(distance: abs(state)) + noise })
        let minutesPerStep = p.sampleResolution / 60
        return smoother.smooth(obs).reduce(0.0) { acc, s in
            let distance = GammaFunction.gammaMedian(shape: s.mean * s.mean / s.covariance, scale: s.covariance / s.mean)
            let proximity = min(max(p.minimumDistance * p.minimumDistance / (distance * distance), 0), 1)
            return acc + minutesPerStep * proximity
        }
    }
}

public struct NHSWindowRisk: Sendable, Equatable, Codable {
    /// The window's position in the windows file (revoked windows are not scored).
    public var index: Int
    public var date: String
    public var score: Double
    public var infectiousnessFactor: Double
    public var riskScore: Double
    public var isConsideredRisky: Bool
}

public struct NHSResult: Sendable, Equatable, Codable {
    /// "v2" or "v1".
    public var method: String
    public var windows: [NHSWindowRisk]
    public var maximumRiskScore: Double
    public var riskThreshold: Double
    public var crossesThreshold: Bool
    /// Latest day with a risky window, and its highest risk score (the app's "most relevant exposure").
    public var mostRelevantExposureDate: String?
    public var mostRelevantExposureRiskScore: Double?

    enum CodingKeys: String, CodingKey {
        case method, windows, maximumRiskScore, riskThreshold, crossesThreshold, mostRelevantExposureDate, mostRelevantExposureRiskScore
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(method, forKey: .method)
        try c.encode(windows, forKey: .windows)
        try c.encode(maximumRiskScore, forKey: .maximumRiskScore)
        try c.encode(riskThreshold, forKey: .riskThreshold)
        try c.encode(crossesThreshold, forKey: .crossesThreshold)
        try c.encode(mostRelevantExposureDate, forKey: .mostRelevantExposureDate)
        try c.encode(mostRelevantExposureRiskScore, forKey: .mostRelevantExposureRiskScore)
    }
}

public enum NHSRiskCalculation {
    public enum Method: String, Sendable, CaseIterable { case v2, v1 }

    /// The NHS v1 infectiousness factor for days from symptom onset.
    public static func infectiousnessFactor(daysFromOnset: Int) -> Double {
        let x = Double(daysFromOnset) / 2.75
        return exp(-0.5 * x * x)
    }

    /// Scores every window. `method` nil: v2 when the configuration has `riskScore` and
    /// `v2RiskCalculation`, else v1.
    public static func calculate(_ windows: [ExposureWindow], configuration c: NHSExposureConfiguration,
                                 method: Method? = nil) throws -> NHSResult {
        try calculate(windows.enumerated().map { WindowsFileEntry(index: $0, $1) }, configuration: c, method: method)
    }

    /// Scores windows as read from a windows file, decimal attenuations and durations kept (the
    /// NHS scorer and its published scenarios use decimals).
    public static func calculate(_ windows: [WindowsFileEntry], configuration c: NHSExposureConfiguration,
                                 method: Method? = nil) throws -> NHSResult {
        try c.validate()
        let chosen = method ?? ((c.riskScore != nil && c.v2RiskCalculation != nil) ? .v2 : .v1)
        var results: [NHSWindowRisk] = []
        let threshold: Double
        switch chosen {
        case .v2:
            guard let rs = c.riskScore, let v2 = c.v2RiskCalculation else {
                throw RiskError.invalidParameter(name: "riskScore/v2RiskCalculation", expected: "both present for the v2 method", actual: "missing")
            }
            threshold = v2.riskThreshold
            let calculator = NHSRiskScoreCalculator(parameters: rs)
            for w in windows where w.reportType != 5 {
                // The apps drop instances with secondsSinceLastScan 0 as invalid model input.
                let instances = w.scanInstances.filter { $0.secondsSinceLastScan > 0 }
                    .map { (attenuation: $0.minAttenuationDb, seconds: $0.secondsSinceLastScan) }
                let score = calculator.score(instances)
                let factor = v2.infectiousnessWeights.indices.contains(w.infectiousness)
                    ? v2.infectiousnessWeights[w.infectiousness] : v2.infectiousnessWeights[0]
                let risk = 60 * score * factor
                results.append(NHSWindowRisk(index: w.index, date: w.day.isoDate, score: score, infectiousnessFactor: factor,
                                             riskScore: risk, isConsideredRisky: !instances.isEmpty && risk >= threshold))
            }
        case .v1:
            guard let rc = c.riskCalculation, let en = c.exposureNotification else {
                throw RiskError.invalidParameter(name: "riskCalculation/exposureNotification", expected: "both present for the v1 method", actual: "missing")
            }
            threshold = rc.riskThreshold
            for w in windows where w.reportType != 5 {
                guard let trl = w.transmissionRiskLevel, (0...8).contains(trl) else {
                    throw RiskError.invalidWindow(index: w.index, field: "transmissionRiskLevel", expected: "0...8 for the v1 method",
                                                  actual: w.transmissionRiskLevel.map(String.init) ?? "absent")
                }
                // The framework's three buckets by typical attenuation (GAENv1.attenuationDurations).
                let t = en.attenuationDurationThresholds.map(Double.init)
                var seconds = [0.0, 0.0, 0.0]
                for s in w.scanInstances {
                    let a = s.typicalAttenuationDb
                    seconds[a < t[0] ? 0 : (a < t[1] ? 1 : 2)] += max(s.secondsSinceLastScan, 0)
                }
                let score = zip(seconds.map { min($0, 30 * 60) }, rc.durationBucketWeights).reduce(0.0) { $0 + $1.0 * $1.1 }
                let factor = infectiousnessFactor(daysFromOnset: 8 - trl)
                let risk = score * factor
                results.append(NHSWindowRisk(index: w.index, date: w.day.isoDate, score: score, infectiousnessFactor: factor,
                                             riskScore: risk, isConsideredRisky: risk >= threshold))
            }
        }
        let maximum = results.map(\.riskScore).max() ?? 0
        let relevant = results.filter(\.isConsideredRisky).max { ($0.date, $0.riskScore) < ($1.date, $1.riskScore) }
        return NHSResult(method: chosen.rawValue, windows: results, maximumRiskScore: maximum, riskThreshold: threshold,
                         crossesThreshold: results.contains(where: \.isConsideredRisky),
                         mostRelevantExposureDate: relevant?.date, mostRelevantExposureRiskScore: relevant?.riskScore)
    }
}

/// The NHS COVID-19 app's risk scoring (v1, and v2 with the scorer) in the registry.
public struct NHSEngine: RiskEngine {
    public init() {}
    public let name = "nhs"
    public let title = "NHS COVID-19 app risk score (v1 attenuation buckets, v2 with the unscented Kalman smoother)"
    public var publishedParameters: Data? { Data(PublishedRiskConfigurations.nhs.utf8) }

    struct Rule: RiskRule {
        let p: NHSExposureConfiguration
        // Decimal attenuations and durations kept: the NHS scorer takes them.
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let r = try NHSRiskCalculation.calculate(entries, configuration: p)
            return RiskAssessment(notified: r.crossesThreshold,
                                  numbers: [("maximumRiskScore", r.maximumRiskScore), ("riskThreshold", r.riskThreshold)],
                                  detail: withDetail ? try RiskJSON.encode(r, pretty: false) : Data())
        }
    }

    /// Every key of the app's published exposure configuration, by its path: the engine reads
    /// the v2 calculation (and v1's duration weights and the distance model), and knows the
    /// rest of the file as the app served it, so a misspelt key is named, not read as absent.
    static let knownKeyPaths: [String] = {
        let v1 = ["minimumRiskScore", "attenuationDurationThresholds", "attenuationLevelValues", "daysSinceLastExposureLevelValues",
                  "durationLevelValues", "transmissionRiskLevelValues", "attenuationWeight", "daysSinceLastExposureWeight",
                  "durationWeight", "transmissionRiskWeight"].map { "exposureNotification." + $0 }
        let score = ["sampleResolution", "expectedDistance", "minimumDistance", "rssiParameters.weightCoefficient", "rssiParameters.intercept",
                     "rssiParameters.covariance", "powerLossParameters.wavelength", "powerLossParameters.pathLossFactor",
                     "powerLossParameters.refDeviceLoss", "observationType", "initialData.mean", "initialData.covariance",
                     "smootherParameters.alpha", "smootherParameters.beta", "smootherParameters.kappa"].map { "riskScore." + $0 }
        let v2 = ["daysSinceOnsetToInfectiousness", "infectiousnessWeights", "reportTypeWhenMissing", "riskThreshold"].map { "v2RiskCalculation." + $0 }
        return v1 + ["riskCalculation.durationBucketWeights", "riskCalculation.riskThreshold"] + score + v2
    }()

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        let (p, warnings) = try ConfigurationText.decodeJSON(NHSExposureConfiguration.self, parameters, known: Self.knownKeyPaths,
                                                             file: source, allowUnknownFields: options.allowUnknownFields)
        try p.validate()
        return (Rule(p: p), warnings)
    }

}
