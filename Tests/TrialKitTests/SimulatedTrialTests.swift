import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// A simulated trial whose report recovers the channel it was given,
/// and whose detection table matches the analytic expectation of the model. Everything goes
/// through files, exactly as `gaenctl simulate` and `gaenctl trial report` run.
@Suite struct SimulatedTrialTests {
    static let positions: [Double] = [0.5, 1, 1.5, 2, 3, 5, 8]

    /// A scanner at the origin and nodes on a line at known positions (advertising and scanning,
    /// so every pair gives a distance), all static, a custom open-air channel, no body blocking
    /// or heterogeneity: the model is exactly log-distance plus Gaussian shadowing, so the fit
    /// must find its parameters.
    static func lineScenario(seed: UInt64, hours: Double = 3, slope: Double = 20, sigma: Double = 5) -> Scenario {
        var nodes = [Scenario.NodeSpec(name: "rx", role: "scanner", position: [0, 0], rssiCorrection: 3)]
        for (i, x) in positions.enumerated() {
            nodes.append(Scenario.NodeSpec(name: "tx\(i)", position: [x, 0], txPower: -20 + i, rssiCorrection: Double(i % 3),
                                           calibrationConfidence: 2))
        }
        return Scenario(name: "line", site: "test-hall", seed: seed, start: "2026-11-20T22:30:00Z", durationSeconds: hours * 3600,
                        channel: .init(preset: "open-air", attenuationAt1m: 60, slopePerDecade: slope, sigma: sigma),
                        maxAttenuationDb: 200, nodes: nodes)
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trialkit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Reads a simulation's output directory back the way `gaenctl trial report` does.
    static func report(from dir: URL) throws -> (TrialReport, [Observation]) {
        let report = try TrialInputs.reportSimulation(dir)
        let (obs, _) = try TrialPipeline.observations(attenuationCSV: CSVReader(contentsOf: dir.appendingPathComponent("report/attenuation.csv")),
                                                      groundTruth: GroundTruth(markers: []))
        return (report, obs)
    }

    @Test func theSiteLabelIsCarriedIntoEveryFileWritten() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Simulator(scenario: Self.lineScenario(seed: 3, hours: 0.25)).run()
        try result.write(to: dir)
        let report = try TrialInputs.reportSimulation(dir)
        #expect(report.site == "test-hall")
        let fm = FileManager.default
        var csvs = ["groundtruth/markers.csv", "groundtruth/distances.csv", "groundtruth/nodes.csv", "report/attenuation.csv"]
        for sub in ["sightings", "groundtruth/pairs"] {
            csvs += try fm.contentsOfDirectory(atPath: dir.appendingPathComponent(sub).path).map { "\(sub)/\($0)" }
        }
        for file in csvs {
            let reader = try CSVReader(contentsOf: dir.appendingPathComponent(file))
            let column = try reader.requireColumn("site")
            var rows = 0
            try reader.forEachRow { row in
                #expect(row.string(column) == "test-hall", "\(file) line \(row.line)")
                rows += 1
            }
            #expect(rows > 0, "\(file) has no rows")
        }
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("summary.json"))) as? [String: Any]
        #expect(summary?["site"] as? String == "test-hall" && summary?["name"] as? String == "line")
        let reportJSON = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("report/report.json"))) as? [String: Any]
        #expect(reportJSON?["site"] as? String == "test-hall")
        // The markers export still reads back as ground truth.
        #expect(try MarkersFile.read(dir.appendingPathComponent("groundtruth/markers.csv")).count == result.markers.count)
    }

    @Test func reportRecoversTheChannelItWasGiven() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenario = Self.lineScenario(seed: 7)
        let result = try Simulator(scenario: scenario).run()
        try result.write(to: dir)
        let (report, obs) = try Self.report(from: dir)

        // Every report is matched (the trial crosses midnight UTC, so two TEKs per node) and
        // every matched sighting has ground truth.
        #expect(report.counts.reports == result.sightings)
        #expect(report.counts.matched == report.counts.reports)
        #expect(report.counts.withGroundTruth == report.counts.matched)
        #expect(report.counts.emptyScans == result.emptyScans)
        #expect(obs.count > 10_000)
        #expect(Set(try KeyListFile.read(dir.appendingPathComponent("keys/tx0.json")).map(\.rollingStartIntervalNumber)).count == 2)

        let fit = try #require(report.analysis.fit)
        #expect(abs(fit.slopePerDecade - 20) < 1, "slope \(fit.slopePerDecade)")
        // Whole-dB RSSI adds the rounding variance 1/12 dB² to the shadowing variance.
        #expect(abs(fit.sigma - (25 + 1.0 / 12).squareRoot()) < 0.5, "sigma \(fit.sigma)")
        #expect(abs(fit.attenuationAt1m - 60) < 1, "A(1 m) \(fit.attenuationAt1m)")
        let pairDistances = Set(([0] + Self.positions).flatMap { a in Self.positions.map { b in abs(a - b) } }.filter { $0 > 0 })
        #expect(report.analysis.distances.map(\.distance) == pairDistances.sorted())
        #expect(report.pairs.count == 7 * 7)

        // Observed detection rates equal the model's expectation within sampling error: three
        // binomial standard errors (plus 0.005 for the model's own estimation error).
        func tolerance(_ p: Double, _ n: Int) -> Double { 3 * (p * (1 - p) / Double(n)).squareRoot() + 0.005 }
        #expect(report.analysis.detection.count == 3)
        for row in report.analysis.detection {
            #expect(abs(row.truePositiveRate - row.expectedTruePositiveRate) < tolerance(row.expectedTruePositiveRate, row.closeCount), "\(row)")
            #expect(abs(row.falsePositiveRate - row.expectedFalsePositiveRate) < tolerance(row.expectedFalsePositiveRate, row.farCount), "\(row)")
            #expect(abs(row.precision - row.expectedPrecision) < 0.02, "\(row)")
        }
        // The thresholds separate differently: a model that ignored distance could not produce this.
        let rates = report.analysis.detection.map(\.truePositiveRate)
        #expect(rates[0] < rates[1] && rates[1] < rates[2])
    }

    @Test func aDifferentChannelGivesADifferentFit() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Simulator(scenario: Self.lineScenario(seed: 3, hours: 2, slope: 12, sigma: 7.5)).run().write(to: dir)
        let fit = try #require(try Self.report(from: dir).0.analysis.fit)
        #expect(abs(fit.slopePerDecade - 12) < 1, "slope \(fit.slopePerDecade)")
        #expect(abs(fit.sigma - (7.5 * 7.5 + 1.0 / 12).squareRoot()) < 0.5, "sigma \(fit.sigma)")
    }

    @Test func sameSeedSameOutputOtherSeedOtherOutput() throws {
        let s = Self.lineScenario(seed: 11, hours: 0.5)
        let a = try Simulator(scenario: s).run(), b = try Simulator(scenario: s).run()
        let c = try Simulator(scenario: s, seed: 12).run()
        #expect(a.sightingsFiles.map(\.writer.csv.text) == b.sightingsFiles.map(\.writer.csv.text))
        #expect(a.keyLists.map { $0.keys.map(\.key) } == b.keyLists.map { $0.keys.map(\.key) })
        #expect(a.sightingsFiles.map(\.writer.csv.text) != c.sightingsFiles.map(\.writer.csv.text))
    }

    @Test func outputFollowsTheSightingsFormat() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Simulator(scenario: Self.lineScenario(seed: 5, hours: 0.5)).run().write(to: dir)
        let text = try String(contentsOf: dir.appendingPathComponent("sightings/rx.csv"), encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines[0] == "time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site,address")
        let rows = try SightingsExport.read(dir.appendingPathComponent("sightings/rx.csv"))
        var rpis = Set<RollingProximityIdentifier>()
        for r in rows {
            let start = try #require(r.scanStart), end = try #require(r.scanEnd)
            #expect(end - start == 4)
            #expect(r.time >= start && r.time <= end)
            #expect(r.node == "rx" && r.site == "test-hall" && r.rssiCorrection == 3)
            if let rpi = r.rpi { rpis.insert(rpi) }
        }
        // Scans start 210-300 s apart (the reference cadence of NodeSchedule).
        let starts = Array(Set(rows.compactMap(\.scanStart))).sorted()
        for (a, b) in zip(starts, starts.dropFirst()) { #expect(b - a >= 210 && b - a <= 300) }
        // 7 advertisers over 30 minutes rotate 1-3 times each (10-20 min).
        #expect(rpis.count >= 14 && rpis.count <= 28)
        // A scanner-only node has no key file; advertisers have one each.
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("keys/rx.json").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("keys/tx3.json").path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("groundtruth/pairs/rx__tx3.csv").path))
    }

    @Test func movingNodesGetMarkersAndAbsenceEmptiesTheDistance() throws {
        let s = Scenario(seed: 1, durationSeconds: 600, channel: .init(preset: "vehicle"), nodes: [
            .init(name: "a", position: [0, 0]),
            .init(name: "b", waypoints: [.init(t: 100, x: 1, y: 0), .init(t: 110, x: 6, y: 0)], leave: 400),
        ])
        let sim = try Simulator(scenario: s)
        let markers = sim.groundTruthMarkers().filter { $0.label == "pair:a/b" }
        let truth = GroundTruth(markers: markers)
        let pair = NodePair(receiver: "a", transmitter: "b")
        #expect(truth.distance(at: sim.startUnix + 50, pair: pair) == 1)
        #expect(abs(truth.distance(at: sim.startUnix + 105.2, pair: pair)! - 3.5) <= 0.55)
        #expect(truth.distance(at: sim.startUnix + 200, pair: pair) == 6)
        #expect(truth.distance(at: sim.startUnix + 450, pair: pair) == nil)
        #expect(markers.count < 20)
    }

    @Test func badScenariosAreRefusedClearly() throws {
        #expect(throws: ScenarioError.badValue(field: "channel.preset", expected: "indoor-crowd, open-air, vehicle", actual: "mars")) {
            try Simulator(scenario: Scenario(durationSeconds: 60, channel: .init(preset: "mars"), nodes: [.init(name: "a", position: [0, 0])]))
        }
        #expect(throws: ScenarioError.badValue(field: "nodes[1].name", expected: "unique", actual: "a")) {
            try Simulator(scenario: Scenario(durationSeconds: 60, nodes: [.init(name: "a", position: [0, 0]), .init(name: "a", position: [1, 0])]))
        }
        #expect(throws: ScenarioError.self) {
            try Simulator(scenario: Scenario(durationSeconds: 60, nodes: [.init(name: "a/b", position: [0, 0])]))
        }
    }
}

/// The example scenarios in the repository load and run (their first ten minutes).
@Suite struct ExampleScenarioTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/scenarios")

    @Test(arguments: ["bus", "queue", "office"])
    func exampleRuns(_ name: String) throws {
        var scenario = try Scenario.read(Self.examples.appendingPathComponent("\(name).json"))
        scenario.durationSeconds = 600
        let result = try Simulator(scenario: scenario).run()
        #expect(!result.sightingsFiles.isEmpty && !result.keyLists.isEmpty)
        #expect(result.sightings > 0)
        #expect(result.markers.allSatisfy { $0.pair != nil })
    }

    @Test func aBrokenScenarioNamesTheField() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(#"{"durationSeconds": 60, "nodes": [{"name": "a", "position": "here"}]}"#.utf8).write(to: url)
        do {
            _ = try Scenario.read(url)
            Issue.record("a scenario with a string position was accepted")
        } catch let ScenarioError.invalid(file, reason) {
            #expect(file == url.path)
            #expect(reason.hasPrefix(".nodes[0].position: expected"), "\(reason)")
        }
    }
}
