import Foundation
import TrialFormats

/// Attenuation against distance (log scale) as SVG text: sightings (a deterministic sample of
/// at most `maximumPoints`), per-distance medians with quartile bars, the fitted curve with
/// ±sigma, and the detection thresholds. SVG is simple enough to write as text; no plotting
/// library is in the offline package set.
public struct AttenuationPlot {
    public struct CurvePoint { public var distance: Double; public var mean: Double; public var sigma: Double }

    public let analysis: ChannelAnalysis
    public let points: [(distance: Double, attenuation: Double)]
    /// Each point's pair, an index into `pairNames` (points are coloured by pair).
    let pointPairs: [Int]
    let pairNames: [String]
    /// Whole-dB readings stack on one another: points are spread by up to ±0.4 dB and ±4 % in
    /// distance (a fixed pseudo-random offset per point, so the plot is reproducible).
    let jitter: Bool
    public let site: String?
    public let curve: [CurvePoint]
    let xMin: Double, xMax: Double, yMin: Double, yMax: Double
    /// The footer line naming the data (FigureLayout.footer).
    public var caption: String?

    /// The plot area is 560 px wide; the legend beside it as wide as its longest pair name
    /// (names are never cut: two devices that differ only at the end stay apart).
    static let plotWidth = 560.0, height = 560.0
    static let left = 70.0, top = 84.0, bottom = 80.0
    var right: Double { max(220, 40 + (pairNames.count > 1 && pairsColoured ? pairNames.map { FigureLayout.textWidth($0, size: 10) }.max() ?? 0 : 0)) }
    var width: Double { Self.left + Self.plotWidth + right }
    /// Pairs get their own colour only while the palette has one for each; beyond that colours
    /// would repeat and say nothing, so the points are one colour and pairs.csv lists the pairs.
    var pairsColoured: Bool { pairNames.count > 1 && pairNames.count <= Self.palette.count }

    public init(analysis: ChannelAnalysis, observations: [Observation], site: String?) {
        self.init(analysis: analysis, tally: ObservationTally(observations), site: site)
    }

    /// The plot of a tally's sample (PlotSample: at most twice `maximumPoints` sightings, every
    /// s-th in arrival order) over the distance range of every sighting.
    public init(analysis: ChannelAnalysis, tally: ObservationTally, site: String?) {
        self.analysis = analysis
        self.site = site
        let floor = analysis.options.minimumDistance
        let sample = tally.sample
        points = sample.points.map { (max($0.distance, floor), $0.attenuation) }
        // Pairs in natural order of receiver, then transmitter (as the report's tables), not in
        // the order the rows came: the legend and colours are the same however the input is ordered.
        let order = tally.pairs.indices.sorted { tally.pairs[$0] < tally.pairs[$1] }
        var rank = [Int](repeating: 0, count: tally.pairs.count)
        for (r, i) in order.enumerated() { rank[i] = r }
        pointPairs = sample.points.map { rank[$0.pair] }
        // Which side received: the transmitter's signal heard by the receiver.
        pairNames = order.map { "\(tally.pairs[$0].transmitter) → \(tally.pairs[$0].receiver)" }
        jitter = analysis.wholeDecibels
        let pts = points
        let lo = sample.points.isEmpty ? 0.5 : max(sample.minDistance, floor)
        let hi = sample.points.isEmpty ? 10 : max(sample.maxDistance, floor)
        // The 1-2-5 steps around the data (data to 10 m ends the axis at 10 m, not 100 m).
        xMin = Self.niceBelow(lo / 1.05)
        xMax = max(Self.niceAbove(hi * 1.05), xMin * 2)
        var curve: [CurvePoint] = []
        if let fit = analysis.fit {
            for k in 0...60 {
                let d = pow(10, log10(xMin) + (log10(xMax) - log10(xMin)) * Double(k) / 60)
                curve.append(CurvePoint(distance: d, mean: fit.meanAttenuation(at: d), sigma: fit.sigma))
            }
        }
        self.curve = curve
        var ys = pts.map(\.1) + analysis.options.thresholds
        ys += curve.flatMap { [$0.mean - $0.sigma, $0.mean + $0.sigma] }
        yMin = ((ys.min() ?? 40) / 10).rounded(.down) * 10
        yMax = max(((ys.max() ?? 100) / 10).rounded(.up) * 10, yMin + 10)
    }

    /// The largest 1, 2 or 5 x 10^k at or below v, and the smallest at or above.
    static func niceBelow(_ v: Double) -> Double {
        let d = pow(10, log10(v).rounded(.down))
        return [5.0, 2, 1].map { $0 * d }.first { $0 <= v * 1.0000001 } ?? d
    }

