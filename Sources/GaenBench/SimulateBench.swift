import ENProtocol
import Foundation
import TrialKit
import TrialFormats

/// `GaenBench simulate`: the trial toolkit end to end on a 2-hour, 50-node scenario (it
/// should run in under a minute on a 2-core machine). A conference hall of 30 m x 20 m, indoor-crowd channel,
/// body blocking and device heterogeneity on; every node advertises and scans; each person
/// walks to a new spot every 15-25 minutes. Times: simulation, writing the files, and the
/// report read back from those files (matching, ground truth join, fit, tables, plot).
enum SimulateBench {
    struct Options {
        var nodes = 50
        var hours = 2.0
        var seed: UInt64 = 2026
        var keep: String?
    }

    static func scenario(_ o: Options) -> Scenario {
        var rng = SeededRandom(seed: o.seed)
        func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * Double(rng.next() >> 11) * 0x1p-53 }
        let duration = o.hours * 3600
        var nodes: [Scenario.NodeSpec] = []
        for i in 0..<o.nodes {
            var t = 0.0
            var x = uniform(0, 30), y = uniform(0, 20)
            var wps = [Scenario.Waypoint(t: 0, x: x, y: y)]
            while true {
                t += uniform(900, 1500)
                if t >= duration { break }
                let nx = uniform(0, 30), ny = uniform(0, 20)
                let walk = ((nx - x) * (nx - x) + (ny - y) * (ny - y)).squareRoot() / 1.2
                wps.append(.init(t: t, x: x, y: y))
                wps.append(.init(t: t + walk, x: nx, y: ny))
                t += walk; x = nx; y = ny
            }
            nodes.append(.init(name: String(format: "node%02d", i + 1), waypoints: wps, body: true, heading: uniform(0, 360)))
        }
        return Scenario(name: "conference", site: "hall-b", seed: o.seed, start: "2026-11-20T09:00:00Z", durationSeconds: duration,
                        channel: .init(preset: "indoor-crowd"), bodyBlockingDb: 15,
                        heterogeneity: .init(txSigma: 8, rxSigma: 5), nodes: nodes)
    }

    static func run(_ arguments: [String]) throws {
        var o = Options()
        var it = arguments.makeIterator()
        while let a = it.next() {
            switch a {
            case "--nodes": o.nodes = Int(it.next() ?? "") ?? o.nodes
            case "--hours": o.hours = Double(it.next() ?? "") ?? o.hours
            case "--seed": o.seed = UInt64(it.next() ?? "") ?? o.seed
            case "--keep": o.keep = it.next()
            default: print("unknown option \(a) (--nodes N, --hours H, --seed S, --keep DIR)"); return
            }
        }
        let dir = o.keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("gaenbench-simulate-\(ProcessInfo.processInfo.processIdentifier)")
        defer { if o.keep == nil { try? FileManager.default.removeItem(at: dir) } }
        let clock = ContinuousClock()
        func seconds(_ d: Duration) -> String {
            let c = d.components
            return String(format: "%.2f s", Double(c.seconds) + Double(c.attoseconds) * 1e-18)
        }
        // CPU time beside wall time: on a machine shared with other builds, wall time mostly
        // measures the wait for a core.
        func cpu() -> Double {
            var u = rusage()
            getrusage(RUSAGE_SELF.rawValue, &u)
            return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6
        }
        let t0 = clock.now, c0 = cpu()
        let sim = try Simulator(scenario: scenario(o))
        let result = try sim.run()
        let t1 = clock.now, c1 = cpu()
        try result.write(to: dir)
        let t2 = clock.now, c2 = cpu()
        let report = try TrialInputs.reportSimulation(dir)
        let t3 = clock.now, c3 = cpu()
        print("simulate: \(o.nodes) nodes, \(Format.fixed(o.hours, 1)) h, seed \(o.seed)")
        print("  scans \(result.scans), sightings \(result.sightings), markers \(result.markers.count)")
        print("  report: matched \(report.counts.matched), with ground truth \(report.counts.withGroundTruth), pairs \(report.pairs.count)")
        if let f = report.analysis.fit {
            print("  fit: A(1 m) \(Format.fixed(f.attenuationAt1m, 2)) dB, slope \(Format.fixed(f.slopePerDecade, 2)) dB/decade, sigma \(Format.fixed(f.sigma, 2)) dB "
                  + "(channel given: \(sim.channel.attenuationAt1m), \(sim.channel.slopePerDecade), \(sim.channel.sigma); plus body blocking and heterogeneity)")
        }
        print("  wall time: simulate \(seconds(t1 - t0)), write \(seconds(t2 - t1)), report \(seconds(t3 - t2)), total \(seconds(t3 - t0))")
        print(String(format: "  cpu time:  simulate %.2f s, write %.2f s, report %.2f s, total %.2f s", c1 - c0, c2 - c1, c3 - c2, c3 - c0))
    }
}
