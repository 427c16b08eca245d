import Foundation
import Testing
@testable import ENProtocol
@testable import RiskEngines

/// The Corona-Warn-App's published exposure-window test cases
/// (Fixtures/risk/cwa/exposure-windows-risk-calculation.json): every case, every expected field.
@Suite struct CWARiskTests {
    /// The test-case file's own shape: ages in days instead of dates, short scan-instance names.
    struct CaseFile: Decodable {
        struct Scan: Decodable { var minAttenuation: Int; var typicalAttenuation: Int; var secondsSinceLastScan: Int }
        struct Window: Decodable {
            var ageInDays: Int; var reportType: Int; var infectiousness: Int; var calibrationConfidence: Int
            var scanInstances: [Scan]
        }
        struct Case: Decodable {
            var description: String
            var exposureWindows: [Window]
            var expTotalRiskLevel: Int
            var expAgeOfMostRecentDateWithLowRisk: Int?
            var expAgeOfMostRecentDateWithHighRisk: Int?
            var expNumberOfDaysWithLowRisk: Int
            var expNumberOfDaysWithHighRisk: Int
            var expTotalMinimumDistinctEncountersWithLowRisk: Int
            var expTotalMinimumDistinctEncountersWithHighRisk: Int
        }
        var testCases: [Case]
    }

    static let today = UTCDay(isoDate: "2021-03-01")!

    static func windows(_ c: CaseFile.Case) -> [ExposureWindow] {
        c.exposureWindows.map { w in
            ExposureWindow(dateMillisSinceEpoch: today.advanced(by: -w.ageInDays).millisSinceEpoch, reportType: w.reportType,
                           infectiousness: w.infectiousness, calibrationConfidence: w.calibrationConfidence,
                           scanInstances: w.scanInstances.map {
                               ScanInstance(typicalAttenuationDb: $0.typicalAttenuation, minAttenuationDb: $0.minAttenuation,
                                            secondsSinceLastScan: $0.secondsSinceLastScan)
                           })
        }
    }

    @Test func everyPublishedCasePasses() throws {
        let data = try RiskFixtures.data("cwa/exposure-windows-risk-calculation.json")
        let parameters = try CWAParameters.decode(from: data, file: "exposure-windows-risk-calculation.json")
        let file = try JSONDecoder().decode(CaseFile.self, from: data)
        #expect(file.testCases.count == 29)
        for c in file.testCases {
            let r = try CWARiskCalculation.aggregate(Self.windows(c), parameters: parameters, today: Self.today)
            let date: (Int?) -> String? = { $0.map { Self.today.advanced(by: -$0).isoDate } }
            #expect(r.totalRiskLevel == c.expTotalRiskLevel, "\(c.description)")
            #expect(r.mostRecentDateWithLowRisk == date(c.expAgeOfMostRecentDateWithLowRisk), "\(c.description)")
            #expect(r.mostRecentDateWithHighRisk == date(c.expAgeOfMostRecentDateWithHighRisk), "\(c.description)")
            #expect(r.numberOfDaysWithLowRisk == c.expNumberOfDaysWithLowRisk, "\(c.description)")
            #expect(r.numberOfDaysWithHighRisk == c.expNumberOfDaysWithHighRisk, "\(c.description)")
            #expect(r.minimumDistinctEncountersWithLowRisk == c.expTotalMinimumDistinctEncountersWithLowRisk, "\(c.description)")
            #expect(r.minimumDistinctEncountersWithHighRisk == c.expTotalMinimumDistinctEncountersWithHighRisk, "\(c.description)")
        }
    }

    @Test func filtersOfTheProductionShapeDropWindows() throws {
        // The shape of CWA's production filters: under 10 minutes at 0..<73 dB dropped; TRL 1...2 dropped.
        let data = try RiskFixtures.data("cwa/exposure-windows-risk-calculation.json")
        var p = try CWAParameters.decode(from: data, file: "cases")
        p.minutesAtAttenuationFilters = [.init(attenuationRange: CWARange(min: 0, max: 73, maxExclusive: true),
                                               dropIfMinutesInRange: CWARange(min: 0, max: 10, maxExclusive: true))]
        p.trlFilters = [.init(dropIfTrlInRange: CWARange(min: 1, max: 2))]
        let day = Self.today.advanced(by: -2)
        let short = RiskFixtures.window(day: day, reportType: 1, infectiousness: 2, [(25, 30, 300), (25, 30, 299)])
        #expect(try CWARiskCalculation.window(short, index: 0, parameters: p) == nil)
        let long = RiskFixtures.window(day: day, reportType: 1, infectiousness: 2, [(25, 30, 300), (25, 30, 300)])
        let r = try #require(try CWARiskCalculation.window(long, index: 0, parameters: p))
        #expect(r.transmissionRiskLevel == 8)
        #expect(abs(r.normalizedTime - 1.6 * 0.8 * 10) < 1e-9)
        let recursive = RiskFixtures.window(day: day, reportType: 4, infectiousness: 2, [(25, 30, 300), (25, 30, 300)])
        #expect(try CWARiskCalculation.window(recursive, index: 0, parameters: p) == nil) // TRL 0 + 2 = 2
    }

