import Foundation
import Testing
@testable import ENProtocol

/// DailySummaries and the v1 summary against hand-computed cases.
@Suite struct SummariesTests {
    static let config = DailySummariesConfig(
        attenuationBucketThresholdDb: [55, 63, 70], attenuationBucketWeights: [1.0, 0.5, 0.25, 0.0],
        reportTypeWeights: [0, 1.0, 0.8, 0.5, 0.2, 0], infectiousnessWeights: [0, 1.0, 2.0],
        minimumWindowScore: 100, daysSinceExposureThreshold: 0)
    static let day = UTCDay(isoDate: "2021-02-01")!

    @Test func windowScoreWeighsBucketsReportTypeAndInfectiousness() {
        // 300 s at 50 dB (x1.0) + 300 s at 60 dB (x0.5) + 200 s at 66 dB (x0.25) + 300 s at 80 dB (x0)
        // = 300 + 150 + 50 = 500 weighted seconds; CONFIRMED_CLINICAL_DIAGNOSIS 0.8 x HIGH 2.0 -> 800.
        let w = RiskFixtures.window(day: Self.day, reportType: 2, infectiousness: 2,
                                    [(50, 48, 300), (60, 58, 300), (66, 60, 200), (80, 70, 300)])
        let (score, weighted) = DailySummaries.windowScore(w, config: Self.config)
        #expect(weighted == 500)
        #expect(abs(score - 800) < 1e-9)
    }

    @Test func bucketEdgesAreInclusive() {
        #expect(Self.config.bucketWeight(attenuationDb: 55) == 1.0)
        #expect(Self.config.bucketWeight(attenuationDb: 56) == 0.5)
        #expect(Self.config.bucketWeight(attenuationDb: 63) == 0.5)
        #expect(Self.config.bucketWeight(attenuationDb: 70) == 0.25)
        #expect(Self.config.bucketWeight(attenuationDb: 71) == 0.0)
    }

    @Test func dailySummariesPerDayAndReportType() throws {
        let test = RiskFixtures.window(day: Self.day, reportType: 1, infectiousness: 1, [(50, 50, 300), (50, 50, 300)]) // 600
        let clinical = RiskFixtures.window(day: Self.day, reportType: 2, infectiousness: 2, [(60, 60, 300)])        // 150 x 1.6 = 240
        // A scan that missed the RPI still counts its secondsSinceLastScan in the next instance:
        // 300 s + 300 s (the instance after a missed scan carries the gap) at 50 dB, SELF_REPORT 0.5.
        let selfReport = RiskFixtures.window(day: Self.day, reportType: 3, infectiousness: 1, [(50, 50, 300), (50, 50, 300)]) // 300
        let weak = RiskFixtures.window(day: Self.day, reportType: 1, infectiousness: 1, [(60, 60, 120)])            // 60 < 100
        let revoked = RiskFixtures.window(day: Self.day, reportType: 5, infectiousness: 2, [(40, 40, 3000)])
        let unknown = RiskFixtures.window(day: Self.day.advanced(by: -1), reportType: 0, infectiousness: 2, [(40, 40, 3000)])
        let weakDay = RiskFixtures.window(day: Self.day.advanced(by: -2), reportType: 1, infectiousness: 1, [(60, 60, 120)])
        let other = RiskFixtures.window(day: Self.day.advanced(by: -3), reportType: 4, infectiousness: 2, [(50, 50, 300)]) // 300 x 0.4 = 120
        let s = try DailySummaries.compute([test, clinical, selfReport, weak, revoked, unknown, weakDay, other], config: Self.config)
        #expect(s.map(\.date) == ["2021-01-29", "2021-01-30", "2021-02-01"])
        #expect(s[0].summaryData == ExposureSummaryData(maximumScore: 120, scoreSum: 120, weightedDurationSum: 300))
        #expect(s[0].summaryDataPerReportType.keys.sorted() == ["RECURSIVE"])
        // A day whose only window is below the minimum score still has a (zero) summary; UNKNOWN
        // and REVOKED windows make no day at all.
        #expect(s[1].summaryData == ExposureSummaryData() && s[1].summaryDataPerReportType.isEmpty)
        let d = s[2]
        #expect(d.daysSinceEpoch == Int(Self.day.rawValue))
        #expect(abs(d.summaryData.maximumScore - 600) < 1e-9)
        #expect(abs(d.summaryData.scoreSum - (600 + 240 + 300)) < 1e-9)
        #expect(abs(d.summaryData.weightedDurationSum - (600 + 150 + 600)) < 1e-9)
        #expect(d.summaryDataPerReportType["CONFIRMED_TEST"] == ExposureSummaryData(maximumScore: 600, scoreSum: 600, weightedDurationSum: 600))
        #expect(abs(d.summaryDataPerReportType["CONFIRMED_CLINICAL_DIAGNOSIS"]!.scoreSum - 240) < 1e-9)
        #expect(d.summaryDataPerReportType["SELF_REPORT"]?.scoreSum == 300)
        #expect(d.summaryDataPerReportType["REVOKED"] == nil)
    }

