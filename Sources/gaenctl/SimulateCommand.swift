import ArgumentParser
import ENProtocol
import Foundation
import TrialKit
import TrialFormats

/// `gaenctl simulate`: a scenario on a virtual clock, output as real boards export it.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a trial: virtual nodes, the real key schedule and scan cadence, a measured channel model.",
        discussion: """
            Writes DIR/sightings/<node>.csv (the sightings export format; with --split daily \
            DIR/sightings/board=<node>/day=<YYYY-MM-DD>/sightings.csv; .jsonl with --format jsonl), DIR/keys/<node>.json (the \
            JSON key list of gaenctl keys create), DIR/groundtruth/markers.csv (every pair, \
            labelled pair:<receiver>/<transmitter>), DIR/groundtruth/pairs/<rx>__<tx>.csv, \
            DIR/groundtruth/distances.csv, DIR/groundtruth/nodes.csv and DIR/summary.json. \
            With --report, also runs gaenctl trial report on it into DIR/report. The scenario \
            format and the channel presets are in docs/trial.md.
            """
    )

    @Option(help: ArgumentHelp("Scenario JSON file (see examples/scenarios).", valueName: "FILE"))
    var scenario: String

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Output directory (created).", valueName: "DIR"))
    var output: String

    @Option(help: "Seed of every random choice (overrides the scenario's); same seed, same output.")
    var seed: UInt64?

    @Flag(help: "Draw TEKs from the CSPRNG even when a seed is given.")
    var randomKeys = false

    @Flag(help: "Also write the trial report of the simulated data into DIR/report.")
    var report = false

    @Option(help: ArgumentHelp("'daily': sightings as DIR/sightings/board=<node>/day=<YYYY-MM-DD>/sightings.csv, one file per board per UTC day (the layout of sightings export --split daily).", valueName: "daily"))
    var split: String?

    @Option(help: "Sightings as csv or jsonl (JSON lines, docs/sightings-format.md).")
    var format: String = "csv"

    func validate() throws {
        if let split, split != "daily" { throw ValidationError("--split: expected 'daily', got '\(split)'") }
        guard format == "csv" || format == "jsonl" else { throw ValidationError("--format must be csv or jsonl") }
    }

    func run() throws {
        try TrialCommandSupport.run("simulate") {
            let url = URL(fileURLWithPath: output)
            let clock = ContinuousClock()
            let began = clock.now
            let sim = try Simulator(scenario: Scenario.read(URL(fileURLWithPath: scenario)), seed: seed, randomKeys: randomKeys)
            // CSV is streamed to the files as it is simulated (memory flat in boards x days); JSON
            // lines are converted from rows held in memory.
            let result: SimulationResult
            if format == "csv" {
                let out = try StreamingSimulationOutput(dir: url, daily: split == "daily")
                do {
                    result = try sim.run(output: out)
                    try out.commit()
                } catch { out.discard(); throw error }
            } else {
                result = try sim.run()
            }
            try result.write(to: url, daily: split == "daily", jsonLines: format == "jsonl")
            print("simulated \(sim.scenario.nodes.count) nodes for \(Format.fixed(sim.scenario.durationSeconds / 3600, 2)) h (seed \(result.seed)): "
                  + "\(result.scans) scans, \(result.sightings) sightings, \(result.markers.count) markers in \(output) "
                  + "in \(Format.fixed((clock.now - began).secondsValue, 1)) s")
            if report {
                let r = try TrialInputs.reportSimulation(url)
                print(TrialReportCommand.summary(r, output: url.appendingPathComponent("report").path))
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, for a line a person reads (Duration prints itself as "[0.39 seconds]").
    var secondsValue: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