    @Test func todayIgnoresWindowsOlderThanMaxEncounterAge() throws {
        var p = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation.json"), file: "cases")
        #expect(p.maxEncounterAgeInDays == 14)
        let scans = [(typical: 25, min: 30, seconds: 300), (typical: 25, min: 30, seconds: 300)]
        let edge = RiskFixtures.window(day: Self.today.advanced(by: -14), reportType: 1, infectiousness: 2, scans)
        let old = RiskFixtures.window(day: Self.today.advanced(by: -15), reportType: 1, infectiousness: 2, scans)
        #expect(try CWARiskCalculation.aggregate([edge, old], parameters: p, today: Self.today).numberOfDaysWithHighRisk == 1)
        #expect(try CWARiskCalculation.aggregate([edge, old], parameters: p).numberOfDaysWithHighRisk == 2)
        p.maxEncounterAgeInDays = 10
        #expect(try CWARiskCalculation.aggregate([edge, old], parameters: p, today: Self.today).numberOfDaysWithHighRisk == 0)
    }

    @Test func dayNormalizedTimeIsRoundedToOneDecimal() throws {
        // 7 minutes x 0.8 x 1.6 = 8.96: a low-risk window, but the day rounds to 9.0: high risk.
        let p = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation.json"), file: "cases")
        let w = RiskFixtures.window(day: Self.today.advanced(by: -1), reportType: 1, infectiousness: 2, [(25, 30, 420)])
        #expect(try CWARiskCalculation.window(w, index: 0, parameters: p)?.riskLevel == CWARiskCalculation.low)
        let r = try CWARiskCalculation.aggregate([w], parameters: p, today: Self.today)
        #expect(r.totalRiskLevel == CWARiskCalculation.high)
        #expect(r.minimumDistinctEncountersWithLowRisk == 1 && r.minimumDistinctEncountersWithHighRisk == 0)
    }

    @Test func protobufJSONOfTheAppConfigurationReadsWithDefaults() throws {
        // The CWA app's default configuration as protobuf JSON leaves out zero values.
        let p = try CWAParameters.decode(from: RiskFixtures.data("cwa/default-app-config-risk-parameters.json"), file: "default")
        let cases = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation.json"), file: "cases")
        #expect(p.trlEncoding == cases.trlEncoding)
        #expect(p.transmissionRiskValueMapping == cases.transmissionRiskValueMapping)
        #expect(p.minutesAtAttenuationWeights == cases.minutesAtAttenuationWeights)
        #expect(p.maxEncounterAgeInDays == 10)
    }

