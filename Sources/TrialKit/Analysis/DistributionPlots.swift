import Foundation

/// heatmap.svg: how attenuation is distributed at each distance. One column per row of the
/// report's distance table (a distance, or a logarithmic bin when there are many), one cell per
/// dB (2 dB when the readings span more than 80 dB); a cell's shade is the share of the
/// column's readings in it, so every column is a histogram and near and far columns compare
/// even when their counts differ. The median and the fitted line are drawn over it. Computed
/// from the tally (every reading counted, no sample).
public struct HeatmapPlot {
    struct Column { var label: String; var distance: Double; var counts: [Int: Int]; var total: Int; var median: Double }
    let columns: [Column]
    let binDb: Double
    let yLow: Int, yHigh: Int // bin indices, inclusive
    let analysis: ChannelAnalysis
    let site: String?
    static let width = 850.0, height = 520.0, left = 70.0, right = 150.0, top = 40.0, bottom = 60.0

    public init(analysis: ChannelAnalysis, tally: ObservationTally, site: String?) {
        self.analysis = analysis
        self.site = site
        let entries = tally.entries()
        let lo = entries.map(\.attenuation).min() ?? 40, hi = entries.map(\.attenuation).max() ?? 100
        binDb = hi - lo > 80 ? 2 : 1
        let floor = analysis.options.minimumDistance
        var cols = analysis.distances.map { d in
            // A bin is labelled by its geometric centre, rounded for reading (its edges are in the tooltip).
            Column(label: d.distanceLow == d.distanceHigh ? Format.readable(d.distance) : Format.readable((d.distanceLow * d.distanceHigh).squareRoot(), significant: 2),
                   distance: d.distance, counts: [:], total: 0, median: d.median)
        }
        let rows = analysis.distances
        for e in entries {
            let d = max(e.distance, floor)
            guard let i = rows.firstIndex(where: { $0.distanceLow == $0.distanceHigh ? $0.distance == e.distance : (d >= $0.distanceLow && d < $0.distanceHigh) })
                ?? rows.firstIndex(where: { e.distance >= $0.distanceLow && e.distance <= $0.distanceHigh }) else { continue }
            let bin = Int((e.attenuation / binDb).rounded(.down))
            cols[i].counts[bin, default: 0] += e.count
            cols[i].total += e.count
        }
        columns = cols
        yLow = Int((lo / binDb).rounded(.down)); yHigh = max(Int((hi / binDb).rounded(.down)), yLow)
    }

    /// Columns with fewer readings than this are drawn faded and do not set the colour scale: one
    /// reading alone is a 100 % share and would wash every other column out.
    static let minimumColumnCount = 20

    /// The share that maps to the darkest shade: the 98th percentile of the cell shares of the
    /// columns with at least `minimumColumnCount` readings (of all columns when none has), so a
    /// few sparse cells do not set the scale; darker cells are drawn at the darkest shade.
    var scaleShare: Double {
        let full = columns.filter { $0.total >= Self.minimumColumnCount }
        let use = full.isEmpty ? columns.filter { $0.total > 0 } : full
        let shares = use.flatMap { c in c.counts.values.map { Double($0) / Double(c.total) } }.sorted()
        guard !shares.isEmpty else { return 1 }
        return max(shares[min(shares.count - 1, Int((Double(shares.count - 1) * 0.98).rounded()))], 1e-9)
    }

    /// White to dark blue by share (0...1 of the column's largest share over the whole plot).
    static func shade(_ t: Double) -> String {
        let t = min(max(t, 0), 1)
        let from = (247.0, 251.0, 255.0), to = (8.0, 48.0, 107.0)
        func c(_ a: Double, _ b: Double) -> String { String(format: "%02x", Int((a + (b - a) * t).rounded())) }
        return "#" + c(from.0, to.0) + c(from.1, to.1) + c(from.2, to.2)
    }