    @Test func daysSinceExposureThresholdNeedsTodayAndDropsOlderDays() throws {
        var c = Self.config
        c.daysSinceExposureThreshold = 2
        let recent = RiskFixtures.window(day: Self.day, [(50, 50, 600)])
        let old = RiskFixtures.window(day: Self.day.advanced(by: -3), [(50, 50, 600)])
        #expect(throws: RiskError.self) { try DailySummaries.compute([recent], config: c) }
        let s = try DailySummaries.compute([recent, old], config: c, today: Self.day)
        #expect(s.map(\.date) == ["2021-02-01"])
    }

    @Test func configValidationFollowsTheFrameworkBuilder() throws {
        var c = Self.config
        c.attenuationBucketThresholdDb = [60, 55, 70]
        #expect(throws: RiskError.self) { try c.validate() }
        c = Self.config
        c.attenuationBucketWeights = [1, 1, 1, 2.6]
        #expect(throws: RiskError.invalidParameter(name: "attenuationBucketWeights", expected: "values in 0...2.5", actual: "2.6")) { try c.validate() }
        c = Self.config
        c.infectiousnessWeights = [1, 1, 1]
        #expect(throws: RiskError.self) { try c.validate() }
    }

    @Test func weightTablesReadAsArraysOrObjects() throws {
        let json = Data(#"""
        {"attenuationBucketThresholdDb": [55, 63, 70], "attenuationBucketWeights": [1, 0.5, 0.25, 0],
         "reportTypeWeights": {"CONFIRMED_TEST": 1.0, "2": 0.8}, "infectiousnessWeights": [0, 1, 2]}
        """#.utf8)
        let c = try RiskJSON.decodeParameters(DailySummariesConfig.self, from: json, file: "c.json")
        #expect(c.reportTypeWeights == [0, 1.0, 0.8, 0, 0, 0])
        #expect(c.infectiousnessWeights == [0, 1, 2])
        #expect(c.minimumWindowScore == 0 && c.daysSinceExposureThreshold == 0)
        let bad = Data(#"{"attenuationBucketThresholdDb": [55, 63, 70], "attenuationBucketWeights": [1, 0.5, 0.25, 0], "reportTypeWeights": {"NOPE": 1}, "infectiousnessWeights": []}"#.utf8)
        #expect(throws: RiskError.self) { try RiskJSON.decodeParameters(DailySummariesConfig.self, from: bad, file: "c.json") }
    }
}

@Suite struct GAENv1Tests {
    static let config = GAENv1Configuration(
        minimumRiskScore: 10, attenuationLevelValues: [1, 2, 3, 4, 5, 6, 7, 8], daysSinceLastExposureLevelValues: [1, 2, 3, 4, 5, 6, 7, 8],
        durationLevelValues: [1, 2, 3, 4, 5, 6, 7, 8], transmissionRiskLevelValues: [1, 2, 3, 4, 5, 6, 7, 8],
        attenuationDurationThresholds: [50, 70])

    @Test func bucketEdgesAreThoseOfTheFramework() {
        #expect([74, 73, 64, 63, 52, 51, 34, 33, 28, 27, 16, 15, 11, 10, 0].map(GAENv1Buckets.attenuation)
                == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7])
        #expect([20, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map(GAENv1Buckets.daysSinceExposure)
                == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7])
        #expect([0, 0.5, 5, 5.01, 10, 15, 20, 25, 30, 30.5].map { GAENv1Buckets.duration(minutes: $0) }
                == [0, 1, 1, 2, 2, 3, 4, 5, 6, 7])
    }

    @Test func riskScoreIsTheProductOfLevelValues() throws {
        let today = UTCDay(isoDate: "2021-02-10")!
        // 12 minutes at 45/55 dB (weighted mean 50 -> bucket 3, value 4), 3 days ago (bucket 6, value 7),
        // 12 minutes bucketized to 10 (bucket 2, value 3), TRL 6 (value 6): 4 x 7 x 3 x 6 = 504.
        let w = RiskFixtures.window(day: today.advanced(by: -3), trl: 6, [(45, 40, 360), (55, 50, 360)])
        let e = try GAENv1.score(w, index: 0, configuration: Self.config, today: today)
        #expect(e.attenuationDb == 50 && e.daysSinceExposure == 3 && e.durationMinutes == 10)
        #expect(e.riskScore == 504 && e.counted)
        // Without a transmission risk level the framework's INVALID level scores 1: 4 x 7 x 3 x 1.
        let invalid = try GAENv1.score(RiskFixtures.window(day: today.advanced(by: -3), [(45, 40, 360), (55, 50, 360)]),
                                       index: 0, configuration: Self.config, today: today)
        #expect(invalid.transmissionRiskLevel == 0 && invalid.riskScore == 84)
        #expect(throws: RiskError.invalidWindow(index: 0, field: "transmissionRiskLevel", expected: "1...8 (0: invalid)", actual: "9")) {
            try GAENv1.score(RiskFixtures.window(day: today, trl: 9, [(45, 40, 360)]), index: 0, configuration: Self.config, today: today)
        }
    }

    @Test func durationsAreBucketizedToFiveMinutesHalvesDown() {
        #expect([0, 150, 151, 299, 300, 450, 451, 1200, 1349].map(GAENv1Buckets.bucketizedSeconds)
                == [0, 0, 300, 300, 300, 300, 600, 1200, 1200])
    }

    @Test func v1SummaryCapsBucketsAtThirtyMinutesAndClampsTheScore() throws {
        let today = UTCDay(isoDate: "2021-02-10")!
        let near = RiskFixtures.window(day: today.advanced(by: -1), trl: 8, Array(repeating: (40, 40, 300), count: 8)) // 40 min < 50 dB
        let mid = RiskFixtures.window(day: today.advanced(by: -4), trl: 1, [(50, 50, 300)])                             // 5 min 50..<70
        let far = RiskFixtures.window(day: today.advanced(by: -4), trl: 1, [(70, 70, 120)])                             // 2 min >= 70
        let (s, exposures) = try ExposureSummaryV1.compute([near, mid, far], configuration: Self.config, today: today)
        #expect(s.attenuationDurations == [1800, 300, 120])
        #expect(s.matchedKeyCount == 3 && s.daysSinceLastExposure == 1)
        // near: att 40 -> bucket 3 (4) x days 1 -> bucket 7 (8) x 40 min -> bucket 7 (8) x TRL 8 (8) = 2048.
        #expect(exposures[0].riskScore == 2048)
        #expect(s.maximumRiskScoreFullRange == 2048 && s.maximumRiskScore == 255)
        // mid: att 50 -> 4 x days 4 -> 6 x 5 min -> 2 x TRL 1 -> 1 = 48; far: 2 min bucketizes to 0:
        // 2 (att 70) x 6 x 1 x 1 = 12, counted (>= 10).
        #expect(exposures[1].riskScore == 48 && exposures[2].riskScore == 12 && exposures[2].counted)
    }

    @Test func configurationValidation() {
        var c = Self.config
        c.durationLevelValues = [1, 2, 3]
        #expect(throws: RiskError.invalidParameter(name: "durationLevelValues", expected: "8 values", actual: "3 values")) { try c.validate() }
        c = Self.config
        c.attenuationDurationThresholds = [70, 50]
        #expect(throws: RiskError.self) { try c.validate() }
    }
}
