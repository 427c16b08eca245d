import Foundation
import TrialFormats

/// Recall and precision against the attenuation threshold (sweep.svg): where a threshold trades
/// missed close contacts for false alarms at this site.
public struct SweepPlot {
    let analysis: ChannelAnalysis
    let site: String?
    /// The footer line naming the data (FigureLayout.footer).
    public var caption: String?
    static let width = 720.0, height = 440.0, left = 60.0, right = 150.0, top = 40.0, bottom = 70.0

    public init(analysis: ChannelAnalysis, site: String?) { self.analysis = analysis; self.site = site }

    public func svg() -> String {
        let rows = analysis.sweep
        let lo = rows.first?.thresholdDb ?? 40, hi = max(rows.last?.thresholdDb ?? 100, lo + 1)
        let plotRight = Self.width - Self.right, plotBottom = Self.height - Self.bottom
        func x(_ t: Double) -> Double { Self.left + (t - lo) / (hi - lo) * (plotRight - Self.left) }
        func y(_ v: Double) -> Double { plotBottom - v * (plotBottom - Self.top) }
        func n(_ v: Double) -> String { Format.fixed(v, 1) }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(Self.width))\" height=\"\(Int(Self.height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        s += "<text x=\"\(n(Self.left))\" y=\"22\" font-size=\"14\">Recall and precision by threshold\(site.map { " — " + AttenuationPlot.escape($0) } ?? "")</text>\n"
        s += "<rect x=\"\(n(Self.left))\" y=\"\(n(Self.top))\" width=\"\(n(plotRight - Self.left))\" height=\"\(n(plotBottom - Self.top))\" fill=\"none\" stroke=\"#444\"/>\n"
        for k in 0...5 {
            let v = Double(k) / 5
            s += "<line x1=\"\(n(Self.left))\" y1=\"\(n(y(v)))\" x2=\"\(n(plotRight))\" y2=\"\(n(y(v)))\" stroke=\"#eee\"/>"
            s += "<text x=\"\(n(Self.left - 6))\" y=\"\(n(y(v) + 4))\" text-anchor=\"end\">\(Int(v * 100)) %</text>\n"
        }
        // Ticks on round numbers (5, 10, 20 dB steps), never on the data's own first threshold.
        let ticks = FigureLayout.ticks(from: lo, to: hi, maxTicks: 9)
        let step = FigureLayout.niceStep(span: hi - lo, maxTicks: 9)
        for t in ticks {
            s += "<line x1=\"\(n(x(t)))\" y1=\"\(n(plotBottom))\" x2=\"\(n(x(t)))\" y2=\"\(n(plotBottom + 5))\" stroke=\"#444\"/>"
            s += "<text class=\"tick\" x=\"\(n(x(t)))\" y=\"\(n(plotBottom + 18))\" text-anchor=\"middle\">\(FigureLayout.tickLabel(t, step: step))</text>\n"
        }
        s += "<text x=\"\(n((Self.left + plotRight) / 2))\" y=\"\(n(plotBottom + 38))\" text-anchor=\"middle\">threshold: attenuation at most (dB)</text>\n"
        for (name, colour, value) in [("recall (TPR)", "#1f77b4", { (r: SweepRow) in r.recall }), ("precision", "#d62728", { (r: SweepRow) in r.precision }),
                                      ("false positive rate", "#7f7f7f", { (r: SweepRow) in r.falsePositiveRate })] {
            let pts = rows.filter { !value($0).isNaN }
            guard !pts.isEmpty else { continue }
            let d = pts.enumerated().map { i, r in "\(i == 0 ? "M" : "L")\(n(x(r.thresholdDb))) \(n(y(value(r))))" }.joined(separator: " ")
            s += "<path d=\"\(d)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"><title>\(name)</title></path>\n"
        }
        // Threshold labels as given (57.5 stays 57.5), stacked in rows so that none runs into another.
        let shown = analysis.options.thresholds.filter { $0 >= lo && $0 <= hi }
        let labels = shown.map { "\(Format.readable($0, significant: 6)) dB" }
        let spans = zip(shown, labels).map { (lo: x($0) + 3, hi: x($0) + 3 + FigureLayout.textWidth($1, size: 11)) }
        let labelRows = FigureLayout.rows(spans, gap: 4)
        for (i, th) in shown.enumerated() {
            s += "<line x1=\"\(n(x(th)))\" y1=\"\(n(Self.top))\" x2=\"\(n(x(th)))\" y2=\"\(n(plotBottom))\" stroke=\"#c60\" stroke-dasharray=\"2 4\"/>"
            s += "<text class=\"threshold\" x=\"\(n(spans[i].lo))\" y=\"\(n(Self.top + 12 + 15 * Double(labelRows[i])))\" fill=\"#c60\" font-size=\"11\">\(labels[i])</text>\n"
        }
        var ly = Self.top + 10
        for (name, colour) in [("recall (TPR)", "#1f77b4"), ("precision", "#d62728"), ("false positive rate", "#7f7f7f")] {
            s += "<line x1=\"\(n(plotRight + 12))\" y1=\"\(n(ly))\" x2=\"\(n(plotRight + 32))\" y2=\"\(n(ly))\" stroke=\"\(colour)\" stroke-width=\"2\"/>"
            s += "<text x=\"\(n(plotRight + 38))\" y=\"\(n(ly + 4))\">\(name)</text>\n"
            ly += 20
        }
        s += "<line x1=\"\(n(plotRight + 12))\" y1=\"\(n(ly))\" x2=\"\(n(plotRight + 32))\" y2=\"\(n(ly))\" stroke=\"#c60\" stroke-dasharray=\"2 4\"/>"
        s += "<text x=\"\(n(plotRight + 38))\" y=\"\(n(ly + 4))\">report thresholds</text>\n"
        // Close contact is the ground truth behind every rate here; it has no axis, so the legend says it.
        s += "<text class=\"close-contact\" x=\"\(n(plotRight + 12))\" y=\"\(n(ly + 26))\">close: ≤ \(Format.readable(analysis.options.closeContactDistance, significant: 4)) m</text>\n"
        s += FigureLayout.footer(caption, x: 8, y: Self.height - 8)
        return s + "</svg>\n"
    }
}
