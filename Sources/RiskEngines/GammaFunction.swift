#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The regularized lower incomplete gamma function and its inverse, needed for the median of a
/// gamma distribution in the NHS distance estimate. Written here because neither Foundation nor
/// the Swift packages available to the project (swift-numerics has no special functions of this
/// kind) provide them. Series and continued fraction as in standard numerical practice
/// (Abramowitz & Stegun 6.5.29 and 6.5.31); the inverse by safeguarded Halley iteration.
enum GammaFunction {
    /// P(a, x) for a > 0, x >= 0.
    static func regularizedLowerP(_ a: Double, _ x: Double) -> Double {
        guard a > 0, x.isFinite, a.isFinite else { return .nan }
        if x <= 0 { return 0 }
        let logPrefix = a * log(x) - x - lgamma(a)
        if x < a + 1 {
            // Series: P = e^{-x} x^a / Gamma(a+1) * sum x^n / ((a+1)...(a+n)).
            var term = 1.0 / a, sum = term, n = a
            for _ in 0..<10_000 {
                n += 1
                term *= x / n
                sum += term
                if abs(term) < abs(sum) * 1e-16 { break }
            }
            return min(1, sum * exp(logPrefix))
        }
        // Continued fraction for Q (modified Lentz).
        let tiny = 1e-300
        var b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d
        for i in 1..<10_000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            h *= delta
            if abs(delta - 1) < 1e-16 { break }
        }
        return max(0, 1 - exp(logPrefix) * h)
    }

    /// x such that P(a, x) = p; NaN for a <= 0 or p outside [0, 1].
    static func inverseRegularizedLowerP(_ a: Double, _ p: Double) -> Double {
        guard a > 0, a.isFinite, p >= 0, p <= 1 else { return .nan }
        if p == 0 { return 0 }
        if p == 1 { return .infinity }
        // Starting point: Wilson-Hilferty for a >= 1, the small-x power law otherwise.
        var x: Double
        if p == 0.5 && a >= 1 {
            // The median (the only quantile the NHS score needs): Choi's asymptotic series
            // a - 1/3 + 8/(405a) + 184/(25515a^2) + ..., already within ~1e-4 at a = 1, so Halley
            // converges in a step or two.
            x = a - 1.0 / 3 + 8 / (405 * a) + 184 / (25515 * a * a) + 2248 / (3_444_525 * a * a * a)
        } else if a >= 1 {
            let t = sqrt(-2 * log(p < 0.5 ? p : 1 - p))
            var z = t - (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481))
            if p < 0.5 { z = -z }
            x = max(1e-3, a * pow(1 - 1 / (9 * a) + z / (3 * sqrt(a)), 3))
        } else {
            let t = 1 - a * (0.253 + a * 0.12)
            x = p < t ? pow(p / t, 1 / a) : 1 - log(1 - (p - t) / (1 - t))
        }
        let lga: Double = lgamma(a)
        var lo = 0.0, hi = Double.infinity
        for _ in 0..<200 {
            let err = regularizedLowerP(a, x) - p
            if err < 0 { lo = x } else { hi = x }
            let density = exp((a - 1) * log(x) - x - lga)
            var next: Double
            if density > 0 && density.isFinite {
                let u = err / density
                // Halley's correction, bounded so that a poor start cannot overshoot wildly.
                next = x - u / (1 - 0.5 * min(1, u * ((a - 1) / x - 1)))
            } else {
                next = .nan
            }
            if !(next > lo && next < hi) || !next.isFinite {
                next = hi.isFinite ? 0.5 * (lo + hi) : max(2 * x, 1)
            }
            if abs(next - x) <= 1e-15 * max(x, 1e-300) { return next }
            x = next
        }
        return x
    }

    /// Median of the gamma distribution with this shape and scale. Undefined results are replaced
    /// as the NHS implementation does: NaN by 1e-3, infinities by the largest/smallest double.
    static func gammaMedian(shape: Double, scale: Double) -> Double {
        let m = inverseRegularizedLowerP(shape, 0.5) * scale
        if m.isNaN { return 1e-3 }
        if m.isInfinite { return m > 0 ? .greatestFiniteMagnitude : .leastNormalMagnitude }
        return m
    }
}
