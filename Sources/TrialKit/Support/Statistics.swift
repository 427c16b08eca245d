import Foundation

/// Small descriptive statistics and the least-squares line the trial analysis needs.
/// Written here rather than taken from a package: the offline package set has no statistics
/// library (swift-numerics has no quantiles, regression or normal CDF).
public enum Statistics {
    /// Standard normal cumulative distribution function, Phi(z) = erfc(-z / sqrt 2) / 2.
    public static func normalCDF(_ z: Double) -> Double {
        0.5 * erfc(-z / 2.0.squareRoot())
    }

    /// Quantile of sorted values with linear interpolation between order statistics
    /// (Hyndman & Fan type 7, the default of R and NumPy). `p` in 0...1; NaN for no values.
    public static func quantile(sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let h = Double(sorted.count - 1) * min(max(p, 0), 1)
        let lo = Int(h.rounded(.down))
        let hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (h - Double(lo)) * (sorted[hi] - sorted[lo])
    }

    public static func median(_ values: [Double]) -> Double {
        quantile(sorted: values.sorted(), 0.5)
    }

    public static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
    }

    /// Sample standard deviation (n - 1 in the denominator).
    public static func standardDeviation(_ values: [Double]) -> Double {
        guard values.count > 1 else { return .nan }
        let m = mean(values)
        return (values.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(values.count - 1)).squareRoot()
    }
}

/// Ordinary least squares y = intercept + slope * x, with the residual standard deviation
/// (n - 2 degrees of freedom) and the standard errors of both coefficients.
public struct LinearFit: Sendable, Equatable, Codable {
    public var intercept: Double
    public var slope: Double
    public var residualSigma: Double
    public var interceptStandardError: Double
    public var slopeStandardError: Double
    public var rSquared: Double
    public var count: Int

    public enum FitError: Error, Equatable, CustomStringConvertible {
        case tooFewPoints(needed: Int, actual: Int)
        case noSpreadInX(value: Double)
        public var description: String {
            switch self {
            case .tooFewPoints(let n, let a): return "a line fit needs at least \(n) points, got \(a)"
            case .noSpreadInX(let v):
                return "every point has the same x (\(v)): the slope is undetermined (measure at more than one distance)"
            }
        }
    }

    /// Fits `points` (x, y). Sums are accumulated about the means for numerical stability.
    public init(points: [(x: Double, y: Double)]) throws {
        try self.init(weighted: points.map { ($0.x, $0.y, 1) })
    }

    /// Fits grouped points: (x, y) seen `count` times each (the same fit as the points repeated).
    public init(weighted points: [(x: Double, y: Double, count: Int)]) throws {
        var total = 0
        for p in points { total += p.count }
        let n = total
        guard n >= 3 else { throw FitError.tooFewPoints(needed: 3, actual: n) }
        var sx = 0.0, sy = 0.0
        for p in points { let w = Double(p.count); sx += w * p.x; sy += w * p.y }
        let mx = sx / Double(n), my = sy / Double(n)
        var sxx = 0.0, sxy = 0.0, syy = 0.0
        for p in points {
            let w = Double(p.count), dx = p.x - mx, dy = p.y - my
            sxx += w * dx * dx; sxy += w * dx * dy; syy += w * dy * dy
        }
        guard sxx > 1e-12 * Double(n) else { throw FitError.noSpreadInX(value: mx) }
        slope = sxy / sxx
        intercept = my - slope * mx
        let ssr = max(0, syy - slope * sxy)
        let variance = ssr / Double(n - 2)
        residualSigma = variance.squareRoot()
        slopeStandardError = (variance / sxx).squareRoot()
        interceptStandardError = (variance * (1.0 / Double(n) + mx * mx / sxx)).squareRoot()
        rSquared = syy > 0 ? 1 - ssr / syy : 1
        count = n
    }
}