    public func svg() -> String {
        let n = AttenuationPlot.n
        let plotW = Self.width - Self.left - Self.right, plotH = Self.height - Self.top - Self.bottom
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(Self.width))" height="\(Int(Self.height))" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(Self.width))" height="\(Int(Self.height))" fill="white"/>
        <text x="\(n(Self.left))" y="22" font-size="15">Attenuation by distance (share of each distance's readings)\(site.map { " – " + AttenuationPlot.escape($0) } ?? "")</text>

        """
        guard !columns.isEmpty else { return s + "<text x=\"\(n(Self.left))\" y=\"60\">no readings</text>\n</svg>\n" }
        let colW = plotW / Double(columns.count)
        let rowsCount = yHigh - yLow + 1
        let rowH = plotH / Double(rowsCount)
        func y(_ att: Double) -> Double { Self.top + (Double(yHigh + 1) * binDb - att) / (Double(rowsCount) * binDb) * plotH }
        let maxShare = scaleShare
        let clipped = columns.contains { c in c.counts.values.contains { Double($0) / Double(max(c.total, 1)) > maxShare } }
        let sparse = columns.filter { $0.total > 0 && $0.total < Self.minimumColumnCount }.count
        for (i, c) in columns.enumerated() where c.total > 0 {
            let faded = c.total < Self.minimumColumnCount
            for (bin, count) in c.counts.sorted(by: { $0.key < $1.key }) {
                let share = Double(count) / Double(c.total)
                let top = Self.top + Double(yHigh - bin) * rowH
                s += "<rect x=\"\(n(Self.left + Double(i) * colW))\" y=\"\(n(top))\" width=\"\(n(colW + 0.3))\" height=\"\(n(rowH + 0.3))\" fill=\"\(Self.shade(share / maxShare))\"\(faded ? " fill-opacity=\"0.35\"" : "")><title>\(c.label) m (\(c.total) readings), \(Format.exact(Double(bin) * binDb))-\(Format.exact(Double(bin + 1) * binDb)) dB: \(count) (\(Format.fixed(share * 100, 1)) %)</title></rect>"
            }
            s += "\n"
        }
        s += "<rect x=\"\(n(Self.left))\" y=\"\(n(Self.top))\" width=\"\(n(plotW))\" height=\"\(n(plotH))\" fill=\"none\" stroke=\"#888\"/>\n"
        // Attenuation ticks every 10 dB; one label per column (thinned when crowded).
        var t = (Double(yLow) * binDb / 10).rounded(.up) * 10
        while t <= Double(yHigh + 1) * binDb {
            s += "<line x1=\"\(n(Self.left - 5))\" y1=\"\(n(y(t)))\" x2=\"\(n(Self.left))\" y2=\"\(n(y(t)))\" stroke=\"#444\"/><text x=\"\(n(Self.left - 8))\" y=\"\(n(y(t) + 4))\" text-anchor=\"end\">\(Int(t))</text>\n"
            t += 10
        }
        // Labels thinned so that none overlaps: a label is about 0.6 em per character wide, with a gap of 8 px.
        let fontSize = columns.count > 10 ? 10.0 : 12.0
        let widest = Double(columns.map(\.label.count).max() ?? 1) * fontSize * 0.6 + 8
        let every = max(1, Int((widest / colW).rounded(.up)))
        for (i, c) in columns.enumerated() where i % every == 0 {
            let xv = Self.left + (Double(i) + 0.5) * colW
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(Self.top + plotH))\" x2=\"\(n(xv))\" y2=\"\(n(Self.top + plotH + 4))\" stroke=\"#444\"/>"
            s += "<text x=\"\(n(xv))\" y=\"\(n(Self.top + plotH + 17))\" text-anchor=\"middle\" font-size=\"\(Int(fontSize))\">\(c.label)</text>\n"
        }
        s += "<text x=\"\(n(Self.left + plotW / 2))\" y=\"\(n(Self.height - 15))\" text-anchor=\"middle\">distance (m)</text>\n"
        s += "<text transform=\"translate(18 \(n(Self.top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">attenuation (dB)</text>\n"
        // Medians and the fit at each column's distance.
        for (i, c) in columns.enumerated() where c.total > 0 {
            let xv = Self.left + (Double(i) + 0.5) * colW
            s += "<circle cx=\"\(n(xv))\" cy=\"\(n(y(c.median)))\" r=\"3\" fill=\"#ff7f0e\" stroke=\"black\"/>"
        }
        if let fit = analysis.fit {
            let pts = columns.enumerated().map { i, c in
                "\(i == 0 ? "M" : "L")\(n(Self.left + (Double(i) + 0.5) * colW)) \(n(y(fit.meanAttenuation(at: max(c.distance, analysis.options.minimumDistance)))))"
            }
            s += "\n<path d=\"\(pts.joined(separator: " "))\" stroke=\"#d62728\" stroke-width=\"2\" fill=\"none\"/>\n"
        }
        // Legend: the shade scale, median, fit.
        let lx = Self.left + plotW + 20
        for k in 0..<10 {
            s += "<rect x=\"\(n(lx))\" y=\"\(n(Self.top + Double(9 - k) * 14))\" width=\"14\" height=\"14\" fill=\"\(Self.shade(Double(k) / 9))\"/>"
        }
        s += "\n<text x=\"\(n(lx + 20))\" y=\"\(n(Self.top + 10))\">\(clipped ? "≥ " : "")\(Format.readable(maxShare * 100, significant: 2)) %</text>"
        s += "<text x=\"\(n(lx + 20))\" y=\"\(n(Self.top + 140))\">0 %</text>\n"
        s += "<text x=\"\(n(lx))\" y=\"\(n(Self.top + 165))\" font-size=\"10\">share of the distance's</text><text x=\"\(n(lx))\" y=\"\(n(Self.top + 177))\" font-size=\"10\">readings per \(Format.exact(binDb)) dB</text>\n"
        if sparse > 0 {
            s += "<text x=\"\(n(lx))\" y=\"\(n(Self.top + 250))\" font-size=\"10\">faded: \(sparse) column\(sparse == 1 ? "" : "s") with</text><text x=\"\(n(lx))\" y=\"\(n(Self.top + 262))\" font-size=\"10\">fewer than \(Self.minimumColumnCount) readings</text>\n"
        }
        s += "<circle cx=\"\(n(lx + 7))\" cy=\"\(n(Self.top + 200))\" r=\"3\" fill=\"#ff7f0e\" stroke=\"black\"/><text x=\"\(n(lx + 20))\" y=\"\(n(Self.top + 204))\">median</text>\n"
        if analysis.fit != nil {
            s += "<line x1=\"\(n(lx))\" y1=\"\(n(Self.top + 222))\" x2=\"\(n(lx + 14))\" y2=\"\(n(Self.top + 222))\" stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"\(n(lx + 20))\" y=\"\(n(Self.top + 226))\">fit</text>\n"
        }
        return s + "</svg>\n"
    }
}

/// residuals.svg: each sighting's attenuation minus the fitted line, against distance (log axis
/// on the 1-2-5 steps around the data), the plot's sample jittered and coloured by pair as in
/// plot.svg, with each distance's median residual and quartiles and the zero line. A good fit
/// leaves the medians on zero at every distance; a bend, a step or a fan says the log-distance
/// line misses something (censoring bends the far end upwards into negative residuals).
public struct ResidualPlot {
    let base: AttenuationPlot
    let analysis: ChannelAnalysis
    let residuals: [Double]
    let yMin: Double, yMax: Double

    public init?(analysis: ChannelAnalysis, tally: ObservationTally, site: String?) {
        guard let fit = analysis.fit else { return nil }
        self.analysis = analysis
        base = AttenuationPlot(analysis: analysis, tally: tally, site: site)
        residuals = base.points.map { $0.attenuation - fit.meanAttenuation(at: $0.distance) }
        let floor = analysis.options.minimumDistance
        let medians = analysis.distances.flatMap { d -> [Double] in
            let m = fit.meanAttenuation(at: max(d.distance, floor))
            return [d.q1 - m, d.q3 - m]
        }
        let extent = max((residuals + medians).map(abs).max() ?? 10, 5)
        yMax = (extent / 10).rounded(.up) * 10
        yMin = -yMax
    }

    public func svg() -> String {
        let n = AttenuationPlot.n, b = base
        let W = AttenuationPlot.width, H = AttenuationPlot.height
        let left = AttenuationPlot.left, plotRight = W - AttenuationPlot.right, top = AttenuationPlot.top, plotBottom = H - AttenuationPlot.bottom
        func y(_ r: Double) -> Double { top + (yMax - r) / (yMax - yMin) * (plotBottom - top) }
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(W))" height="\(Int(H))" viewBox="0 0 \(Int(W)) \(Int(H))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(W))" height="\(Int(H))" fill="white"/>
        <text x="\(n(left))" y="22" font-size="15">Residuals of the log-distance fit\(b.site.map { " – " + AttenuationPlot.escape($0) } ?? "")</text>
        <rect x="\(n(left))" y="\(n(top))" width="\(n(plotRight - left))" height="\(n(plotBottom - top))" fill="none" stroke="#888"/>

        """
        var decade = pow(10, log10(b.xMin).rounded(.down))
        while decade < b.xMax * 1.0001 {
            for m in [1.0, 2, 5] where decade * m <= b.xMax * 1.0001 && decade * m >= b.xMin / 1.0001 {
                let xv = b.x(decade * m)
                s += "<line x1=\"\(n(xv))\" y1=\"\(n(top))\" x2=\"\(n(xv))\" y2=\"\(n(plotBottom))\" stroke=\"#eee\"/>"
                s += "<text x=\"\(n(xv))\" y=\"\(n(plotBottom + 18))\" text-anchor=\"middle\">\(AttenuationPlot.distanceLabel(decade * m))</text>\n"
            }
            decade *= 10
        }
        var t = yMin
        while t <= yMax + 1e-9 {
            s += "<line x1=\"\(n(left - 5))\" y1=\"\(n(y(t)))\" x2=\"\(n(plotRight))\" y2=\"\(n(y(t)))\" stroke=\"\(t == 0 ? "#444" : "#eee")\"/>"
            s += "<text x=\"\(n(left - 8))\" y=\"\(n(y(t) + 4))\" text-anchor=\"end\">\(Int(t))</text>\n"
            t += yMax > 30 ? 10 : 5
        }
        s += "<text x=\"\(n((left + plotRight) / 2))\" y=\"\(n(H - 15))\" text-anchor=\"middle\">distance (m, log scale)</text>\n"
        s += "<text transform=\"translate(18 \(n((top + plotBottom) / 2))) rotate(-90)\" text-anchor=\"middle\">attenuation - fit (dB)</text>\n"
        s += "<g fill-opacity=\"0.3\">\n"
        for (k, p) in b.points.enumerated() {
            let dx = b.jitter ? pow(10, 0.017 * AttenuationPlot.offset(k, 1)) : 1, dy = b.jitter ? 0.4 * AttenuationPlot.offset(k, 2) : 0
            let colour = b.pairNames.count > 1 ? AttenuationPlot.palette[b.pointPairs[k] % AttenuationPlot.palette.count] : AttenuationPlot.palette[0]
            s += "<circle cx=\"\(n(b.x(min(max(p.distance * dx, b.xMin), b.xMax))))\" cy=\"\(n(y(residuals[k] + dy)))\" r=\"2\" fill=\"\(colour)\"/>"
        }
        s += "\n</g>\n<g stroke=\"black\" fill=\"black\">\n"
        if let fit = analysis.fit {
            let floor = analysis.options.minimumDistance
            for d in analysis.distances {
                let m = fit.meanAttenuation(at: max(d.distance, floor)), xv = b.x(max(d.distance, floor))
                s += "<line x1=\"\(n(xv))\" y1=\"\(n(y(d.q1 - m)))\" x2=\"\(n(xv))\" y2=\"\(n(y(d.q3 - m)))\" stroke-width=\"2\"/>"
                s += "<rect x=\"\(n(xv - 4))\" y=\"\(n(y(d.median - m) - 4))\" width=\"8\" height=\"8\"/>\n"
            }
        }
        s += "</g>\n"
        let lx = plotRight + 15
        s += "<circle cx=\"\(n(lx + 8))\" cy=\"\(n(top + 10))\" r=\"3\" fill=\"#1f77b4\" fill-opacity=\"0.5\"/><text x=\"\(n(lx + 22))\" y=\"\(n(top + 14))\">sightings\(b.points.count < analysis.observationCount ? " (sample)" : "")\(b.jitter ? ", jittered" : "")</text>\n"
        s += "<rect x=\"\(n(lx + 4))\" y=\"\(n(top + 28))\" width=\"8\" height=\"8\"/><text x=\"\(n(lx + 22))\" y=\"\(n(top + 36))\">median, quartiles</text>\n"
        if b.pairNames.count > 1 {
            var ly = top + 58
            for (k, name) in b.pairNames.prefix(8).enumerated() {
                s += "<circle cx=\"\(n(lx + 8))\" cy=\"\(n(ly))\" r=\"3\" fill=\"\(AttenuationPlot.palette[k % AttenuationPlot.palette.count])\"/><text x=\"\(n(lx + 22))\" y=\"\(n(ly + 4))\" font-size=\"10\">\(AttenuationPlot.escape(String(name.prefix(22))))</text>\n"
                ly += 16
            }
        }
        return s + "</svg>\n"
    }
}