    static func niceAbove(_ v: Double) -> Double {
        let d = pow(10, log10(v).rounded(.down))
        return [1.0, 2, 5, 10].map { $0 * d }.first { $0 >= v / 1.0000001 } ?? 10 * d
    }

    static let palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79"]

    /// A fixed offset in -1...1 per point and axis (a hash of its index).
    static func offset(_ i: Int, _ axis: UInt64) -> Double {
        var z = UInt64(i) &* 0x9E37_79B9_7F4A_7C15 &+ axis
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) * 0x1p-52 - 1
    }

    func x(_ d: Double) -> Double {
        Self.left + (log10(d) - log10(xMin)) / (log10(xMax) - log10(xMin)) * Self.plotWidth
    }

    func y(_ a: Double) -> Double {
        Self.top + (yMax - a) / (yMax - yMin) * (Self.height - Self.top - Self.bottom)
    }

    static func n(_ v: Double) -> String { Format.fixed(v, 1) }

    public func svg() -> String {
        let n = Self.n
        let width = self.width, plotRight = Self.left + Self.plotWidth, plotBottom = Self.height - Self.bottom
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(Self.height))" viewBox="0 0 \(Int(width)) \(Int(Self.height))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(width))" height="\(Int(Self.height))" fill="white"/>
        <text x="\(n(Self.left))" y="22" font-size="15">Attenuation against distance\(site.map { " – " + Self.escape($0) } ?? "")</text>

        """
        // Axes and ticks.
        s += "<g stroke=\"#888\" fill=\"none\"><rect x=\"\(n(Self.left))\" y=\"\(n(Self.top))\" width=\"\(n(plotRight - Self.left))\" height=\"\(n(plotBottom - Self.top))\"/></g>\n"
        for d in Self.distanceTicks(xMin, xMax) {
            let xv = x(d)
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(Self.top))\" x2=\"\(n(xv))\" y2=\"\(n(plotBottom))\" stroke=\"#eee\"/>"
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(plotBottom))\" x2=\"\(n(xv))\" y2=\"\(n(plotBottom + 5))\" stroke=\"#444\"/>"
            s += "<text x=\"\(n(xv))\" y=\"\(n(plotBottom + 18))\" text-anchor=\"middle\">\(Self.distanceLabel(d))</text>\n"
        }
        var yt = yMin
        while yt <= yMax + 1e-9 {
            let yv = y(yt)
            s += "<line x1=\"\(n(Self.left))\" y1=\"\(n(yv))\" x2=\"\(n(plotRight))\" y2=\"\(n(yv))\" stroke=\"#eee\"/>"
            s += "<line x1=\"\(n(Self.left - 5))\" y1=\"\(n(yv))\" x2=\"\(n(Self.left))\" y2=\"\(n(yv))\" stroke=\"#444\"/>"
            s += "<text x=\"\(n(Self.left - 8))\" y=\"\(n(yv + 4))\" text-anchor=\"end\">\(Int(yt))</text>\n"
            yt += 10
        }
        s += "<text x=\"\(n((Self.left + plotRight) / 2))\" y=\"\(n(plotBottom + 40))\" text-anchor=\"middle\">distance (m, log scale)</text>\n"
        s += "<text transform=\"translate(18 \(n((Self.top + plotBottom) / 2))) rotate(-90)\" text-anchor=\"middle\">attenuation (dB)</text>\n"
        // Thresholds: labels at the right end, moved left a column when two would overlap.
        s += Self.thresholdLines(analysis.options.thresholds.filter { $0 >= yMin && $0 <= yMax }, left: Self.left, right: plotRight, y: y)
        // The close-contact distance.
        s += Self.closeContactLine(analysis.options.closeContactDistance, x: x, xMin: xMin, xMax: xMax, top: Self.top, bottom: plotBottom)
        // n per distance above the plot.
        s += Self.counts(analysis.distances.map { (x(max($0.distance, analysis.options.minimumDistance)), $0.count) }, top: Self.top)
        // Sightings.
        s += "<g fill-opacity=\"0.3\">\n"
        for (k, p) in points.enumerated() where p.attenuation >= yMin && p.attenuation <= yMax {
            let dx = jitter ? pow(10, 0.017 * Self.offset(k, 1)) : 1, dy = jitter ? 0.4 * Self.offset(k, 2) : 0
            let colour = pairsColoured ? Self.palette[pointPairs[k] % Self.palette.count] : Self.palette[0]
            s += "<circle cx=\"\(n(x(min(max(p.distance * dx, xMin), xMax))))\" cy=\"\(n(y(p.attenuation + dy)))\" r=\"2\" fill=\"\(colour)\"/>"
        }
        s += "\n</g>\n"
        // Fitted curve and ±sigma.
        if !curve.isEmpty {
            func path(_ f: (CurvePoint) -> Double) -> String {
                curve.enumerated().map { i, c in "\(i == 0 ? "M" : "L")\(n(x(c.distance))) \(n(y(f(c))))" }.joined(separator: " ")
            }
            s += "<path d=\"\(path { $0.mean })\" stroke=\"#d62728\" stroke-width=\"2\" fill=\"none\"/>\n"
            s += "<path d=\"\(path { $0.mean - $0.sigma })\" stroke=\"#d62728\" stroke-dasharray=\"6 4\" fill=\"none\"/>\n"
            s += "<path d=\"\(path { $0.mean + $0.sigma })\" stroke=\"#d62728\" stroke-dasharray=\"6 4\" fill=\"none\"/>\n"
        }
        // Medians and quartiles per distance.
        let floor = analysis.options.minimumDistance
        s += "<g stroke=\"black\" fill=\"black\">\n"
        for d in analysis.distances {
            let xv = x(max(d.distance, floor))
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(y(d.q1)))\" x2=\"\(n(xv))\" y2=\"\(n(y(d.q3)))\" stroke-width=\"2\"/>"
            s += "<rect x=\"\(n(xv - 4))\" y=\"\(n(y(d.median) - 4))\" width=\"8\" height=\"8\"/>\n"
        }
        s += "</g>\n"
        // Legend.
        let lx = plotRight + 15
        var ly = Self.top + 10
        s += "<circle cx=\"\(n(lx + 8))\" cy=\"\(n(ly))\" r=\"3\" fill=\"#1f77b4\" fill-opacity=\"0.5\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">sightings\(points.count < analysis.observationCount ? " (sample)" : "")\(jitter ? ", jittered" : "")</text>\n"
        s += legendPairs(x: lx, y: &ly)
        ly += 22
        s += "<rect x=\"\(n(lx + 4))\" y=\"\(n(ly - 4))\" width=\"8\" height=\"8\"/><line x1=\"\(n(lx + 8))\" y1=\"\(n(ly - 9))\" x2=\"\(n(lx + 8))\" y2=\"\(n(ly + 9))\" stroke=\"black\" stroke-width=\"2\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">median, quartiles</text>\n"
        if let fit = analysis.fit {
            ly += 22
            s += "<line x1=\"\(n(lx))\" y1=\"\(n(ly))\" x2=\"\(n(lx + 16))\" y2=\"\(n(ly))\" stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">fit</text>\n"
            ly += 22
            s += "<line x1=\"\(n(lx))\" y1=\"\(n(ly))\" x2=\"\(n(lx + 16))\" y2=\"\(n(ly))\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">fit ± sigma</text>\n"
            ly += 30
            for line in ["A(1 m) = \(Format.fixed(fit.attenuationAt1m, 1)) dB", "slope = \(Format.fixed(fit.slopePerDecade, 1)) dB/dec",
                         "sigma = \(Format.fixed(fit.sigma, 1)) dB", "n = \(fit.count)"] {
                s += "<text x=\"\(n(lx))\" y=\"\(n(ly))\">\(line)</text>\n"
                ly += 16
            }
        }
        ly += 10
        s += "<line x1=\"\(n(lx))\" y1=\"\(n(ly))\" x2=\"\(n(lx + 16))\" y2=\"\(n(ly))\" stroke=\"#c60\" stroke-dasharray=\"2 4\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">thresholds</text>\n"
        ly += 20
        s += Self.closeContactLegend(analysis.options.closeContactDistance, x: lx, y: ly)
        s += "<text x=\"\(n(lx))\" y=\"\(n(ly + 20))\" font-size=\"10\">n: readings per distance (top)</text>\n"
        s += FigureLayout.footer(caption, x: 8, y: Self.height - 8)
        s += "</svg>\n"
        return s
    }

    /// The pairs in the legend: each with its colour and full name when they are coloured, else
    /// how many there are and where they are listed.
    func legendPairs(x lx: Double, y ly: inout Double) -> String {
        let n = Self.n
        guard pairNames.count > 1 else { return "" }
        var s = ""
        ly += 16
        guard pairsColoured else {
            s += "<text class=\"legend-pairs\" x=\"\(n(lx + 4))\" y=\"\(n(ly + 4))\" font-size=\"10\">\(pairNames.count) pairs, one colour</text>\n"
            ly += 13
            s += "<text x=\"\(n(lx + 4))\" y=\"\(n(ly + 4))\" font-size=\"10\">(pairs.csv lists them)</text>\n"
            return s
        }
        s += "<text x=\"\(n(lx + 4))\" y=\"\(n(ly + 4))\" font-size=\"10\">pairs: transmitter → receiver</text>\n"
        for (k, name) in pairNames.enumerated() {
            ly += 16
            s += "<circle cx=\"\(n(lx + 8))\" cy=\"\(n(ly))\" r=\"3\" fill=\"\(Self.palette[k % Self.palette.count])\"/><text class=\"legend-pair\" x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\" font-size=\"10\">\(Self.escape(name))</text>\n"
        }
        return s
    }

    /// Dashed horizontal lines at the thresholds, each labelled at the right end; labels that
    /// would overlap (thresholds closer than a line of text) move left one column each.
    static func thresholdLines(_ thresholds: [Double], left: Double, right: Double, y: (Double) -> Double) -> String {
        let labels = thresholds.map { "\(Format.readable($0, significant: 6)) dB" }
        let widest = labels.map { FigureLayout.textWidth($0, size: 12) }.max() ?? 0
        let rows = FigureLayout.rows(thresholds.map { (lo: y($0) - 14, hi: y($0)) }, gap: 1)
        var s = ""
        for (i, t) in thresholds.enumerated() {
            s += "<line x1=\"\(n(left))\" y1=\"\(n(y(t)))\" x2=\"\(n(right))\" y2=\"\(n(y(t)))\" stroke=\"#c60\" stroke-dasharray=\"2 4\"/>"
            s += "<text class=\"threshold\" x=\"\(n(right - 4 - Double(rows[i]) * (widest + 10)))\" y=\"\(n(y(t) - 4))\" text-anchor=\"end\" fill=\"#c60\">\(labels[i])</text>\n"
        }
        return s
    }

    /// The vertical line at the close-contact distance (ground truth "close": at most this far).
    static func closeContactLine(_ d: Double, x: (Double) -> Double, xMin: Double, xMax: Double, top: Double, bottom: Double) -> String {
        guard d >= xMin, d <= xMax else { return "" }
        let xv = x(d)
        return "<line class=\"close-contact\" x1=\"\(n(xv))\" y1=\"\(n(top))\" x2=\"\(n(xv))\" y2=\"\(n(bottom))\" stroke=\"\(FigureLayout.closeContactColour)\" stroke-width=\"2\" stroke-dasharray=\"8 3\"/>\n"
    }

    static func closeContactLegend(_ d: Double, x lx: Double, y ly: Double) -> String {
        "<line x1=\"\(n(lx + 8))\" y1=\"\(n(ly - 8))\" x2=\"\(n(lx + 8))\" y2=\"\(n(ly + 8))\" stroke=\"\(FigureLayout.closeContactColour)\" stroke-width=\"2\" stroke-dasharray=\"8 3\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\">close: ≤ \(Format.readable(d, significant: 4)) m</text>\n"
    }

    /// Each distance's number of readings, written upwards above the plot at its x; counts
    /// that would touch a neighbour are left to the tables (distances.csv has every n).
    static func counts(_ at: [(x: Double, count: Int)], top: Double) -> String {
        let kept = FigureLayout.thinned(centres: at.map(\.x), widths: at.map { _ in 11 }, gap: 1)
        var s = "<g font-size=\"9\" fill=\"#333\">"
        for i in kept {
            s += "<text class=\"n\" transform=\"translate(\(n(at[i].x + 3)) \(n(top - 4))) rotate(-90)\">n=\(at[i].count)</text>"
        }
        return s + "</g>\n"
    }

    /// The distance axis's ticks, on the 1-2-5 steps of each decade from `xMin` to `xMax` (every
    /// plot with a log distance axis marks the same ones).
    static func distanceTicks(_ xMin: Double, _ xMax: Double) -> [Double] {
        var ticks: [Double] = []
        var decade = pow(10, log10(xMin).rounded(.down))
        while decade < xMax * 1.0001 {
            for m in [1.0, 2, 5] where decade * m <= xMax * 1.0001 && decade * m >= xMin / 1.0001 { ticks.append(decade * m) }
            decade *= 10
        }
        return ticks
    }

    static func distanceLabel(_ d: Double) -> String {
        d >= 1 ? String(Int(d.rounded())) : Format.fixed(d, d >= 0.1 ? 1 : 2)
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
