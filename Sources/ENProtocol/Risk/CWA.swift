import Foundation

/// The Corona-Warn-App's exposure-window risk calculation (CWA 1.9 and later), read from the
/// app's own parameter names (RiskCalculationParameters of the CWA app configuration). Written
/// from the behaviour the CWA documents and tests (cwa-app-android,
/// Corona-Warn-App/src/test/resources/exposure-windows-risk-calculation.json); no app code is used.
///
/// Per window: drop it when a minutes-at-attenuation filter matches; derive its transmission risk
/// level (TRL) from report type and infectiousness offsets; drop it when a TRL filter matches;
/// normalizedTime = transmissionRiskValue(TRL) x minutes weighted by the weight of the range the
/// scan instance's minimum attenuation falls in; map it to a risk level (no level: dropped).
/// Per day: the windows' normalized times summed and rounded to one decimal, mapped to a day risk
/// level (no level: the day does not count). Total: high when any day is high, low otherwise.
public struct CWARange: Sendable, Equatable, Codable {
    public var min: Double
    public var max: Double
    public var minExclusive: Bool
    public var maxExclusive: Bool

    public init(min: Double, max: Double, minExclusive: Bool = false, maxExclusive: Bool = false) {
        self.min = min
        self.max = max
        self.minExclusive = minExclusive
        self.maxExclusive = maxExclusive
    }

    enum CodingKeys: String, CodingKey { case min, max, minExclusive, maxExclusive }

    /// Absent fields take protobuf's defaults (0, false), as in the app configuration.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        min = try c.decodeIfPresent(Double.self, forKey: .min) ?? 0
        max = try c.decodeIfPresent(Double.self, forKey: .max) ?? 0
        minExclusive = try c.decodeIfPresent(Bool.self, forKey: .minExclusive) ?? false
        maxExclusive = try c.decodeIfPresent(Bool.self, forKey: .maxExclusive) ?? false
    }

    public func contains(_ v: Double) -> Bool {
        if minExclusive ? v <= min : v < min { return false }
        if maxExclusive ? v >= max : v > max { return false }
        return true
    }
}

