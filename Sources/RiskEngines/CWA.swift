#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

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
    /// An absent range reads as protobuf's default ([0, 0]), as the app reads a served
    /// configuration whose filter lacks one (cwa-server's file of 2020-11-11 did).
    public struct MinutesAtAttenuationFilter: Sendable, Equatable, Codable {
        public var attenuationRange: CWARange
        public var dropIfMinutesInRange: CWARange

        public init(attenuationRange: CWARange, dropIfMinutesInRange: CWARange) {
            self.attenuationRange = attenuationRange; self.dropIfMinutesInRange = dropIfMinutesInRange
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            attenuationRange = try c.decodeIfPresent(CWARange.self, forKey: .attenuationRange) ?? CWARange(min: 0, max: 0)
            dropIfMinutesInRange = try c.decodeIfPresent(CWARange.self, forKey: .dropIfMinutesInRange) ?? CWARange(min: 0, max: 0)
        }
    }
    public struct TrlFilter: Sendable, Equatable, Codable {
        public var dropIfTrlInRange: CWARange

        public init(dropIfTrlInRange: CWARange) { self.dropIfTrlInRange = dropIfTrlInRange }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            dropIfTrlInRange = try c.decodeIfPresent(CWARange.self, forKey: .dropIfTrlInRange) ?? CWARange(min: 0, max: 0)
        }
    }
    public struct MinutesAtAttenuationWeight: Sendable, Equatable, Codable {
        public var attenuationRange: CWARange
        public var weight: Double

        public init(attenuationRange: CWARange, weight: Double) { self.attenuationRange = attenuationRange; self.weight = weight }

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
    /// CWA 1.9-1.14 configurations: transmission risk value = TRL x this multiplier, instead of
    /// `transmissionRiskValueMapping` (which CWA 1.15 introduced, EXPOSUREAPP-5217).
    public var transmissionRiskLevelMultiplier: Double?
    /// Windows older than this many days before the calculation day are ignored (CWA's
    /// ExposureWindowsFilter; absent or 0: 14, CWA's default).
    public var maxEncounterAgeInDays: Int

    enum CodingKeys: String, CodingKey {
        case minutesAtAttenuationFilters, trlFilters, minutesAtAttenuationWeights, normalizedTimePerEWToRiskLevelMapping,
             normalizedTimePerDayToRiskLevelMapping, trlEncoding, transmissionRiskValueMapping, maxEncounterAgeInDays,
             transmissionRiskLevelMultiplier
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        minutesAtAttenuationFilters = try c.decodeIfPresent([MinutesAtAttenuationFilter].self, forKey: .minutesAtAttenuationFilters) ?? []
        trlFilters = try c.decodeIfPresent([TrlFilter].self, forKey: .trlFilters) ?? []
        minutesAtAttenuationWeights = try c.decode([MinutesAtAttenuationWeight].self, forKey: .minutesAtAttenuationWeights)
        normalizedTimePerEWToRiskLevelMapping = try c.decode([NormalizedTimeToRiskLevelMapping].self, forKey: .normalizedTimePerEWToRiskLevelMapping)
        normalizedTimePerDayToRiskLevelMapping = try c.decode([NormalizedTimeToRiskLevelMapping].self, forKey: .normalizedTimePerDayToRiskLevelMapping)
        trlEncoding = try c.decode(TrlEncoding.self, forKey: .trlEncoding)
        transmissionRiskLevelMultiplier = try c.decodeIfPresent(Double.self, forKey: .transmissionRiskLevelMultiplier)
        if transmissionRiskLevelMultiplier == nil || c.contains(.transmissionRiskValueMapping) {
            transmissionRiskValueMapping = try c.decode([TransmissionRiskValueMapping].self, forKey: .transmissionRiskValueMapping)
        } else {
            transmissionRiskValueMapping = []
        }
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
        if let m = transmissionRiskLevelMultiplier, !m.isFinite || m < 0 {
            throw RiskError.invalidParameter(name: "transmissionRiskLevelMultiplier", expected: "a finite number >= 0", actual: "\(m)")
        }
        if let bad = minutesAtAttenuationWeights.first(where: { !$0.weight.isFinite || $0.weight < 0 }) {
            throw RiskError.invalidParameter(name: "minutesAtAttenuationWeights", expected: "finite weights >= 0", actual: "\(bad.weight)")
        }
    }
}