    @Test func unknownReportTypeIsASpecificError() throws {
        let p = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation.json"), file: "cases")
        let w = RiskFixtures.window(day: Self.today, reportType: 0, [(50, 50, 300)])
        #expect(throws: RiskError.invalidWindow(index: 3, field: "reportType", expected: "1...4 (CONFIRMED_TEST ... RECURSIVE)", actual: "0")) {
            try CWARiskCalculation.window(w, index: 3, parameters: p)
        }
    }

    @Test func nullDatesAreWrittenAsNull() throws {
        let r = CWAResult(totalRiskLevel: 1, mostRecentDateWithLowRisk: nil, mostRecentDateWithHighRisk: nil,
                          numberOfDaysWithLowRisk: 0, numberOfDaysWithHighRisk: 0,
                          minimumDistinctEncountersWithLowRisk: 0, minimumDistinctEncountersWithHighRisk: 0)
        let json = String(decoding: try RiskJSON.encode(r, pretty: false), as: UTF8.self)
        #expect(json.contains("\"mostRecentDateWithHighRisk\":null"))
        #expect(json.contains("\"mostRecentDateWithLowRisk\":null"))
    }

    @Test func malformedParametersNameTheField() throws {
        let bad = Data(#"{"minutesAtAttenuationWeights": [], "normalizedTimePerEWToRiskLevelMapping": []}"#.utf8)
        #expect(throws: RiskError.malformedParameters(file: "p.json", detail: "normalizedTimePerDayToRiskLevelMapping: missing")) {
            try CWAParameters.decode(from: bad, file: "p.json")
        }
        let wrapped = Data(#"{"riskCalculationParameters": {"minutesAtAttenuationWeights": 3}}"#.utf8)
        #expect(throws: RiskError.malformedParameters(file: "w.json", detail: "riskCalculationParameters.minutesAtAttenuationWeights: expected a JSON array")) {
            try CWAParameters.decode(from: wrapped, file: "w.json")
        }
    }

    /// The three published generations of the test-case file, each with the calculation of its app version.
    @Test(arguments: [("exposure-windows-risk-calculation-1.9.json", CWAGeneration.v1_9, 25),
                      ("exposure-windows-risk-calculation-1.15.json", CWAGeneration.v1_15, 28),
                      ("exposure-windows-risk-calculation.json", CWAGeneration.v2_19, 29)])
    func everyGenerationPassesItsOwnCases(file: String, generation: CWAGeneration, count: Int) throws {
        let data = try RiskFixtures.data("cwa/\(file)")
        let parameters = try CWAParameters.decode(from: data, file: file)
        #expect(CWAGeneration.implied(by: parameters) == (generation == .v1_9 ? .v1_9 : .v2_19))
        let cases = try JSONDecoder().decode(CaseFile.self, from: data)
        #expect(cases.testCases.count == count)
        for c in cases.testCases {
            let r = try CWARiskCalculation.aggregate(Self.windows(c), parameters: parameters, today: Self.today, generation: generation)
            let date: (Int?) -> String? = { $0.map { Self.today.advanced(by: -$0).isoDate } }
            let want = CWAResult(totalRiskLevel: c.expTotalRiskLevel, mostRecentDateWithLowRisk: date(c.expAgeOfMostRecentDateWithLowRisk),
                                 mostRecentDateWithHighRisk: date(c.expAgeOfMostRecentDateWithHighRisk),
                                 numberOfDaysWithLowRisk: c.expNumberOfDaysWithLowRisk, numberOfDaysWithHighRisk: c.expNumberOfDaysWithHighRisk,
                                 minimumDistinctEncountersWithLowRisk: c.expTotalMinimumDistinctEncountersWithLowRisk,
                                 minimumDistinctEncountersWithHighRisk: c.expTotalMinimumDistinctEncountersWithHighRisk)
            #expect(r == want, "\(file): \(c.description)")
        }
    }

    @Test func roundingBelongsToTheGenerationThatIntroducedIt() throws {
        // A 14.983-minute day under a 15-minute HIGH threshold: LOW before CWA 2.19, HIGH since.
        var p = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation-1.15.json"), file: "cases")
        p.minutesAtAttenuationWeights = [.init(attenuationRange: CWARange(min: 0, max: 55, maxExclusive: true), weight: 1)]
        // TRL 8 -> 1.6; 561.875 s x 1.6 / 60 = 14.983 minutes; secondsSinceLastScan is whole, so 0.9986 x 900 s.
        p.transmissionRiskValueMapping = p.transmissionRiskValueMapping.map { var m = $0; if m.transmissionRiskLevel == 8 { m.transmissionRiskValue = 14.983 * 60 / 900 }; return m }
        let w = RiskFixtures.window(day: Self.today.advanced(by: -1), reportType: 1, infectiousness: 2, [(40, 40, 900)])
        #expect(try CWARiskCalculation.aggregate([w], parameters: p, today: Self.today, generation: .v1_15).totalRiskLevel == 1)
        #expect(try CWARiskCalculation.aggregate([w], parameters: p, today: Self.today, generation: .v2_19).totalRiskLevel == 2)
        #expect(CWAGeneration(appVersion: "2.3") == .v1_15 && CWAGeneration(appVersion: "1.12.0") == .v1_9
                && CWAGeneration(appVersion: "3.2") == .v2_19 && CWAGeneration(appVersion: "1.5") == nil)
    }

    @Test func theMultiplierGenerationReadsWithoutAValueMapping() throws {
        let p = try CWAParameters.decode(from: RiskFixtures.data("cwa/exposure-windows-risk-calculation-1.9.json"), file: "cases")
        #expect(p.transmissionRiskLevelMultiplier == 0.2 && p.transmissionRiskValueMapping.isEmpty)
        let w = RiskFixtures.window(day: Self.today.advanced(by: -1), reportType: 1, infectiousness: 2, [(40, 40, 600), (40, 40, 300)])
        let r = try #require(try CWARiskCalculation.window(w, index: 0, parameters: p, generation: .v1_9))
        #expect(r.transmissionRiskLevel == 8 && abs(r.normalizedTime - 8 * 0.2 * 15) < 1e-9)
    }
}