public struct CWAParameters: Sendable, Equatable, Codable {
    public struct MinutesAtAttenuationFilter: Sendable, Equatable, Codable {
        public var attenuationRange: CWARange
        public var dropIfMinutesInRange: CWARange
    }
    public struct TrlFilter: Sendable, Equatable, Codable {
        public var dropIfTrlInRange: CWARange
    }
    public struct MinutesAtAttenuationWeight: Sendable, Equatable, Codable {
        public var attenuationRange: CWARange
        public var weight: Double

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            attenuationRange = try c.decodeIfPresent(CWARange.self, forKey: .attenuationRange) ?? CWARange(min: 0, max: 0)
            weight = try c.decodeIfPresent(Double.self, forKey: .weight) ?? 0
        }
    }
    public struct NormalizedTimeToRiskLevelMapping: Sendable, Equatable, Codable {
        public var normalizedTimeRange: CWARange
        /// 1 low, 2 high (CWA's RiskLevel enum; 0 unspecified).
        public var riskLevel: Int

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            normalizedTimeRange = try c.decodeIfPresent(CWARange.self, forKey: .normalizedTimeRange) ?? CWARange(min: 0, max: 0)
            riskLevel = try c.decodeIfPresent(Int.self, forKey: .riskLevel) ?? 0
        }
    }
    public struct TrlEncoding: Sendable, Equatable, Codable {
        public var infectiousnessOffsetStandard: Int
        public var infectiousnessOffsetHigh: Int
        public var reportTypeOffsetRecursive: Int
        public var reportTypeOffsetSelfReport: Int
        public var reportTypeOffsetConfirmedClinicalDiagnosis: Int
        public var reportTypeOffsetConfirmedTest: Int

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func v(_ k: CodingKeys) throws -> Int { try c.decodeIfPresent(Int.self, forKey: k) ?? 0 }
            infectiousnessOffsetStandard = try v(.infectiousnessOffsetStandard)
            infectiousnessOffsetHigh = try v(.infectiousnessOffsetHigh)
            reportTypeOffsetRecursive = try v(.reportTypeOffsetRecursive)
            reportTypeOffsetSelfReport = try v(.reportTypeOffsetSelfReport)
            reportTypeOffsetConfirmedClinicalDiagnosis = try v(.reportTypeOffsetConfirmedClinicalDiagnosis)
            reportTypeOffsetConfirmedTest = try v(.reportTypeOffsetConfirmedTest)
        }
    }
    public struct TransmissionRiskValueMapping: Sendable, Equatable, Codable {
        public var transmissionRiskLevel: Int
        public var transmissionRiskValue: Double

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            transmissionRiskLevel = try c.decodeIfPresent(Int.self, forKey: .transmissionRiskLevel) ?? 0
            transmissionRiskValue = try c.decodeIfPresent(Double.self, forKey: .transmissionRiskValue) ?? 0
        }
    }

    public var minutesAtAttenuationFilters: [MinutesAtAttenuationFilter]
    public var trlFilters: [TrlFilter]
    public var minutesAtAttenuationWeights: [MinutesAtAttenuationWeight]
    public var normalizedTimePerEWToRiskLevelMapping: [NormalizedTimeToRiskLevelMapping]
    public var normalizedTimePerDayToRiskLevelMapping: [NormalizedTimeToRiskLevelMapping]
    public var trlEncoding: TrlEncoding
    public var transmissionRiskValueMapping: [TransmissionRiskValueMapping]
    /// Windows older than this many days before the calculation day are ignored (CWA's
    /// ExposureWindowsFilter; absent or 0: 14, CWA's default).
    public var maxEncounterAgeInDays: Int

    enum CodingKeys: String, CodingKey {
        case minutesAtAttenuationFilters, trlFilters, minutesAtAttenuationWeights, normalizedTimePerEWToRiskLevelMapping,
             normalizedTimePerDayToRiskLevelMapping, trlEncoding, transmissionRiskValueMapping, maxEncounterAgeInDays
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        minutesAtAttenuationFilters = try c.decodeIfPresent([MinutesAtAttenuationFilter].self, forKey: .minutesAtAttenuationFilters) ?? []
        trlFilters = try c.decodeIfPresent([TrlFilter].self, forKey: .trlFilters) ?? []
        minutesAtAttenuationWeights = try c.decode([MinutesAtAttenuationWeight].self, forKey: .minutesAtAttenuationWeights)
        normalizedTimePerEWToRiskLevelMapping = try c.decode([NormalizedTimeToRiskLevelMapping].self, forKey: .normalizedTimePerEWToRiskLevelMapping)
        normalizedTimePerDayToRiskLevelMapping = try c.decode([NormalizedTimeToRiskLevelMapping].self, forKey: .normalizedTimePerDayToRiskLevelMapping)
        trlEncoding = try c.decode(TrlEncoding.self, forKey: .trlEncoding)
        transmissionRiskValueMapping = try c.decode([TransmissionRiskValueMapping].self, forKey: .transmissionRiskValueMapping)
        let age = try c.decodeIfPresent(Int.self, forKey: .maxEncounterAgeInDays) ?? 0
        maxEncounterAgeInDays = age > 0 ? age : 14
    }

    /// Reads a parameter file: either the parameters object itself or a file that holds it under
    /// `defaultRiskCalculationConfiguration` or `riskCalculationParameters` (the CWA test-case file
    /// and the app configuration's JSON form). Absent fields take protobuf's defaults (0), so the
    /// protobuf JSON of the app configuration reads as the app reads the binary.
    public static func decode(from data: Data, file: String) throws -> CWAParameters {
        struct Keys: Decodable {
            var defaultRiskCalculationConfiguration: Bool?
            var riskCalculationParameters: Bool?
            enum CodingKeys: String, CodingKey { case defaultRiskCalculationConfiguration, riskCalculationParameters }
            init(from decoder: Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                defaultRiskCalculationConfiguration = c.contains(.defaultRiskCalculationConfiguration) ? true : nil
                riskCalculationParameters = c.contains(.riskCalculationParameters) ? true : nil
            }
        }
        struct Wrapped: Decodable {
            var defaultRiskCalculationConfiguration: CWAParameters?
            var riskCalculationParameters: CWAParameters?
        }
        // Decode strictly whichever shape the file has, so errors point into the right object.
        let p: CWAParameters
        if let keys = try? JSONDecoder().decode(Keys.self, from: data),
           keys.defaultRiskCalculationConfiguration != nil || keys.riskCalculationParameters != nil {
            let w = try RiskJSON.decodeParameters(Wrapped.self, from: data, file: file)
            p = (w.defaultRiskCalculationConfiguration ?? w.riskCalculationParameters)!
        } else {
            p = try RiskJSON.decodeParameters(CWAParameters.self, from: data, file: file)
        }
        try p.validate()
        return p
    }

    public func validate() throws {
        for (name, m) in [("normalizedTimePerEWToRiskLevelMapping", normalizedTimePerEWToRiskLevelMapping),
                          ("normalizedTimePerDayToRiskLevelMapping", normalizedTimePerDayToRiskLevelMapping)] {
            if let bad = m.first(where: { !(0...2).contains($0.riskLevel) }) {
                throw RiskError.invalidParameter(name: name, expected: "riskLevel 0 (unspecified), 1 (low) or 2 (high)", actual: "\(bad.riskLevel)")
            }
        }
        if let bad = minutesAtAttenuationWeights.first(where: { !$0.weight.isFinite || $0.weight < 0 }) {
            throw RiskError.invalidParameter(name: "minutesAtAttenuationWeights", expected: "finite weights >= 0", actual: "\(bad.weight)")
        }
    }
}

