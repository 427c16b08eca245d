import ENProtocol
import Foundation
import Testing
@testable import TrialKit

/// The report's fit quality: the censoring-aware fit recovers a channel that sensitivity cut
/// off, the warnings say so, and the per-pair tables and threshold sweep count correctly.
@Suite struct FitQualityTests {
    /// Readings of A(d) = 60 + 20 log10(d) + N(0, 6), and only those at most 75 dB received.
    static func truncatedChannel() -> [Observation] {
        var rng = SeededRandom(seed: 7)
        var out: [Observation] = []
        for d in [0.5, 1, 2, 3, 5, 8, 12, 20] {
            for k in 0..<800 {
                let u1 = max(Double(rng.next() >> 11) * 0x1p-53, 1e-12), u2 = Double(rng.next() >> 11) * 0x1p-53
                let a = 60 + 20 * log10(d) + 6 * (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
                guard a <= 75 else { continue }
                out.append(Observation(time: Double(k), receiver: "rx", transmitter: d < 3 ? "near" : "far", distance: d, attenuation: a))
            }
        }
        return out
    }

    @Test func censoringAwareFitRecoversTheChannelAndTheReportWarns() throws {
        let obs = Self.truncatedChannel()
        let a = ChannelAnalysis(observations: obs)
        let ols = try #require(a.fit), c = try #require(a.censoredFit)
        #expect(ols.slopePerDecade < 16, "OLS slope \(ols.slopePerDecade) should be flattened")
        #expect(abs(c.slopePerDecade - 20) < 1.5 && abs(c.attenuationAt1m - 60) < 1 && abs(c.sigma - 6) < 0.6,
                "censored fit \(c.attenuationAt1m) \(c.slopePerDecade) \(c.sigma)")
        #expect(a.warnings.contains { $0.hasPrefix("censored by sensitivity") }, "\(a.warnings)")
        let md = TrialReportWriter.markdown(TrialReport(site: nil, counts: .init(), observations: obs, options: AnalysisOptions()))
        #expect(md.contains("**Warning:** censored by sensitivity"))
    }

    @Test func anUncensoredChannelGivesNoWarningAndTheSameFit() throws {
        var obs: [Observation] = []
        var rng = SeededRandom(seed: 9)
        for d in [0.5, 1, 2, 4, 8] {
            for k in 0..<400 {
                let u1 = max(Double(rng.next() >> 11) * 0x1p-53, 1e-12), u2 = Double(rng.next() >> 11) * 0x1p-53
                obs.append(Observation(time: Double(k), receiver: "rx", transmitter: "tx", distance: d,
                                       attenuation: 55 + 25 * log10(d) + 3 * (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)))
            }
        }
        let a = ChannelAnalysis(observations: obs)
        let ols = try #require(a.fit), c = try #require(a.censoredFit)
        #expect(a.warnings.isEmpty, "\(a.warnings)")
        #expect(abs(c.slopePerDecade - ols.slopePerDecade) < 0.5)
    }

    @Test func pairsReceiversAndSweepCount() throws {
        let obs = [
            Observation(time: 1, receiver: "r1", transmitter: "a", distance: 1, attenuation: 50),
            Observation(time: 2, receiver: "r1", transmitter: "a", distance: 3, attenuation: 70),
            Observation(time: 5, receiver: "r1", transmitter: "a", distance: 3, attenuation: 70),
            Observation(time: 3, receiver: "r1", transmitter: "b", distance: 1, attenuation: 60),
            Observation(time: 4, receiver: "r2", transmitter: "a", distance: 4, attenuation: 52),
        ]
        let a = ChannelAnalysis(observations: obs)
        #expect(a.pairs.map { "\($0.receiver)/\($0.transmitter ?? "")" } == ["r1/a", "r1/b", "r2/a"])
        #expect(a.pairs[0].count == 3 && a.pairs[0].slopePerDecade.map { abs($0 - 20 / log10(3)) < 1e-9 } == true)
        #expect(a.receivers.map(\.count) == [4, 1] && a.receivers[0].transmitter == nil)
        // Close = <= 2 m: r1/a at 1 m (50) and r1/b (60); far: 70 (twice) at 3 m and 52 at 4 m.
        let at55 = try #require(a.sweep.first { $0.thresholdDb == 55 })
        #expect(at55.truePositives == 1 && at55.falsePositives == 1 && at55.recall == 0.5 && at55.precision == 0.5)
        #expect(a.sweep.first?.thresholdDb == 50 && a.sweep.last?.thresholdDb == 70 && a.sweep.count == 21)
    }
}

/// Detection probability by distance, from the scans (empty ones included) and the markers of a
/// simulated trial whose sensitivity cuts off the far nodes.
@Suite struct DetectionProbabilityTests {
    @Test func nearNodesAreHeardInEveryScanFarOnesNot() throws {
        var scenario = SimulatedTrialTests.lineScenario(seed: 11, hours: 1)
        scenario.maxAttenuationDb = 70 // A(8 m) = 60 + 20 log10(8) = 78 dB: most of its packets are lost
        let dir = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Simulator(scenario: scenario).run().write(to: dir)
        let report = try TrialInputs.reportSimulation(dir)
        let rows = report.detectionByDistance
        #expect(rows.count >= SimulatedTrialTests.positions.count, "\(rows)") // every node scans too: pairs between transmitters add distances
        let near = try #require(rows.first), far = try #require(rows.last)
        #expect(near.distanceLow == 0.5 && near.scans > 10 && near.probability > 0.99, "\(near)")
        #expect(far.distanceLow == 8 && far.probability < 0.9 && far.probability > 0.1, "\(far)")
        #expect(zip(rows, rows.dropFirst()).allSatisfy { $0.probability >= $1.probability - 0.05 }, "\(rows)")
        let csv = try String(contentsOf: dir.appendingPathComponent("report/detection_probability.csv"), encoding: .utf8)
        #expect(csv.hasPrefix("distance_low,distance_high,scans_present,scans_heard,detection_probability\n0.5,0.5,"))
    }
}
