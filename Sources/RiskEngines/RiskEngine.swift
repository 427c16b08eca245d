#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// What a rule decided for one set of exposure windows: notified or not, the numbers it decided
/// on (the value and the threshold it was held against, in the engine's own terms), why the
/// verdict may not be the app's when the input lacks something the rule weighs, and the
/// engine's own result as JSON (what `gaenctl risk ENGINE` prints, kept in the app's status).
public struct RiskAssessment: Sendable {
    public var notified: Bool
    public var numbers: [(name: String, value: Double)]
    public var unjudged: String?
    /// Empty unless asked for (`withDetail`): replaying thousands of contacts needs only the verdict.
    public var detail: Data

    public init(notified: Bool, numbers: [(name: String, value: Double)], unjudged: String? = nil, detail: Data = Data()) {
        self.notified = notified; self.numbers = numbers; self.unjudged = unjudged; self.detail = detail
    }
}

/// One engine's parameters, parsed and checked once, applied to any number of window sets.
public protocol RiskRule: Sendable {
    /// `today`: the day the app computes on (windows' ages count back from it).
    func assess(_ windows: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment
}

/// A national app's risk engine (or the framework's own v1 scoring): what every consumer needs
/// to find it by name and run it. The app half (its configuration names the engine), the
/// publisher (which checks a configuration before signing it), `gaenctl trial replay` and
/// `gaenctl risk engines` all read `RiskEngineRegistry`; adding an engine is its file and one
/// line there.
public protocol RiskEngine: Sendable {
    /// The name in app configurations and replay rules (`cwa`, `nhs`, ...).
    var name: String { get }
    /// One line for listings.
    var title: String { get }
    /// Whether an app shipped it, so that an app configuration may name it (the framework's
    /// v1 scoring and the CWA's first calculation are for replaying trials only).
    var servesApps: Bool { get }
    /// The configuration the app published (JSON in the engine's parameter shape), nil when none.
    var publishedParameters: Data? { get }
    /// The dated history of its published configurations, when it is known (PublishedRiskConfigurations).
    var datedRule: PublishedRiskConfigurations.DatedRule? { get }
    /// Parses and checks parameters (JSON, or a published text format the engine reads);
    /// `source` names them in errors. `dated`: the published entry they came from, when chosen
    /// by date (its calculation generation applies). `options`: what a replay states beyond the
    /// file (the app and the publisher use the defaults: unknown fields are errors). Returns the
    /// rule and what its configuration means for its verdicts: unknown fields left out (when
    /// allowed), a configuration under which no one could be notified (ConfigurationReach).
    func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
              options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String])
}

/// What a replay states beyond the configuration file.
public struct RiskRuleOptions: Sendable {
    /// Unknown fields and keys are warnings instead of errors.
    public var allowUnknownFields = false
    /// How a v1 score (gaen-v1, immuni) rounds an exposure's duration (GAENv1DurationRounding).
    public var durationRounding: GAENv1DurationRounding = .nearest
    public init(allowUnknownFields: Bool = false, durationRounding: GAENv1DurationRounding = .nearest) {
        self.allowUnknownFields = allowUnknownFields; self.durationRounding = durationRounding
    }
}

extension RiskEngine {
    public var datedRule: PublishedRiskConfigurations.DatedRule? { nil }
    public var servesApps: Bool { true }
}

/// Every engine, in the order listings show them.
public enum RiskEngineRegistry {
    public static let engines: [any RiskEngine] = [
        CWAEngine(),
        CWAv1Engine(),
        NHSEngine(),
        GAENv1Engine(),
        SwissCovidEngine(),
        ImmuniEngine(),
    ]

    public static func named(_ name: String) -> (any RiskEngine)? { engines.first { $0.name == name } }

    public static var names: [String] { engines.map(\.name) }

    /// The engines an app configuration may name.
    public static var appEngineNames: [String] { engines.filter(\.servesApps).map(\.name) }
}

/// Windows in the framework's integer shape, for the engines that take whole dB and seconds.
func integerWindows(_ windows: [WindowsFileEntry]) throws -> [ExposureWindow] { try windows.map { try $0.exposureWindow() } }

/// Windows without a transmission risk level: the v1 scores multiply by the level's value; a
/// window without one (and no defaultTransmissionRiskLevel) scores as level 0, a value of 1
/// (the framework's INVALID), which is not what the app saw unless every level's value is 1.
func unjudgedTransmissionRisk(_ windows: [WindowsFileEntry], _ v1: GAENv1Configuration) -> String? {
    guard v1.defaultTransmissionRiskLevel == nil, windows.contains(where: { $0.transmissionRiskLevel == nil }),
          !v1.transmissionRiskLevelValues.allSatisfy({ $0 == 1 }) else { return nil }
    return "windows without a transmission risk level (scored as level 0, a value of 1)"
}

/// The framework's v1 scoring (attenuation, days, duration and transmission buckets): no app
/// shipped it as such; trials replay it with a configuration of their own.
public struct GAENv1Engine: RiskEngine {
    public init() {}
    public let name = "gaen-v1"
    public let title = "Exposure Notification framework v1 risk score (ExposureConfiguration)"
    public let servesApps = false
    public var publishedParameters: Data? { nil }

    struct Rule: RiskRule {
        let p: GAENv1Configuration
        var rounding: GAENv1DurationRounding = .nearest
        func assess(_ entries: [WindowsFileEntry], today: UTCDay, withDetail: Bool) throws -> RiskAssessment {
            let scored = try integerWindows(entries).enumerated().map { i, w in
                try GAENv1.score(w, index: i, configuration: p, today: today, durationRounding: rounding)
            }
            let best = scored.max { $0.riskScore < $1.riskScore }
            // A contact never heard has no attenuation: NaN, printed as NA (not 0 dB, the closest there is).
            return RiskAssessment(notified: scored.contains { $0.counted && $0.riskScore > 0 },
                                  numbers: [("maximumRiskScore", Double(best?.riskScore ?? 0)), ("minimumRiskScore", Double(p.minimumRiskScore)),
                                            ("attenuationDb", best.map { Double($0.attenuationDb) } ?? .nan), ("durationMinutes", best?.durationMinutes ?? 0)],
                                  unjudged: unjudgedTransmissionRisk(entries, p),
                                  detail: withDetail ? try RiskJSON.encode(scored, pretty: false) : Data())
        }
    }

    public func rule(parameters: Data, source: String, dated: PublishedRiskConfigurations.Dated?,
                     options: RiskRuleOptions) throws -> (rule: any RiskRule, warnings: [String]) {
        let (p, warnings) = try ConfigurationText.decodeJSON(GAENv1Configuration.self, parameters, known: ConfigurationText.gaenV1Keys,
                                                             file: source, allowUnknownFields: options.allowUnknownFields)
        try p.validate()
        return (Rule(p: p, rounding: options.durationRounding),
                warnings + ConfigurationReach.warnings(v1: p, threshold: max(p.minimumRiskScore, 1), thresholdName: "minimumRiskScore"))
    }
}
