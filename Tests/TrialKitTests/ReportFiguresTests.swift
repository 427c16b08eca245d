import Foundation
import Testing
@testable import TrialKit
import TrialFormats

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

    /// (x, font size, label) of each tick label under the axis (`<text class="tick">`, 12 px).
    static func columnLabels(_ svg: String) throws -> [(x: Double, size: Double, label: String)] {
        let re = try NSRegularExpression(pattern: #"<text class="tick" x="([0-9.-]+)" y="[0-9.-]+" text-anchor="middle">([^<]*)</text>"#)
        let ns = svg as NSString
        return re.matches(in: svg, range: NSRange(location: 0, length: ns.length)).map { m in
            (Double(ns.substring(with: m.range(at: 1)))!, 12, ns.substring(with: m.range(at: 2)))
        }
    }

    /// Three decades of distances, binned logarithmically (30 columns): the axis is logarithmic
    /// with ticks on the 1-2-5 steps, short and apart, whatever the number of columns.
    @Test func binnedHeatmapTicksAreShortAndDoNotOverlap() throws {
        let distances = (0..<300).map { pow(10, -1 + 3 * Double($0) / 300) }
        let obs = Self.observations(distances: distances, perDistance: 3, spread: 3)
        let analysis = ChannelAnalysis(observations: obs)
        #expect(analysis.distances.count >= 28, "binned: \(analysis.distances.count)")
        let labels = try Self.columnLabels(HeatmapPlot(analysis: analysis, tally: ObservationTally(obs), site: nil).svg())
        #expect(labels.count >= 5 && labels.count < analysis.distances.count, "\(labels.map(\.label))")
        for l in labels {
            #expect(l.label.count <= 4, "\(l.label)")
            let v = Double(l.label)!, mantissa = v / pow(10, log10(v).rounded(.down))
            #expect([1.0, 2, 5].contains { abs($0 - mantissa) < 1e-9 }, "\(l.label) is not on a 1-2-5 step")
        }
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
        // The tooltip names the column's distance and its edges (halfway, in log distance, to 3 m).
        #expect(svg.contains("fill=\"\(darkest)\" fill-opacity=\"0.35\"><title>10 m, 5.48-12.6 m (1 readings)"), "\(svg)")
        #expect(svg.contains(">darkest: ≥ 5 %</text>") && svg.contains("faded: 1 column with"))
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

    /// Round ticks: a step of 1, 2 or 5 x 10^k, ticks on its multiples (never 9, 19, 29).
    @Test func ticksAreRoundNumbers() {
        #expect(FigureLayout.ticks(from: 9, to: 100, maxTicks: 9) == [20, 40, 60, 80, 100])
        #expect(FigureLayout.ticks(from: 0, to: 7.3, maxTicks: 6) == [0, 2, 4, 6])
        #expect(FigureLayout.ticks(from: 40, to: 80, maxTicks: 9) == [40, 45, 50, 55, 60, 65, 70, 75, 80])
        #expect(FigureLayout.tickLabel(2.5, step: 0.5) == "2.5" && FigureLayout.tickLabel(60, step: 10) == "60")
        // Labels in rows: overlapping intervals never share one.
        let rows = FigureLayout.rows([(0, 30), (20, 50), (40, 70), (60, 90)], gap: 4)
        #expect(rows == [0, 1, 0, 1])
    }

    /// Nine thresholds 2.5 dB apart: every label as given (57.5 dB, not 57), none on another,
    /// the x ticks on round numbers, and the close-contact distance and footer named.
    @Test func sweepLabelsKeepTheirValueAndDoNotCollide() throws {
        var options = AnalysisOptions()
        options.thresholds = [50, 52.5, 55, 57.5, 60, 62.5, 65, 67.5, 70]
        let obs = Self.observations(distances: [0.1, 0.5, 1, 2, 4, 8], perDistance: 40, spread: 20)
        var plot = SweepPlot(analysis: ChannelAnalysis(tally: ObservationTally(obs), options: options), site: "lab")
        plot.caption = ReportSources(inputs: ["/data/a.csv"], calibration: ["en-calibration-2020-12.csv (2020-12-01)"]).caption
        let svg = plot.svg()
        let re = try NSRegularExpression(pattern: ##"<text class="threshold" x="([0-9.]+)" y="([0-9.]+)" fill="#c60" font-size="11">([^<]*)</text>"##)
        let ns = svg as NSString
        struct Label { var x: Double; var y: Double; var text: String; var right: Double { x + Double(text.count) * 11 * 0.62 } }
        let labels: [Label] = re.matches(in: svg, range: NSRange(location: 0, length: ns.length)).map { m in
            Label(x: Double(ns.substring(with: m.range(at: 1)))!, y: Double(ns.substring(with: m.range(at: 2)))!, text: ns.substring(with: m.range(at: 3)))
        }
        #expect(labels.map { $0.text } == ["50 dB", "52.5 dB", "55 dB", "57.5 dB", "60 dB", "62.5 dB", "65 dB", "67.5 dB", "70 dB"])
        for (i, a) in labels.enumerated() {
            for b in labels[(i + 1)...] {
                let apartX: Bool = a.right <= b.x || b.right <= a.x
                let apartY: Bool = abs(a.y - b.y) >= 13.75
                #expect(apartX || apartY, "\(a) and \(b)")
            }
        }
        let ticks = try NSRegularExpression(pattern: #"<text class="tick"[^>]*>([0-9.]+)</text>"#)
        let values = ticks.matches(in: svg, range: NSRange(location: 0, length: ns.length)).map { Double(ns.substring(with: $0.range(at: 1)))! }
        #expect(values.count >= 4 && values.allSatisfy { $0.truncatingRemainder(dividingBy: 5) == 0 }, "\(values)")
        #expect(svg.contains("data: a.csv; calibration: en-calibration-2020-12.csv (2020-12-01)"))
    }
}
