#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// Whether a configuration leaves its rule able to notify anyone at all. A configuration read
/// wrongly (a field spelled differently and left out, so its values are protobuf's 0) or edited
/// by hand can make every score 0 or put the threshold above any achievable score; a replay then
/// reports "notified no one" for a reason that is not the app's. Each check bounds the best any
/// windows could do and says which values cap it.
public enum ConfigurationReach {
    /// The largest v1 risk score any exposure with a transmission risk level can reach: the
    /// product of each table's largest value (the framework multiplies the four level values).
    public static func maximumScore(_ c: GAENv1Configuration) -> Int {
        [c.attenuationLevelValues, c.daysSinceLastExposureLevelValues, c.durationLevelValues, c.transmissionRiskLevelValues]
            .map { $0.max() ?? 0 }.reduce(1, *)
    }

    static func v1Caps(_ c: GAENv1Configuration) -> String {
        let tables = [("attenuation", c.attenuationLevelValues), ("days since exposure", c.daysSinceLastExposureLevelValues),
                      ("duration", c.durationLevelValues), ("transmission risk", c.transmissionRiskLevelValues)]
        return tables.map { "\($0.0) \($0.1.max() ?? 0)" }.joined(separator: ", ")
    }

    /// Framework v1 scoring with a threshold (gaen-v1, Immuni): counted at score >= threshold and > 0.
    public static func warnings(v1 c: GAENv1Configuration, threshold: Int, thresholdName: String) -> [String] {
        let best = maximumScore(c)
        if best == 0 {
            return ["no exposure can score above 0 (maximum achievable risk score 0; largest level values: \(v1Caps(c))): the rule can notify no one"]
        }
        if best < threshold {
            return ["the maximum achievable risk score \(best) (largest level values: \(v1Caps(c))) is below \(thresholdName) \(threshold): the rule can notify no one"]
        }
        return []
    }

    /// CWA v1: a risk encounter needs minRiskScore; increased risk needs the weighted minutes,
    /// at most (30 minutes per bucket x its positive weight + offset) x best score / divisor.
    public static func warnings(cwaV1 c: CWAv1Configuration) -> [String] {
        let scoreWarnings = warnings(v1: c.v1, threshold: c.v1.minimumRiskScore, thresholdName: "minRiskScore")
        if !scoreWarnings.isEmpty { return scoreWarnings }
        let best = Double(maximumScore(c.v1))
        let bucketMax = c.attenuationDurationWeights.reduce(c.defaultBucketOffset) { $0 + 30 * max($1, 0) }
        let weightedMax = bucketMax * best / c.riskScoreNormalizationDivisor
        if weightedMax < c.increasedRiskMinutes {
            return ["at most \(Self.number(weightedMax)) weighted minutes are achievable ((30 min x weights \(c.attenuationDurationWeights.map(Self.number)) + offset \(Self.number(c.defaultBucketOffset))) x score \(Int(best)) / divisor \(Self.number(c.riskScoreNormalizationDivisor))), below the \(Self.number(c.increasedRiskMinutes)) minutes of increased risk: the rule can notify no one"]
        }
        return []
    }

    /// CWA (exposure windows): a high-risk day needs a window mapped to a level and a day range
    /// of level 2 (high), reachable only when some attenuation weighs and some transmission risk
    /// value is above 0.
    public static func warnings(cwa p: CWAParameters) -> [String] {
        var out: [String] = []
        if !p.minutesAtAttenuationWeights.contains(where: { $0.weight > 0 }) {
            out.append("every minutesAtAttenuationWeights weight is 0 (normalized time always 0)")
        }
        if p.transmissionRiskLevelMultiplier == nil, !p.transmissionRiskValueMapping.contains(where: { $0.transmissionRiskValue > 0 }) {
            out.append("every transmissionRiskValueMapping value is 0 or absent (normalized time always 0)")
        }
        if let m = p.transmissionRiskLevelMultiplier, m <= 0 { out.append("transmissionRiskLevelMultiplier is \(Self.number(m)) (normalized time always 0)") }
        if !p.normalizedTimePerDayToRiskLevelMapping.contains(where: { $0.riskLevel == CWARiskCalculation.high }) {
            out.append("no normalizedTimePerDayToRiskLevelMapping range has riskLevel 2 (high)")
        }
        return out.isEmpty ? [] : [out.joined(separator: "; ") + ": the rule can notify no one"]
    }

    /// To 4 decimals, whole numbers whole: a bound such as 30 x 0.1 x 40 / 100 reads "1.2", not 1.2000000000000002.
    static func number(_ v: Double) -> String {
        let r = (v * 10_000).rounded() / 10_000
        return r == r.rounded() && abs(r) < 1e15 ? String(Int64(r)) : String(r)
    }
}
