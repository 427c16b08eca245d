import Foundation
import TrialFormats

/// heatmap.svg: how attenuation is distributed at each distance. One column per row of the
/// report's distance table (a distance, or a logarithmic bin when there are many), one cell per
/// dB (2 dB when the readings span more than 80 dB); a cell's shade is the share of the
/// column's readings in it, so every column is a histogram and near and far columns compare
/// even when their counts differ. The median and the fitted line are drawn over it. Computed
/// from the tally (every reading counted, no sample). The distance axis is logarithmic, as in
/// plot.svg: a column spans its bin's edges (a single distance: halfway, in log distance, to
/// its neighbours), so unequal gaps stay unequal and the log-distance fit is a straight line.
public struct HeatmapPlot {
    struct Column { var label: String; var distance: Double; var counts: [Int: Int]; var total: Int; var median: Double
        /// The column's edges (metres).
        var low = 0.0, high = 0.0 }
    let columns: [Column]
    let binDb: Double
    let yLow: Int, yHigh: Int // bin indices, inclusive
    let analysis: ChannelAnalysis
    let site: String?
    /// The footer line naming the data (FigureLayout.footer).
    public var caption: String?
    let xMin: Double, xMax: Double
    static let width = 850.0, height = 560.0, left = 70.0, right = 150.0, top = 84.0, bottom = 80.0

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
        // Edges: a bin's own; a single distance's halfway (in log distance) to its neighbours.
        let at = cols.map { log10(max($0.distance, floor)) }
        for i in cols.indices {
            let r = rows[i]
            if r.distanceLow != r.distanceHigh {
                cols[i].low = max(r.distanceLow, floor); cols[i].high = max(r.distanceHigh, floor)
                continue
            }
            let before = i > 0 ? (at[i] + at[i - 1]) / 2 : nil, after = i + 1 < at.count ? (at[i] + at[i + 1]) / 2 : nil
            let half = min(before.map { at[i] - $0 } ?? .infinity, after.map { $0 - at[i] } ?? .infinity, 0.1)
            cols[i].low = pow(10, before ?? (at[i] - half)); cols[i].high = pow(10, after ?? (at[i] + half))
        }
        let lowest = cols.map(\.low).min() ?? 0.5, highest = cols.map(\.high).max() ?? 10
        xMin = AttenuationPlot.niceBelow(lowest)
        xMax = max(AttenuationPlot.niceAbove(highest), xMin * 2)
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

    func x(_ d: Double) -> Double {
        Self.left + (log10(d) - log10(xMin)) / (log10(xMax) - log10(xMin)) * (Self.width - Self.left - Self.right)
    }

    public func svg() -> String {
        let n = AttenuationPlot.n
        let plotW = Self.width - Self.left - Self.right, plotH = Self.height - Self.top - Self.bottom
        let plotRight = Self.left + plotW, plotBottom = Self.top + plotH
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(Self.width))" height="\(Int(Self.height))" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(Self.width))" height="\(Int(Self.height))" fill="white"/>
        <text x="\(n(Self.left))" y="22" font-size="15">Attenuation by distance (heat map)\(site.map { " – " + AttenuationPlot.escape($0) } ?? "")</text>

