import Foundation
import Testing
@testable import TrialKit

/// The simulator streaming its rows to the files (memory flat in boards x days) writes exactly
/// what the simulation held in memory writes: same seed, byte-identical sightings and distances,
/// in the one-file-per-node layout and in the daily layout (the scenario crosses midnight UTC).
@Suite struct StreamingSimulationTests {
    func files(_ dir: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.isRegularFileKey])!
        for case let url as URL in e {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            out[String(url.path.dropFirst(dir.path.count))] = try Data(contentsOf: url)
        }
        return out
    }

    @Test(arguments: [false, true]) func streamedOutputEqualsTheHeldOne(daily: Bool) throws {
        let scenario = SimulatedTrialTests.lineScenario(seed: 21, hours: 3)
        let held = try SimulatedTrialTests.temporaryDirectory(), streamed = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: held); try? FileManager.default.removeItem(at: streamed) }
        let a = try Simulator(scenario: scenario).run()
        try a.write(to: held, daily: daily)
        let out = try StreamingSimulationOutput(dir: streamed, daily: daily)
        let b = try Simulator(scenario: scenario).run(output: out)
        try out.commit()
        try b.write(to: streamed, daily: daily)
        // Nothing held when streamed.
        #expect(b.sightingsFiles.isEmpty && b.streamedReceivers == ["rx"] + (0..<7).map { "tx\($0)" })
        #expect(b.sightings == a.sightings && b.scans == a.scans && a.sightings > 1000)
        let x = try files(held), y = try files(streamed)
        #expect(x.keys.sorted() == y.keys.sorted())
        #expect(x.keys.contains { $0.hasPrefix(daily ? "/sightings/board=rx/day=2026-11-21/" : "/sightings/rx.csv") }, "\(x.keys.sorted())")
        for (k, v) in x { #expect(y[k] == v, "\(k) differs") }
    }

    /// A receiver never present (it enters after the trial ends) has a sightings file with the
    /// header alone, streamed or held; in the daily layout it has none either way.
    @Test(arguments: [false, true]) func aReceiverNeverPresentGetsTheSameFiles(daily: Bool) throws {
        var scenario = SimulatedTrialTests.lineScenario(seed: 5, hours: 0.5)
        scenario.nodes.append(Scenario.NodeSpec(name: "late", role: "scanner", position: [1, 0], enter: 3600))
        let held = try SimulatedTrialTests.temporaryDirectory(), streamed = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: held); try? FileManager.default.removeItem(at: streamed) }
        try Simulator(scenario: scenario).run().write(to: held, daily: daily)
        let out = try StreamingSimulationOutput(dir: streamed, daily: daily)
        let b = try Simulator(scenario: scenario).run(output: out)
        try out.commit()
        try b.write(to: streamed, daily: daily)
        let x = try files(held), y = try files(streamed)
        #expect(x == y, "\(x.keys.sorted()) vs \(y.keys.sorted())")
        let header = SightingsExport.header.joined(separator: ",") + "\n"
        #expect(daily ? !x.keys.contains { $0.hasPrefix("/sightings/board=late") } : x["/sightings/late.csv"] == Data(header.utf8))
    }
}
