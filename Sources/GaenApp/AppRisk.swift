import ENProtocol
import Foundation
import KeyDistribution
import RiskEngines

/// The risk the configuration's engine gives for gaend's exposure windows: the same engines
/// and parameter files as `gaenctl risk ENGINE`.
public enum AppRisk {
    /// `windows`: the windows as JSON in the Android API shape (GetExposureWindows, `gaenctl windows --json`).
    public static func evaluate(_ configuration: AppConfiguration, windows: Data, today: UTCDay, at time: Int64) throws -> RiskRecord {
        let parsed = try RiskJSON.decodeWindows(from: windows)
        let high: Bool
        let detail: Data
        let file = "the app configuration's parameters"
        switch configuration.riskEngine {
        case "cwa":
            let p = try CWAParameters.decode(from: configuration.parameters, file: file)
            let r = try CWARiskCalculation.evaluate(parsed, parameters: p, today: today).result
            high = r.totalRiskLevel == 2
            detail = try RiskJSON.encode(r, pretty: false)
        case "nhs":
            let c = try RiskJSON.decodeParameters(NHSExposureConfiguration.self, from: configuration.parameters, file: file)
            let r = try NHSRiskCalculation.calculate(parsed, configuration: c)
            high = r.crossesThreshold
            detail = try RiskJSON.encode(r, pretty: false)
        case "swisscovid":
            let c = try RiskJSON.decodeParameters(SwissCovidConfiguration.self, from: configuration.parameters, file: file)
            let r = try SwissCovidRisk.calculate(parsed, configuration: c)
            high = r.exposed
            detail = try RiskJSON.encode(r, pretty: false)
        case "immuni":
            let c = try ImmuniConfiguration.decode(from: configuration.parameters, file: file)
            let r = try ImmuniRisk.calculate(parsed, configuration: c, today: today)
            high = r.notified
            detail = try RiskJSON.encode(r, pretty: false)
        default:
            throw AppError.configuration("unknown risk engine '\(configuration.riskEngine)'")
        }
        return RiskRecord(computedAt: time, engine: configuration.riskEngine, level: high ? "high" : "low", windows: parsed.count,
                          detail: String(decoding: detail, as: UTF8.self))
    }
}
