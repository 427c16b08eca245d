import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The Tobit fit over scans: scans that did not hear a present transmitter are censored
/// observations, and with them the fit recovers a channel that least squares flattens.
@Suite struct TobitTests {
    static let distances = [0.5, 1, 2, 4, 8, 16]

    /// Per scan and transmitter, y ~ N(60 + 20 log10 d, 6); heard when y <= 75.
    static func draws(scans: Int, seed: UInt64 = 11) -> [[Double]] {
        var rng = SeededRandom(seed: seed)
        return (0..<scans).map { _ in distances.map { d in 60 + 20 * log10(d) + 6 * Simulator.gaussian(&rng) } }
    }

    @Test func recoversTheSlopeThatOLSFlattens() throws {
        var heard: [(x: Double, y: Double, count: Int)] = []
        var censored: [Double: Int] = [:]
        for row in Self.draws(scans: 600) {
            for (i, y) in row.enumerated() {
                let x = log10(Self.distances[i])
                if y <= 75 { heard.append((x, y, 1)) } else { censored[x, default: 0] += 1 }
            }
        }
        #expect(censored.values.reduce(0, +) > 600) // the far end is mostly lost
        let ols = try LinearFit(weighted: heard)
        let t = try #require(TobitFit(heard: heard, censored: censored.map { ($0.key, $0.value) }, limit: 75))
        #expect(ols.slope < 15, "OLS slope \(ols.slope)")
        #expect(abs(t.slopePerDecade - 20) < 1, "Tobit slope \(t.slopePerDecade)")
        #expect(abs(t.attenuationAt1m - 60) < 0.8 && abs(t.sigma - 6) < 0.5, "\(t)")
        // Without the censored scans it is just OLS on what was heard: no better.
        let blind = try #require(TobitFit(heard: heard, censored: [], limit: 75))
        #expect(abs(blind.slopePerDecade - ols.slope) < 0.05)
    }

    /// A matcher for the test: the RPI's first byte names the transmitter, attenuation = -rssi.
    struct ByteMatcher: SightingMatcher {
        func match(_ sightings: [SightingRow], against transmitters: [TransmitterKeys]) throws -> MatchResult {
            var out: [MatchedSighting] = []
            for (i, s) in sightings.enumerated() {
                guard let rpi = s.rpi, let rssi = s.rssi else { continue }
                out.append(MatchedSighting(sightingIndex: i, transmitter: Int(rpi.bytes[0]), txPower: 0, calibrationConfidence: nil,
                                           attenuation: Double(-rssi)))
            }
            return MatchResult(matches: out, implausibleMetadata: 0, outsideValidity: 0)
        }
    }

    /// Through the report's stream: scans from a sightings export (empty scans included),
    /// ground truth from pair markers; the unheard (scan, transmitter) pairs are the censored
    /// observations, and the report writes the Tobit fit beside OLS.
    @Test func theReportCountsUnheardScansAsCensored() throws {
        let names = Self.distances.indices.map { "tx\($0)" }
        var markers: [Marker] = []
        for (i, d) in Self.distances.enumerated() { markers.append(Marker(time: 0, label: "m", distance: d, receiver: "rx", transmitter: names[i])) }
        var rows: [SightingRow] = []
        var heardCount = 0, censoredCount = 0
        for (k, row) in Self.draws(scans: 500, seed: 5).enumerated() {
            let start = 1_000 + Double(k) * 300
            var any = false
            for (i, y) in row.enumerated() {
                guard y.rounded() <= 75 else { censoredCount += 1; continue }
                heardCount += 1
                any = true
                // Two readings of the same value: the scan's mean is the value.
                for j in 0..<2 {
                    rows.append(SightingRow(time: start + Double(j), rpi: try RollingProximityIdentifier(bytes: Data([UInt8(i)] + Array(repeating: 0, count: 15))),
                                            aem: try AssociatedEncryptedMetadata(bytes: Data(count: 4)), rssi: -Int(y.rounded()),
                                            scanStart: start, scanEnd: start + 4, rssiCorrection: 0, node: "rx", site: nil, address: nil))
                }
            }
            if !any {
                rows.append(SightingRow(time: start, rpi: nil, aem: nil, rssi: nil, scanStart: start, scanEnd: start + 4, rssiCorrection: 0,
                                        node: "rx", site: nil, address: nil))
            }
        }
        let stream = TrialStream(transmitters: names.map { TransmitterKeys(name: $0, keys: []) }, groundTruth: GroundTruth(markers: markers),
                                 matcher: ByteMatcher())
        try stream.addSightings(Array(rows[..<(rows.count / 2)]))
        try stream.addSightings(Array(rows[(rows.count / 2)...]))
        let report = stream.report(options: AnalysisOptions())
        let t = try #require(report.tobitFit)
        #expect(t.heardScans == heardCount && t.censoredScans == censoredCount)
        #expect(t.limitDb == 75.5)
        #expect(abs(t.slopePerDecade - 20) < 1.5, "Tobit \(t.slopePerDecade)")
        let ols = try #require(report.analysis.fit)
        #expect(ols.slopePerDecade < 17, "OLS \(ols.slopePerDecade)") // flattened by the lost scans
        // Written beside the other fits.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tobit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try TrialReportWriter.write(report, tally: stream.tally, to: dir)
        let csv = try String(contentsOf: dir.appendingPathComponent("tobit.csv"), encoding: .utf8)
        #expect(csv.contains("slope_db_per_decade,\(Format.fixed(t.slopePerDecade, 3))") && csv.contains("censored_scans,\(censoredCount)"))
        #expect(try String(contentsOf: dir.appendingPathComponent("report.md"), encoding: .utf8).contains("Tobit fit over scans"))
        for svg in ["heatmap.svg", "residuals.svg"] {
            let text = try String(contentsOf: dir.appendingPathComponent(svg), encoding: .utf8)
            #expect(text.hasPrefix("<svg") && text.hasSuffix("</svg>\n"), "\(svg)")
        }
    }
}
