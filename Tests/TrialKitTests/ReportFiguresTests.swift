import Foundation
import Testing
@testable import TrialKit

/// The report's figures and tables as a reader gets them: tick labels that do not run into one
/// another, a colour scale that one sparse bin cannot wash out, receivers and pairs in natural
/// order, and a reason instead of an empty table.
@Suite struct ReportFiguresTests {
    static func observations(distances: [Double], perDistance: Int, spread: Int, receivers: [String] = ["rx"]) -> [Observation] {
        var out: [Observation] = []
        for d in distances {
            for k in 0..<perDistance {
                let a = (60 + 20 * log10(d)).rounded() + Double(k % spread)
                out.append(Observation(time: Double(out.count), receiver: receivers[k % receivers.count], transmitter: "tx", distance: d, attenuation: a))
            }
        }
        return out
    }

    /// (x, font size, label) of each distance label under the heat map.
    static func columnLabels(_ svg: String) throws -> [(x: Double, size: Double, label: String)] {
        let re = try NSRegularExpression(pattern: #"<text x="([0-9.-]+)" y="[0-9.-]+" text-anchor="middle" font-size="([0-9]+)">([^<]*)</text>"#)
        let ns = svg as NSString
        return re.matches(in: svg, range: NSRange(location: 0, length: ns.length)).map { m in
            (Double(ns.substring(with: m.range(at: 1)))!, Double(ns.substring(with: m.range(at: 2)))!, ns.substring(with: m.range(at: 3)))
        }
    }

    /// Three decades of distances, binned logarithmically (30 columns, 21 px each): the labels
    /// are rounded bin centres and thinned so that neighbours keep a gap.
    @Test func binnedHeatmapTicksAreShortAndDoNotOverlap() throws {
        let distances = (0..<300).map { pow(10, -1 + 3 * Double($0) / 300) }
        let obs = Self.observations(distances: distances, perDistance: 3, spread: 3)
        let analysis = ChannelAnalysis(observations: obs)
        #expect(analysis.distances.count >= 28, "binned: \(analysis.distances.count)")
        let labels = try Self.columnLabels(HeatmapPlot(analysis: analysis, tally: ObservationTally(obs), site: nil).svg())
        #expect(labels.count >= 5 && labels.count < analysis.distances.count, "\(labels.map(\.label))")
        for l in labels { #expect(l.label.count <= 4, "\(l.label)") }
        for (a, b) in zip(labels, labels.dropFirst()) {
            // About 0.6 em per character, half of each label on either side of its tick, 4 px apart at least.
            let needed = 0.6 * a.size * Double(a.label.count + b.label.count) / 2 + 4
            #expect(b.x - a.x >= needed, "\(a.label) at \(a.x) and \(b.label) at \(b.x)")
        }
    }

    /// One reading alone at 10 m is 100 % of its column: it is faded and the scale is set by the
    /// full columns (readings spread over 20 dB, 5 % a cell), whose commonest cells get the darkest shade.
    @Test func oneSparseColumnDoesNotSetTheColourScale() throws {
        var obs = Self.observations(distances: [1, 2, 3], perDistance: 200, spread: 20)
        obs.append(Observation(time: 1e6, receiver: "rx", transmitter: "tx", distance: 10, attenuation: 70))
        let plot = HeatmapPlot(analysis: ChannelAnalysis(observations: obs), tally: ObservationTally(obs), site: nil)
        #expect(abs(plot.scaleShare - 0.05) < 1e-9, "\(plot.scaleShare)")
        let svg = plot.svg()
        let darkest = HeatmapPlot.shade(1)
        #expect(svg.components(separatedBy: "fill=\"\(darkest)\">").count - 1 >= 60, "full columns at the darkest shade")
        #expect(svg.contains("fill=\"\(darkest)\" fill-opacity=\"0.35\"><title>10 m (1 readings)"))
        #expect(svg.contains(">≥ 5 %</text>") && svg.contains("faded: 1 column with"))
    }

    /// Receivers named board-1, board-2, board-10 come in the order people count them in every
    /// table and in the plot's legend, whatever order the rows came in.
    @Test func receiversAndPairsInNaturalOrder() throws {
        let obs = Self.observations(distances: [1, 2, 4], perDistance: 30, spread: 5, receivers: ["board-10", "board-2", "board-1"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = TrialReport(site: nil, counts: .init(), observations: obs, options: AnalysisOptions())
        try TrialReportWriter.write(report, observations: obs, to: dir)
        func firstColumn(_ file: String) throws -> [String] {
            try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8).split(separator: "\n").dropFirst().map { String($0.split(separator: ",")[0]) }
        }
        #expect(try firstColumn("receivers.csv") == ["board-1", "board-2", "board-10"])
        #expect(try firstColumn("pairs.csv") == ["board-1", "board-2", "board-10"])
        let plot = try String(contentsOf: dir.appendingPathComponent("plot.svg"), encoding: .utf8)
        let positions = ["tx → board-1<", "tx → board-2<", "tx → board-10<"].map { plot.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil } && positions[0]! < positions[1]! && positions[1]! < positions[2]!)
        let md = try String(contentsOf: dir.appendingPathComponent("report.md"), encoding: .utf8)
        let rows = ["| board-1 |", "| board-2 |", "| board-10 |"].map { md.range(of: $0)?.lowerBound }
        #expect(rows.allSatisfy { $0 != nil } && rows[0]! < rows[1]! && rows[1]! < rows[2]!, "\(md)")
        // The same rows reversed give the same plot.
        let other = dir.appendingPathComponent("reversed")
        try TrialReportWriter.write(TrialReport(site: nil, counts: .init(), observations: obs.reversed(), options: AnalysisOptions()),
                                    observations: obs.reversed(), to: other)
        let legend = { (s: String) in s.components(separatedBy: "\n").filter { $0.contains("→") } }
        #expect(legend(try String(contentsOf: other.appendingPathComponent("plot.svg"), encoding: .utf8)) == legend(plot))
    }

    /// Sightings with scans but no markers: detection_probability.csv and report.md say why the
    /// table is empty instead of showing a bare header.
    @Test func detectionProbabilitySaysWhyWithoutMarkers() throws {
        let dir = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Simulator(scenario: SimulatedTrialTests.lineScenario(seed: 4, hours: 0.25)).run().write(to: dir)
        try Data((MarkersFile.header.joined(separator: ",") + "\n").utf8).write(to: dir.appendingPathComponent("groundtruth/markers.csv"))
        let report = try TrialInputs.reportSimulation(dir)
        #expect(report.detectionByDistance.isEmpty && report.counts.matched > 0)
        let csv = try String(contentsOf: dir.appendingPathComponent("report/detection_probability.csv"), encoding: .utf8)
        let why = "no transmitter had a ground-truth distance at the start of any scan (no markers for these pairs and times)"
        #expect(csv == "distance_low,distance_high,scans_present,scans_heard,detection_probability\n# not computed: \(why)\n")
        let md = try String(contentsOf: dir.appendingPathComponent("report/report.md"), encoding: .utf8)
        #expect(md.contains("Detection probability by distance: not computed: \(why)."))
    }
}
