import Foundation
@testable import ENProtocol
@testable import RiskEngines

/// Reads the risk fixtures shipped in the test bundle (Fixtures/risk, see its README).
enum RiskFixtures {
    static func url(_ path: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent("Fixtures/risk").appendingPathComponent(path)
    }

    static func data(_ path: String) throws -> Data { try Data(contentsOf: url(path)) }

    static func window(day: UTCDay, reportType: Int = 1, infectiousness: Int = 1, calibrationConfidence: Int = 0,
                       trl: Int? = nil, _ scans: [(typical: Int, min: Int, seconds: Int)]) -> ExposureWindow {
        ExposureWindow(dateMillisSinceEpoch: day.millisSinceEpoch, reportType: reportType, infectiousness: infectiousness,
                       calibrationConfidence: calibrationConfidence,
                       scanInstances: scans.map { ScanInstance(typicalAttenuationDb: $0.typical, minAttenuationDb: $0.min, secondsSinceLastScan: $0.seconds) },
                       transmissionRiskLevel: trl)
    }
}