/// The published generations of the CWA risk calculation on exposure windows, by the app
/// version that introduced them (cwa-app-android history of
/// Corona-Warn-App/src/test/resources/exposure-windows-risk-calculation.json):
/// - 1.9 (Dec 2020): transmission risk value = TRL x `transmissionRiskLevelMultiplier`; a window
///   or day whose normalized time no mapping covers stops the calculation with an error.
/// - 1.15 (Mar 2021, EXPOSUREAPP-5217): `transmissionRiskValueMapping`; such windows and days are
///   dropped instead.
/// - 2.19 (Mar 2022, EXPOSUREAPP-12211): the day's normalized time is rounded to one decimal
///   before it is mapped (a 14.983-minute day was LOW before, HIGH since).
public enum CWAGeneration: String, Sendable, CaseIterable, Codable {
    case v1_9 = "1.9"
    case v1_15 = "1.15"
    case v2_19 = "2.19"

    public static let current = CWAGeneration.v2_19

    /// The generation in force in an app version such as "2.3" or "1.12.0".
    public init?(appVersion: String) {
        let parts = appVersion.split(separator: ".").map { Int($0) }
        guard parts.count >= 2, parts.count <= 3, parts.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        let v = (parts[0]!, parts[1]!)
        if v < (1, 9) { return nil }
        self = v < (1, 15) ? .v1_9 : (v < (2, 19) ? .v1_15 : .v2_19)
    }

    var roundsDailyNormalizedTime: Bool { self == .v2_19 }
    var unmappedIsError: Bool { self == .v1_9 }

    /// The generation a parameter file belongs to when none is chosen: a file with only the
    /// TRL multiplier is a 1.9-1.14 file; anything else the current app's.
    public static func implied(by p: CWAParameters) -> CWAGeneration {
        p.transmissionRiskLevelMultiplier != nil && p.transmissionRiskValueMapping.isEmpty ? .v1_9 : current
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

/// What the engine made of one window (`gaenctl risk cwa --per-window`).
public struct CWAWindowVerdict: Sendable, Equatable, Codable {
    public var index: Int
    public var date: String
    /// Why the window does not count: "older than maxEncounterAgeInDays", "minutesAtAttenuationFilter",
    /// "trlFilter", "no risk level for its normalized time"; nil when it counts.
    public var dropped: String?
    public var transmissionRiskLevel: Int?
    public var transmissionRiskValue: Double?
    public var normalizedTime: Double?
    public var riskLevel: Int?

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(index, forKey: .index)
        try c.encode(date, forKey: .date)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(transmissionRiskLevel, forKey: .transmissionRiskLevel)
        try c.encode(transmissionRiskValue, forKey: .transmissionRiskValue)
        try c.encode(normalizedTime, forKey: .normalizedTime)
        try c.encode(riskLevel, forKey: .riskLevel)
    }
}

/// One day's aggregate: the summed (and, from CWA 2.19, rounded) normalized time and its level.
public struct CWADayVerdict: Sendable, Equatable, Codable {
    public var date: String
    public var normalizedTime: Double
    /// 1 low, 2 high; nil when no mapping covers the day's normalized time (the day does not count).
    public var riskLevel: Int?

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(date, forKey: .date)
        try c.encode(normalizedTime, forKey: .normalizedTime)
        try c.encode(riskLevel, forKey: .riskLevel)
    }
}

public enum CWARiskCalculation {
    public static let low = 1
    public static let high = 2