/// Result of one window (kept for callers that want the details; the CLI prints the aggregate).
public struct CWAWindowResult: Sendable, Equatable {
    public var transmissionRiskLevel: Int
    public var normalizedTime: Double
    public var riskLevel: Int
}

/// The aggregate the app shows: the output contract, dates as YYYY-MM-DD or null.
public struct CWAResult: Sendable, Equatable, Codable {
    public var totalRiskLevel: Int
    public var mostRecentDateWithLowRisk: String?
    public var mostRecentDateWithHighRisk: String?
    public var numberOfDaysWithLowRisk: Int
    public var numberOfDaysWithHighRisk: Int
    public var minimumDistinctEncountersWithLowRisk: Int
    public var minimumDistinctEncountersWithHighRisk: Int

    enum CodingKeys: String, CodingKey {
        case totalRiskLevel, mostRecentDateWithLowRisk, mostRecentDateWithHighRisk, numberOfDaysWithLowRisk,
             numberOfDaysWithHighRisk, minimumDistinctEncountersWithLowRisk, minimumDistinctEncountersWithHighRisk
    }

    /// Writes absent dates as null rather than leaving the key out: the contract lists every key.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(totalRiskLevel, forKey: .totalRiskLevel)
        try c.encode(mostRecentDateWithLowRisk, forKey: .mostRecentDateWithLowRisk)
        try c.encode(mostRecentDateWithHighRisk, forKey: .mostRecentDateWithHighRisk)
        try c.encode(numberOfDaysWithLowRisk, forKey: .numberOfDaysWithLowRisk)
        try c.encode(numberOfDaysWithHighRisk, forKey: .numberOfDaysWithHighRisk)
        try c.encode(minimumDistinctEncountersWithLowRisk, forKey: .minimumDistinctEncountersWithLowRisk)
        try c.encode(minimumDistinctEncountersWithHighRisk, forKey: .minimumDistinctEncountersWithHighRisk)
    }
}

public enum CWARiskCalculation {
    public static let low = 1
    public static let high = 2

