import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import KeyDistribution
import RiskEngines

/// The risk the configuration's engine gives for gaend's exposure windows: the engine found in
/// the registry by the configuration's name, with its parameters, as `gaenctl risk` runs it.
public enum AppRisk {
    /// `windows`: the windows as JSON in the Android API shape (GetExposureWindows, `gaenctl windows --json`).
    public static func evaluate(_ configuration: AppConfiguration, windows: Data, today: UTCDay, at time: Int64) throws -> RiskRecord {
        guard let engine = RiskEngineRegistry.named(configuration.riskEngine), engine.servesApps else {
            throw AppError.configuration("unknown risk engine '\(configuration.riskEngine)' (one of \(RiskEngineRegistry.appEngineNames.joined(separator: ", ")))")
        }
        let parsed = try WindowsFile.parse(windows)
        let rule = try engine.rule(parameters: configuration.parameters, source: "the app configuration's parameters", dated: nil, options: RiskRuleOptions()).rule
        let assessment = try rule.assess(parsed, today: today, withDetail: true)
        return RiskRecord(computedAt: time, engine: configuration.riskEngine, level: assessment.notified ? "high" : "low", windows: parsed.count,
                          detail: String(decoding: assessment.detail, as: UTF8.self))
    }
}
