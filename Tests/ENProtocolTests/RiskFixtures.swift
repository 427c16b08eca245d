import Foundation
@testable import ENProtocol

/// Exposure windows built in a line, for the framework's summaries.
enum RiskFixtures {
    static func window(day: UTCDay, reportType: Int = 1, infectiousness: Int = 1, calibrationConfidence: Int = 0,
                       trl: Int? = nil, _ scans: [(typical: Int, min: Int, seconds: Int)]) -> ExposureWindow {
        ExposureWindow(dateMillisSinceEpoch: day.millisSinceEpoch, reportType: reportType, infectiousness: infectiousness,
                       calibrationConfidence: calibrationConfidence,
                       scanInstances: scans.map { ScanInstance(typicalAttenuationDb: $0.typical, minAttenuationDb: $0.min, secondsSinceLastScan: $0.seconds) },
                       transmissionRiskLevel: trl)
    }
}