        """
        guard !columns.isEmpty else { return s + "<text x=\"\(n(Self.left))\" y=\"60\">no readings</text>\n</svg>\n" }
        let rowsCount = yHigh - yLow + 1
        let rowH = plotH / Double(rowsCount)
        func y(_ att: Double) -> Double { Self.top + (Double(yHigh + 1) * binDb - att) / (Double(rowsCount) * binDb) * plotH }
        let maxShare = scaleShare
        let clipped = columns.contains { c in c.counts.values.contains { Double($0) / Double(max(c.total, 1)) > maxShare } }
        let sparse = columns.filter { $0.total > 0 && $0.total < Self.minimumColumnCount }.count
        for c in columns where c.total > 0 {
            let faded = c.total < Self.minimumColumnCount
            let x0 = x(c.low), x1 = x(c.high)
            for (bin, count) in c.counts.sorted(by: { $0.key < $1.key }) {
                let share = Double(count) / Double(c.total)
                let top = Self.top + Double(yHigh - bin) * rowH
                s += "<rect x=\"\(n(x0))\" y=\"\(n(top))\" width=\"\(n(x1 - x0 + 0.3))\" height=\"\(n(rowH + 0.3))\" fill=\"\(Self.shade(share / maxShare))\"\(faded ? " fill-opacity=\"0.35\"" : "")><title>\(c.label) m, \(Format.readable(c.low, significant: 3))-\(Format.readable(c.high, significant: 3)) m (\(c.total) readings), \(Format.exact(Double(bin) * binDb))-\(Format.exact(Double(bin + 1) * binDb)) dB: \(count) (\(Format.fixed(share * 100, 1)) %)</title></rect>"
            }
            s += "\n"
        }
        // Column edges as thin white rules over the cells, and marks on the axis.
        for e in Set(columns.flatMap { [$0.low, $0.high] }).sorted() {
            s += "<line class=\"edge\" x1=\"\(n(x(e)))\" y1=\"\(n(Self.top))\" x2=\"\(n(x(e)))\" y2=\"\(n(plotBottom + 3))\" stroke=\"white\" stroke-width=\"0.6\"/>"
            s += "<line x1=\"\(n(x(e)))\" y1=\"\(n(plotBottom))\" x2=\"\(n(x(e)))\" y2=\"\(n(plotBottom + 3))\" stroke=\"#999\"/>"
        }
        s += "\n<rect x=\"\(n(Self.left))\" y=\"\(n(Self.top))\" width=\"\(n(plotW))\" height=\"\(n(plotH))\" fill=\"none\" stroke=\"#888\"/>\n"
        // Attenuation ticks every 10 dB.
        var t = (Double(yLow) * binDb / 10).rounded(.up) * 10
        while t <= Double(yHigh + 1) * binDb {
            s += "<line x1=\"\(n(Self.left - 5))\" y1=\"\(n(y(t)))\" x2=\"\(n(Self.left))\" y2=\"\(n(y(t)))\" stroke=\"#444\"/><text x=\"\(n(Self.left - 8))\" y=\"\(n(y(t) + 4))\" text-anchor=\"end\">\(Int(t))</text>\n"
            t += 10
        }
        // Distance ticks on the 1-2-5 steps of the log axis, as plot.svg's.
        for d in AttenuationPlot.distanceTicks(xMin, xMax) {
            let xv = x(d)
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(plotBottom))\" x2=\"\(n(xv))\" y2=\"\(n(plotBottom + 6))\" stroke=\"#444\"/>"
            s += "<text class=\"tick\" x=\"\(n(xv))\" y=\"\(n(plotBottom + 19))\" text-anchor=\"middle\">\(AttenuationPlot.distanceLabel(d))</text>\n"
        }
        s += "<text x=\"\(n(Self.left + plotW / 2))\" y=\"\(n(plotBottom + 40))\" text-anchor=\"middle\">distance (m, log scale; columns span their bins)</text>\n"
        s += "<text transform=\"translate(18 \(n(Self.top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">attenuation (dB)</text>\n"
        s += AttenuationPlot.counts(columns.map { (x(max($0.distance, analysis.options.minimumDistance)), $0.total) }, top: Self.top)
        s += AttenuationPlot.closeContactLine(analysis.options.closeContactDistance, x: x, xMin: xMin, xMax: xMax, top: Self.top, bottom: plotBottom)
        // Medians at each column's distance; the fit as the straight line it is on this axis.
        for c in columns where c.total > 0 {
            s += "<circle cx=\"\(n(x(max(c.distance, analysis.options.minimumDistance))))\" cy=\"\(n(y(c.median)))\" r=\"3\" fill=\"#ff7f0e\" stroke=\"black\"/>"
        }
        if let fit = analysis.fit {
            let from = columns.map(\.low).min()!, to = columns.map(\.high).max()!
            s += "\n<path class=\"fit\" d=\"M\(n(x(from))) \(n(y(fit.meanAttenuation(at: from)))) L\(n(x(to))) \(n(y(fit.meanAttenuation(at: to))))\" stroke=\"#d62728\" stroke-width=\"2\" fill=\"none\"/>\n"
        }
        // Legend: the shade scale with round ticks, median, fit, close contact.
        let lx = plotRight + 20, barTop = Self.top, barH = 140.0
        for k in 0..<10 {
            s += "<rect x=\"\(n(lx))\" y=\"\(n(barTop + Double(9 - k) * barH / 10))\" width=\"14\" height=\"\(n(barH / 10))\" fill=\"\(Self.shade(Double(k) / 9))\"/>"
        }
        let pct = maxShare * 100
        let step = FigureLayout.niceStep(span: pct, maxTicks: 6)
        for v in FigureLayout.ticks(from: 0, to: pct, maxTicks: 6) {
            let yv = barTop + barH - v / pct * barH
            s += "<line x1=\"\(n(lx + 14))\" y1=\"\(n(yv))\" x2=\"\(n(lx + 18))\" y2=\"\(n(yv))\" stroke=\"#444\"/><text class=\"scale\" x=\"\(n(lx + 21))\" y=\"\(n(yv + 4))\" font-size=\"10\">\(FigureLayout.tickLabel(v, step: step)) %</text>"
        }
        // Cells above the scale's top are drawn at the darkest shade: the top tick says "or more".
        if clipped { s += "<text x=\"\(n(lx))\" y=\"\(n(barTop - 6))\" font-size=\"10\">darkest: ≥ \(Format.readable(pct, significant: 2)) %</text>" }
        s += "\n<text x=\"\(n(lx))\" y=\"\(n(barTop + barH + 16))\" font-size=\"10\">share of the distance's</text><text x=\"\(n(lx))\" y=\"\(n(barTop + barH + 28))\" font-size=\"10\">readings per \(Format.exact(binDb)) dB</text>\n"
        s += "<circle cx=\"\(n(lx + 7))\" cy=\"\(n(barTop + barH + 50))\" r=\"3\" fill=\"#ff7f0e\" stroke=\"black\"/><text x=\"\(n(lx + 20))\" y=\"\(n(barTop + barH + 54))\">median</text>\n"
        if analysis.fit != nil {
            s += "<line x1=\"\(n(lx))\" y1=\"\(n(barTop + barH + 72))\" x2=\"\(n(lx + 14))\" y2=\"\(n(barTop + barH + 72))\" stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"\(n(lx + 20))\" y=\"\(n(barTop + barH + 76))\">fit</text>\n"
        }
        s += AttenuationPlot.closeContactLegend(analysis.options.closeContactDistance, x: lx - 4, y: barTop + barH + 96)
        if sparse > 0 {
            s += "<text x=\"\(n(lx))\" y=\"\(n(barTop + barH + 124))\" font-size=\"10\">faded: \(sparse) column\(sparse == 1 ? "" : "s") with</text><text x=\"\(n(lx))\" y=\"\(n(barTop + barH + 136))\" font-size=\"10\">fewer than \(Self.minimumColumnCount) readings</text>\n"
        }
        s += "<text x=\"\(n(lx))\" y=\"\(n(barTop + barH + 152))\" font-size=\"10\">n: readings per column</text>\n"
        s += FigureLayout.footer(caption, x: 8, y: Self.height - 8)
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
    /// The footer line naming the data (FigureLayout.footer).
    public var caption: String?

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
        let W = b.width, H = AttenuationPlot.height
        let left = AttenuationPlot.left, plotRight = left + AttenuationPlot.plotWidth, top = AttenuationPlot.top, plotBottom = H - AttenuationPlot.bottom
        func y(_ r: Double) -> Double { top + (yMax - r) / (yMax - yMin) * (plotBottom - top) }
        var s = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(W))" height="\(Int(H))" viewBox="0 0 \(Int(W)) \(Int(H))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(W))" height="\(Int(H))" fill="white"/>
        <text x="\(n(left))" y="22" font-size="15">Residuals of the log-distance fit\(b.site.map { " – " + AttenuationPlot.escape($0) } ?? "")</text>
        <rect x="\(n(left))" y="\(n(top))" width="\(n(plotRight - left))" height="\(n(plotBottom - top))" fill="none" stroke="#888"/>

        """
        for d in AttenuationPlot.distanceTicks(b.xMin, b.xMax) {
            let xv = b.x(d)
            s += "<line x1=\"\(n(xv))\" y1=\"\(n(top))\" x2=\"\(n(xv))\" y2=\"\(n(plotBottom))\" stroke=\"#eee\"/>"
            s += "<text x=\"\(n(xv))\" y=\"\(n(plotBottom + 18))\" text-anchor=\"middle\">\(AttenuationPlot.distanceLabel(d))</text>\n"
        }
        var t = yMin
        while t <= yMax + 1e-9 {
            s += "<line x1=\"\(n(left - 5))\" y1=\"\(n(y(t)))\" x2=\"\(n(plotRight))\" y2=\"\(n(y(t)))\" stroke=\"\(t == 0 ? "#444" : "#eee")\"/>"
            s += "<text x=\"\(n(left - 8))\" y=\"\(n(y(t) + 4))\" text-anchor=\"end\">\(Int(t))</text>\n"
            t += yMax > 30 ? 10 : 5
        }
        s += "<text x=\"\(n((left + plotRight) / 2))\" y=\"\(n(plotBottom + 40))\" text-anchor=\"middle\">distance (m, log scale)</text>\n"
        s += "<text transform=\"translate(18 \(n((top + plotBottom) / 2))) rotate(-90)\" text-anchor=\"middle\">attenuation - fit (dB)</text>\n"
        s += AttenuationPlot.closeContactLine(analysis.options.closeContactDistance, x: b.x, xMin: b.xMin, xMax: b.xMax, top: top, bottom: plotBottom)
        s += AttenuationPlot.counts(analysis.distances.map { (b.x(max($0.distance, analysis.options.minimumDistance)), $0.count) }, top: top)
        s += "<g fill-opacity=\"0.3\">\n"
        for (k, p) in b.points.enumerated() {
            let dx = b.jitter ? pow(10, 0.017 * AttenuationPlot.offset(k, 1)) : 1, dy = b.jitter ? 0.4 * AttenuationPlot.offset(k, 2) : 0
            let colour = b.pairsColoured ? AttenuationPlot.palette[b.pointPairs[k] % AttenuationPlot.palette.count] : AttenuationPlot.palette[0]
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
        var ly = top + 60
        s += AttenuationPlot.closeContactLegend(analysis.options.closeContactDistance, x: lx, y: ly)
        ly += 8
        s += b.legendPairs(x: lx, y: &ly)
        s += FigureLayout.footer(caption, x: 8, y: H - 8)
        return s + "</svg>\n"
    }
}
