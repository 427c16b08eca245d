import Foundation
import TrialFormats

/// What the report's figures share: tick steps on round numbers, label widths, labels kept
/// apart, and the footer that names the figure's data. The figures are SVG text and no font
/// metrics are at hand, so widths are estimated on the safe side (DejaVu Sans, the usual
/// fallback, averages about 0.55 em per character; 0.62 em is used).
public enum FigureLayout {
    /// Estimated width of `text` at `size` px.
    static func textWidth(_ text: String, size: Double) -> Double { Double(text.count) * size * 0.62 }

    /// The step, 1, 2 or 5 x 10^k, that gives at most `maxTicks` ticks over `span`.
    static func niceStep(span: Double, maxTicks: Int) -> Double {
        guard span > 0, span.isFinite else { return 1 }
        let raw = span / Double(max(1, maxTicks - 1))
        let decade = pow(10, log10(raw).rounded(.down))
        return [1.0, 2, 5, 10].map { $0 * decade }.first { $0 >= raw * 0.999999 } ?? 10 * decade
    }

    /// Ticks on multiples of a round step (niceStep) within lo...hi.
    static func ticks(from lo: Double, to hi: Double, maxTicks: Int) -> [Double] {
        let step = niceStep(span: hi - lo, maxTicks: maxTicks)
        var out: [Double] = []
        var k = (lo / step - 1e-9).rounded(.up)
        while k * step <= hi + step * 1e-9 {
            out.append(Format.cleaned(k * step))
            k += 1
        }
        return out
    }

    /// A tick's label with the decimals its step needs (0.5 steps: "2.5"; 10 steps: "60").
    static func tickLabel(_ v: Double, step: Double) -> String {
        let decimals = max(0, Int((-log10(step)).rounded(.up)))
        return Format.fixed(v == 0 ? 0 : v, decimals)
    }

    /// Rows for intervals so that no two in one row overlap (with `gap` between): each goes to
    /// the first row whose last interval ends before it starts, in the order of their starts.
    static func rows(_ spans: [(lo: Double, hi: Double)], gap: Double) -> [Int] {
        var ends: [Double] = []
        var out = [Int](repeating: 0, count: spans.count)
        for i in spans.indices.sorted(by: { spans[$0].lo < spans[$1].lo }) {
            if let r = ends.firstIndex(where: { $0 + gap <= spans[i].lo }) {
                out[i] = r; ends[r] = spans[i].hi
            } else {
                out[i] = ends.count; ends.append(spans[i].hi)
            }
        }
        return out
    }

    /// The indices kept when labels at `centres` `width` wide must not overlap: left to right,
    /// a label is kept when it starts after the last kept one ends (plus `gap`).
    static func thinned(centres: [Double], widths: [Double], gap: Double) -> [Int] {
        var kept: [Int] = []
        var end = -Double.infinity
        for i in centres.indices.sorted(by: { centres[$0] < centres[$1] }) where centres[i] - widths[i] / 2 >= end + gap {
            kept.append(i); end = centres[i] + widths[i] / 2
        }
        return kept
    }

    /// The footer line naming what the figure was drawn from (empty without a caption).
    static func footer(_ caption: String?, x: Double, y: Double) -> String {
        guard let caption, !caption.isEmpty else { return "" }
        return "<text class=\"caption\" x=\"\(Format.fixed(x, 1))\" y=\"\(Format.fixed(y, 1))\" font-size=\"10\" fill=\"#555\">\(AttenuationPlot.escape(caption))</text>\n"
    }

    /// The colour of the close-contact line in every figure (Okabe-Ito's bluish green: no data
    /// series uses it).
    static let closeContactColour = "#009e73"
}

/// Where a report's data came from, for the figures' footers and report.json: the input files
/// (their names) and the calibration tables the attenuations were computed with, when known.
public struct ReportSources: Sendable, Codable, Equatable {
    public var inputs: [String]
    public var calibration: [String]

    public init(inputs: [String], calibration: [String] = []) { self.inputs = inputs; self.calibration = calibration }

    /// "data: a.csv, b.csv; calibration: Google EN table of 2020-12-01 (en-calibration-2020-12.csv)".
    public var caption: String {
        var names = inputs.map { URL(fileURLWithPath: $0).lastPathComponent }
        if names.count > 4 { names = names.prefix(3) + ["and \(names.count - 3) more files"] }
        var s = "data: " + (names.isEmpty ? "n/a" : names.joined(separator: ", "))
        s += "; calibration: " + (calibration.isEmpty ? "none stated in the input" : calibration.joined(separator: ", "))
        return s
    }
}