    /// Scores one window; nil when a filter drops it or no risk level maps its normalized time.
    public static func window(_ w: ExposureWindow, index: Int, parameters p: CWAParameters) throws -> CWAWindowResult? {
        for f in p.minutesAtAttenuationFilters {
            let seconds = w.scanInstances.filter { f.attenuationRange.contains(Double($0.minAttenuationDb)) }
                .reduce(0) { $0 + max($1.secondsSinceLastScan, 0) }
            if f.dropIfMinutesInRange.contains(Double(seconds) / 60) { return nil }
        }
        let e = p.trlEncoding
        let reportTypeOffset: Int
        switch w.reportType {
        case 1: reportTypeOffset = e.reportTypeOffsetConfirmedTest
        case 2: reportTypeOffset = e.reportTypeOffsetConfirmedClinicalDiagnosis
        case 3: reportTypeOffset = e.reportTypeOffsetSelfReport
        case 4: reportTypeOffset = e.reportTypeOffsetRecursive
        default:
            throw RiskError.invalidWindow(index: index, field: "reportType", expected: "1...4 (CONFIRMED_TEST ... RECURSIVE)", actual: "\(w.reportType)")
        }
        let trl = reportTypeOffset + (w.infectiousness == 2 ? e.infectiousnessOffsetHigh : e.infectiousnessOffsetStandard)
        if p.trlFilters.contains(where: { $0.dropIfTrlInRange.contains(Double(trl)) }) { return nil }
        let trv = p.transmissionRiskValueMapping.first { $0.transmissionRiskLevel == trl }?.transmissionRiskValue ?? 0
        let weightedSeconds = w.scanInstances.reduce(0.0) { acc, s in
            let weight = p.minutesAtAttenuationWeights.first { $0.attenuationRange.contains(Double(s.minAttenuationDb)) }?.weight ?? 0
            return acc + Double(max(s.secondsSinceLastScan, 0)) * weight
        }
        let normalizedTime = trv * weightedSeconds / 60
        guard let level = p.normalizedTimePerEWToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalizedTime) })?.riskLevel
        else { return nil }
        return CWAWindowResult(transmissionRiskLevel: trl, normalizedTime: normalizedTime, riskLevel: level)
    }

    /// The aggregate over all windows. With `today`, windows dated more than maxEncounterAgeInDays
    /// before it are ignored, as the app's ExposureWindowsFilter does.
    public static func aggregate(_ windows: [ExposureWindow], parameters p: CWAParameters, today: UTCDay? = nil) throws -> CWAResult {
        var perDay: [UTCDay: [(ExposureWindow, CWAWindowResult)]] = [:]
        var order: [UTCDay] = []
        for (i, w) in windows.enumerated() {
            if let today, Int(today.rawValue - w.day.rawValue) > p.maxEncounterAgeInDays { continue }
            guard let r = try window(w, index: i, parameters: p) else { continue }
            if perDay[w.day] == nil { order.append(w.day) }
            perDay[w.day, default: []].append((w, r))
        }
        var dayLevels: [(day: UTCDay, level: Int, low: Int, high: Int)] = []
        for day in order {
            let entries = perDay[day]!
            // Summed then rounded to one decimal, half up, so that 8.99999 from binary floating
            // point lands on 9.0 as the app does (CWA EXPOSUREAPP-12211).
            let sum = entries.reduce(0.0) { $0 + $1.1.normalizedTime }
            let normalized = (sum * 10).rounded(.toNearestOrAwayFromZero) / 10
            guard let level = p.normalizedTimePerDayToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalized) })?.riskLevel
            else { continue }
            func distinct(_ level: Int) -> Int {
                Set(entries.filter { $0.1.riskLevel == level }.map { "\($0.1.transmissionRiskLevel)_\($0.0.calibrationConfidence)" }).count
            }
            dayLevels.append((day, level, distinct(low), distinct(high)))
        }
        let lowDays = dayLevels.filter { $0.level == low }
        let highDays = dayLevels.filter { $0.level == high }
        return CWAResult(
            totalRiskLevel: highDays.isEmpty ? low : high,
            mostRecentDateWithLowRisk: lowDays.map(\.day).max()?.isoDate,
            mostRecentDateWithHighRisk: highDays.map(\.day).max()?.isoDate,
            numberOfDaysWithLowRisk: lowDays.count,
            numberOfDaysWithHighRisk: highDays.count,
            minimumDistinctEncountersWithLowRisk: dayLevels.reduce(0) { $0 + $1.low },
            minimumDistinctEncountersWithHighRisk: dayLevels.reduce(0) { $0 + $1.high })
    }
}
