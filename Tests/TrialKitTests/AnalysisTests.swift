import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

@Suite struct StatisticsTests {
    @Test func normalCDFKnownValues() {
        #expect(abs(Statistics.normalCDF(0) - 0.5) < 1e-12)
        #expect(abs(Statistics.normalCDF(1.959963984540054) - 0.975) < 1e-9)
        #expect(abs(Statistics.normalCDF(-1) - 0.15865525393145707) < 1e-9)
    }

    @Test func quantilesInterpolateLikeNumPy() {
        let v: [Double] = [1, 2, 3, 4]
        #expect(Statistics.quantile(sorted: v, 0.25) == 1.75)
        #expect(Statistics.quantile(sorted: v, 0.5) == 2.5)
        #expect(Statistics.quantile(sorted: v, 0.75) == 3.25)
        #expect(Statistics.median([5, 1, 3]) == 3)
        #expect(Statistics.quantile(sorted: [], 0.5).isNaN)
    }

    @Test func lineFitByHand() throws {
        // y = 2 + 3x plus residuals +1, -1, -1, +1 at x = 0, 1, 2, 3 (uncorrelated with x, sum 0).
        let pts: [(x: Double, y: Double)] = [(0, 3), (1, 4), (2, 7), (3, 12)]
        let f = try LinearFit(points: pts)
        // x̄ = 1.5, ȳ = 6.5, Sxx = 5, Sxy = 5.25 + 1.25 + 0.25 + 8.25 = 15: slope 3.
        #expect(abs(f.slope - 3) < 1e-12)
        #expect(abs(f.intercept - 2) < 1e-12)
        // Residuals 1, -1, -1, 1: SSR 4, sigma = sqrt(4 / 2).
        #expect(abs(f.residualSigma - 2.0.squareRoot()) < 1e-12)
        #expect(throws: LinearFit.FitError.noSpreadInX(value: 1)) { try LinearFit(points: [(1, 1), (1, 2), (1, 3)]) }
        #expect(throws: LinearFit.FitError.tooFewPoints(needed: 3, actual: 2)) { try LinearFit(points: [(1, 1), (2, 2)]) }
    }
}

@Suite struct ChannelAnalysisTests {
    @Test func detectionTableByHand() throws {
        // Close (<= 2 m): attenuations 50, 60, 70; far: 58, 66, 80.
        let obs = [(1.0, 50.0), (2, 60), (1.5, 70), (3, 58), (5, 66), (8, 80)].map {
            Observation(time: 0, receiver: "r", transmitter: "t", distance: $0.0, attenuation: $0.1)
        }
        let a = ChannelAnalysis(observations: obs)
        let rows = a.detection
        #expect(rows.map(\.thresholdDb) == [55, 63, 73])
        #expect(rows.map(\.truePositives) == [1, 2, 3])
        #expect(rows.map(\.falsePositives) == [0, 1, 2])
        #expect(rows[1].truePositiveRate == 2.0 / 3 && rows[1].falsePositiveRate == 1.0 / 3 && rows[1].precision == 2.0 / 3)
        #expect(rows[0].closeCount == 3 && rows[0].farCount == 3)
        #expect(a.wholeDecibels)
    }

    @Test func analyticExpectationUsesTheFittedModel() {
        let fit = ChannelFit(attenuationAt1m: 60, slopePerDecade: 20, sigma: 5)
        // At 10 m the mean is 80; P(A <= 80 | continuous) = 0.5; with whole dB, P(A <= 79.5 + 0.5).
        #expect(abs(fit.probabilityAtOrBelow(80, distance: 10, continuity: 0) - 0.5) < 1e-12)
        #expect(abs(fit.probabilityAtOrBelow(75, distance: 10, continuity: 0) - Statistics.normalCDF(-1)) < 1e-12)
        #expect(fit.pathLossExponent == 2)
    }

    @Test func manyDistinctDistancesAreBinnedPerDecade() {
        let obs = (1...500).map { Observation(time: 0, receiver: "r", transmitter: "t", distance: Double($0) / 50, attenuation: 60) }
        let stats = ChannelAnalysis(observations: obs).distances
        #expect(stats.count <= 21)
        #expect(stats.map(\.count).reduce(0, +) == 500)
        for s in stats { #expect(s.distance >= s.distanceLow && s.distance < s.distanceHigh) }
    }

    @Test func perDistanceQuartiles() {
        let obs = [60.0, 62, 64, 66, 68].map { Observation(time: 0, receiver: "r", transmitter: "t", distance: 1, attenuation: $0) }
            + [70.0, 80].map { Observation(time: 0, receiver: "r", transmitter: "t", distance: 4, attenuation: $0) }
        let s = ChannelAnalysis(observations: obs).distances
        #expect(s.count == 2)
        #expect(s[0].median == 64 && s[0].q1 == 62 && s[0].q3 == 66 && s[0].count == 5)
        #expect(s[1].median == 75)
    }

    @Test func reportDirectoryHasEveryFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trialkit-report-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ds: [Double] = [0.5, 1, 2, 4, 8]
        let obs: [Observation] = (0..<300).map { (i: Int) -> Observation in
            let d = ds[i % 5]
            let a: Double = (60 + 20 * log10(d)).rounded() + Double(i % 7 - 3)
            return Observation(time: Double(i), receiver: "r", transmitter: "t", distance: d, attenuation: a)
        }
        let report = TrialReport(site: "bus <7>", counts: .init(), observations: obs, options: AnalysisOptions())
        try TrialReportWriter.write(report, observations: obs, to: dir)
        for f in TrialReportWriter.files { #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(f).path), "\(f)") }
        let svg = try String(contentsOf: dir.appendingPathComponent("plot.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.contains("bus &lt;7&gt;"))
        #expect(svg.components(separatedBy: "<circle").count - 1 >= 300)
        // The attenuation CSV reads back into the same observations.
        let (back, _) = try TrialPipeline.observations(attenuationCSV: CSVReader(contentsOf: dir.appendingPathComponent("attenuation.csv")),
                                                       groundTruth: GroundTruth(markers: []))
        #expect(back.map { (o: Observation) in o.attenuation } == obs.map { (o: Observation) in o.attenuation })
        #expect(back.map { (o: Observation) in o.distance } == obs.map { (o: Observation) in o.distance })
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("report.json"))) as? [String: Any]
        #expect(json?["site"] as? String == "bus <7>")
    }
}