    /// Scores one window; nil when a filter drops it or no risk level maps its normalized time.
    public static func window(_ w: ExposureWindow, index: Int, parameters p: CWAParameters,
                              generation: CWAGeneration = .current) throws -> CWAWindowResult? {
        let v = try verdict(w, index: index, parameters: p, generation: generation)
        guard v.dropped == nil, let trl = v.transmissionRiskLevel, let t = v.normalizedTime, let level = v.riskLevel else { return nil }
        return CWAWindowResult(transmissionRiskLevel: trl, normalizedTime: t, riskLevel: level)
    }

    static func verdict(_ w: ExposureWindow, index: Int, parameters p: CWAParameters, generation: CWAGeneration) throws -> CWAWindowVerdict {
        var v = CWAWindowVerdict(index: index, date: w.day.isoDate)
        for f in p.minutesAtAttenuationFilters {
            let seconds = w.scanInstances.filter { f.attenuationRange.contains(Double($0.minAttenuationDb)) }
                .reduce(0) { $0 + max($1.secondsSinceLastScan, 0) }
            if f.dropIfMinutesInRange.contains(Double(seconds) / 60) { v.dropped = "minutesAtAttenuationFilter"; return v }
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
        v.transmissionRiskLevel = trl
        if p.trlFilters.contains(where: { $0.dropIfTrlInRange.contains(Double(trl)) }) { v.dropped = "trlFilter"; return v }
        let trv: Double
        if p.transmissionRiskValueMapping.isEmpty, let m = p.transmissionRiskLevelMultiplier {
            trv = Double(trl) * m
        } else {
            trv = p.transmissionRiskValueMapping.first { $0.transmissionRiskLevel == trl }?.transmissionRiskValue ?? 0
        }
        v.transmissionRiskValue = trv
        let weightedSeconds = w.scanInstances.reduce(0.0) { acc, s in
            let weight = p.minutesAtAttenuationWeights.first { $0.attenuationRange.contains(Double(s.minAttenuationDb)) }?.weight ?? 0
            return acc + Double(max(s.secondsSinceLastScan, 0)) * weight
        }
        let normalizedTime = trv * weightedSeconds / 60
        v.normalizedTime = normalizedTime
        guard let level = p.normalizedTimePerEWToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalizedTime) })?.riskLevel
        else {
            if generation.unmappedIsError {
                throw RiskError.invalidWindow(index: index, field: "normalizedTime", expected: "a value normalizedTimePerEWToRiskLevelMapping maps (CWA 1.9-1.14 stop the calculation here)",
                                              actual: "\(normalizedTime)")
            }
            v.dropped = "no risk level for its normalized time"
            return v
        }
        v.riskLevel = level
        return v
    }

    /// The aggregate over all windows. With `today`, windows dated more than maxEncounterAgeInDays
    /// before it are ignored, as the app's ExposureWindowsFilter does.
    public static func aggregate(_ windows: [ExposureWindow], parameters p: CWAParameters, today: UTCDay? = nil,
                                 generation: CWAGeneration? = nil) throws -> CWAResult {
        try evaluate(windows, parameters: p, today: today, generation: generation).result
    }

    /// The aggregate with the verdict on every window and day.
    public static func evaluate(_ windows: [ExposureWindow], parameters p: CWAParameters, today: UTCDay? = nil,
                                generation: CWAGeneration? = nil)
        throws -> (result: CWAResult, windows: [CWAWindowVerdict], days: [CWADayVerdict]) {
        let generation = generation ?? .implied(by: p)
        var perDay: [UTCDay: [(ExposureWindow, CWAWindowVerdict)]] = [:]
        var order: [UTCDay] = []
        var verdicts: [CWAWindowVerdict] = []
        for (i, w) in windows.enumerated() {
            if let today, Int(today.rawValue - w.day.rawValue) > p.maxEncounterAgeInDays {
                verdicts.append(CWAWindowVerdict(index: i, date: w.day.isoDate, dropped: "older than maxEncounterAgeInDays"))
                continue
            }
            let v = try verdict(w, index: i, parameters: p, generation: generation)
            verdicts.append(v)
            guard v.dropped == nil else { continue }
            if perDay[w.day] == nil { order.append(w.day) }
            perDay[w.day, default: []].append((w, v))
        }
        var dayLevels: [(day: UTCDay, level: Int, low: Int, high: Int)] = []
        var days: [CWADayVerdict] = []
        for day in order {
            let entries = perDay[day]!
            var normalized = entries.reduce(0.0) { $0 + $1.1.normalizedTime! }
            if generation.roundsDailyNormalizedTime {
                // Rounded to one decimal, half up, so that 8.99999 from binary floating point
                // lands on 9.0 as the app does since 2.19 (EXPOSUREAPP-12211).
                normalized = (normalized * 10).rounded(.toNearestOrAwayFromZero) / 10
            }
            let level = p.normalizedTimePerDayToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalized) })?.riskLevel
            days.append(CWADayVerdict(date: day.isoDate, normalizedTime: normalized, riskLevel: level))
            guard let level else {
                if generation.unmappedIsError {
                    throw RiskError.invalidParameter(name: "normalizedTimePerDayToRiskLevelMapping",
                                                     expected: "a range covering day \(day.isoDate)'s normalized time (CWA 1.9-1.14 stop the calculation here)",
                                                     actual: "\(normalized)")
                }
                continue
            }
            func distinct(_ level: Int) -> Int {
                Set(entries.filter { $0.1.riskLevel == level }.map { "\($0.1.transmissionRiskLevel!)_\($0.0.calibrationConfidence)" }).count
            }
            dayLevels.append((day, level, distinct(low), distinct(high)))
        }
        let lowDays = dayLevels.filter { $0.level == low }
        let highDays = dayLevels.filter { $0.level == high }
        let result = CWAResult(
            totalRiskLevel: highDays.isEmpty ? low : high,
            mostRecentDateWithLowRisk: lowDays.map(\.day).max()?.isoDate,
            mostRecentDateWithHighRisk: highDays.map(\.day).max()?.isoDate,
            numberOfDaysWithLowRisk: lowDays.count,
            numberOfDaysWithHighRisk: highDays.count,
            minimumDistinctEncountersWithLowRisk: dayLevels.reduce(0) { $0 + $1.low },
            minimumDistinctEncountersWithHighRisk: dayLevels.reduce(0) { $0 + $1.high })
        return (result, verdicts, days)
    }
}

