import Foundation
import Testing
@testable import ENProtocol
@testable import RiskEngines

/// The original Corona-Warn-App method and its worked example (Betty, Anton and Aisha),
/// on both days. Fixtures/risk/cwa-v1 holds the configuration and the two windows files.
@Suite struct CWAv1RiskTests {
    static func configuration() throws -> CWAv1Configuration {
        try RiskJSON.decodeParameters(CWAv1Configuration.self, from: RiskFixtures.data("cwa-v1/configuration.json"), file: "configuration.json")
    }

    static func windows(_ name: String) throws -> [ExposureWindow] {
        try RiskJSON.decodeWindows(from: RiskFixtures.data("cwa-v1/\(name)"))
    }

    @Test func workedExampleOnThe21stWithAntonsKeys() throws {
        let r = try CWAv1RiskCalculation.calculate(Self.windows("windows-2020-09-21.json"), configuration: Self.configuration(),
                                                   today: UTCDay(isoDate: "2020-09-21")!)
        // 1 x 1 x 5 x 8 = 40; 20 minutes x 40 / 25 = 32 minutes.
        #expect(r.maximumRiskScore == 40)
        #expect(abs(r.weightedMinutes - 32) < 1e-9)
        #expect(r.increasedRisk)
        #expect(r.riskEncounters == 1)
        #expect(r.daysSinceLastRiskEncounter == 5)
    }

    @Test func workedExampleOnThe22ndWithAishasKeysToo() throws {
        let windows = try Self.windows("windows-2020-09-22.json")
        let c = try Self.configuration()
        let today = UTCDay(isoDate: "2020-09-22")!
        // Aisha's exposures on their own: the 16th scores 25 (a risk encounter), the 9th scores 5 (not one).
        #expect(try GAENv1.score(windows[1], index: 1, configuration: c.v1, today: today).riskScore == 25)
        let ninth = try GAENv1.score(windows[2], index: 2, configuration: c.v1, today: today)
        #expect(ninth.riskScore == 5 && !ninth.counted)
        let r = try CWAv1RiskCalculation.calculate(windows, configuration: c, today: today)
        // (20 + 20 / 2) minutes x 40 / 25 = 48 minutes.
        #expect(r.maximumRiskScore == 40)
        #expect(abs(r.weightedMinutes - 48) < 1e-9)
        #expect(r.increasedRisk)
        #expect(r.riskEncounters == 2)
        #expect(r.daysSinceLastRiskEncounter == 6)
    }

    @Test func shortOrDistantExposuresAreDiscardedAndOldOnesForgotten() throws {
        let c = try Self.configuration()
        let today = UTCDay(isoDate: "2020-09-22")!
        let nine = RiskFixtures.window(day: today.advanced(by: -1), trl: 8, [(50, 50, 300), (50, 50, 120)]) // 7 min -> 5
        let far = RiskFixtures.window(day: today.advanced(by: -1), trl: 8, [(74, 70, 600), (74, 70, 600)])
        let old = RiskFixtures.window(day: today.advanced(by: -15), trl: 8, [(50, 50, 600), (50, 50, 600)])
        let r = try CWAv1RiskCalculation.calculate([nine, far, old], configuration: c, today: today)
        #expect(r == CWAv1Result(increasedRisk: false, weightedMinutes: 0, riskEncounters: 0, daysSinceLastRiskEncounter: nil, maximumRiskScore: 0))
        let json = String(decoding: try RiskJSON.encode(r, pretty: false), as: UTF8.self)
        #expect(json.contains("\"daysSinceLastRiskEncounter\":null"))
    }

    @Test func justUnderFifteenMinutesIsNotIncreasedRisk() throws {
        // Score 1 x 5 x 1 x 5 = 25 over 14 minutes at < 55 dB: 14 x 25 / 25 = 14 minutes.
        let c = try Self.configuration()
        let today = UTCDay(isoDate: "2020-09-22")!
        let w = RiskFixtures.window(day: today, trl: 5, [(50, 50, 420), (50, 50, 420)])
        let r = try CWAv1RiskCalculation.calculate([w], configuration: c, today: today)
        #expect(r.riskEncounters == 1 && abs(r.weightedMinutes - 14) < 1e-9 && !r.increasedRisk)
    }

    @Test func aWindowWithoutTransmissionRiskLevelScoresAsInvalid() throws {
        // The framework scores an INVALID level with 1: 1 x 5 x 1 x 1 = 5, below 11: no risk encounter.
        let today = UTCDay(isoDate: "2020-09-22")!
        let w = RiskFixtures.window(day: today, [(50, 50, 900), (50, 50, 300)])
        let r = try CWAv1RiskCalculation.calculate([w], configuration: Self.configuration(), today: today)
        #expect(r.riskEncounters == 0 && !r.increasedRisk)
    }

    @Test func attenuationDurationBucketsCountTheThresholdAsAbove() throws {
        // 55 dB is not "below 55": it counts half; 63 dB counts nothing.
        let w = RiskFixtures.window(day: UTCDay(0), [(54, 50, 60), (55, 50, 120), (62, 60, 180), (63, 60, 240)])
        #expect(GAENv1.attenuationDurations(w, thresholds: [55, 63]) == [60, 300, 240])
    }
}
