import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The byte formatters the simulator and the attenuation files build rows with give exactly the
/// text of the `Format` functions the rest of the toolkit writes (the two must never drift: a
/// file would then differ by the path that wrote it).
@Suite struct ByteFormatTests {
    static func text(_ build: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        build(&out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func fixedAndTimeAgreeWithFormatOnEdgesAndRandomValues() {
        var values: [Double] = [0, -0.0, 0.004, 0.005, -0.005, 0.0049999, 1.5, -1.5, 2.675, 9.995, 99.999, -99.999, 1e14, -1e14, 1e16, -1e16,
                                1_732_104_000, 1_732_104_000.0004, 1_732_104_000.0005, 1_732_104_000.25, 1_732_104_000.2, 1_732_104_000.999_6,
                                .nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let magnitude = Double.random(in: -3...10, using: &rng)
            values.append((Bool.random(using: &rng) ? 1 : -1) * pow(10, magnitude) * Double.random(in: 1..<10, using: &rng))
        }
        for v in values {
            for decimals in 0...4 {
                #expect(Self.text { ByteFormat.appendFixed(v, decimals, to: &$0) } == Format.fixed(v, decimals), "fixed(\(v), \(decimals))")
            }
            #expect(Self.text { ByteFormat.appendTime(v, to: &$0) } == Format.time(v), "time(\(v))")
        }
    }

    @Test func integersAgreeWithString() {
        for v: Int64 in [0, 1, -1, 9, 10, -10, 99, 100, -127, Int64.max, Int64.min + 1, Int64.min] {
            #expect(Self.text { ByteFormat.appendInt(v, to: &$0) } == String(v))
        }
    }
}