/// The Corona-Warn-App's exposure-window calculation (CWA 1.9 and later) in the registry.
public struct CWAEngine: RiskEngine {
    public init() {}
    public let name = "cwa"
    public let title = "Corona-Warn-App exposure-window risk calculation (CWA 1.9+, every generation)"
    public var publishedParameters: Data? { Data(PublishedRiskConfigurations.cwa.utf8) }
    public var datedRule: PublishedRiskConfigurations.DatedRule? { .cwa }

    struct Rule: RiskRule {
        let p: CWAParameters
        let generation: CWAGeneration?
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let e = try CWARiskCalculation.evaluate(integerWindows(entries), parameters: p, today: today, generation: generation)
            let day = e.days.max { $0.normalizedTime < $1.normalizedTime }
            return RiskAssessment(notified: e.result.totalRiskLevel == CWARiskCalculation.high,
                                  numbers: [("normalizedTimePerDay", day?.normalizedTime ?? 0), ("totalRiskLevel", Double(e.result.totalRiskLevel)),
                                            ("droppedWindows", Double(e.windows.filter { $0.dropped != nil }.count))],
                                  detail: withDetail ? try RiskJSON.encode(e.result, pretty: false) : Data())
        }
    }

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        let p = try CWAParameters.decode(from: ConfigurationText.strippingCommentLines(parameters), file: source)
        // A dated entry is judged with the calculation of the apps that read it.
        return (Rule(p: p, generation: dated?.generation), ConfigurationReach.warnings(cwa: p))
    }
}
