import ENProtocol
import Foundation
import Testing
@testable import TrialKit

/// `trial report` streams: files read in pieces, sightings tallied by distinct value. The
/// numbers must be exactly those of the sightings one by one.
@Suite struct StreamingReportTests {
    /// Observations with whole-dB and fractional attenuations at a few distances, several pairs.
    static func observations(_ n: Int, seed: UInt64 = 7) -> [Observation] {
        var rng = SeededRandom(seed: seed)
        let distances = [0.05, 0.5, 1, 1.5, 2, 3.25, 5, 8]
        return (0..<n).map { i in
            let d = distances[Int(rng.next() % UInt64(distances.count))]
            let a = (60 + 20 * log10(max(d, 0.1)) + Double(Int(rng.next() % 21)) - 10) + (i % 7 == 0 ? 0.25 : 0)
            return Observation(time: Double(i), receiver: "rx\(i % 3)", transmitter: "tx\(i % 4)", distance: d, attenuation: a)
        }
    }

    @Test func tallyGivesTheStatisticsOfTheRowsOneByOne() throws {
        let obs = Self.observations(5000)
        let a = ChannelAnalysis(observations: obs)
        // The fit of the grouped values is the fit of the points (to rounding of the sums).
        let direct = try LinearFit(points: obs.map { (log10(max($0.distance, 0.1)), $0.attenuation) })
        let f = try #require(a.fit)
        #expect(abs(f.slopePerDecade - direct.slope) < 1e-9 && abs(f.attenuationAt1m - direct.intercept) < 1e-9)
        #expect(abs(f.sigma - direct.residualSigma) < 1e-9 && abs(f.rSquared - direct.rSquared) < 1e-12 && f.count == direct.count)
        // Quantiles and means per distance, as Statistics computes them on the raw values.
        for d in a.distances {
            let raw = obs.filter { $0.distance == d.distance }.map(\.attenuation).sorted()
            #expect(d.count == raw.count)
            for (got, p) in [(d.q1, 0.25), (d.median, 0.5), (d.q3, 0.75)] { #expect(got == Statistics.quantile(sorted: raw, p)) }
            #expect(abs(d.mean - Statistics.mean(raw)) < 1e-9 && d.min == raw.first && d.max == raw.last)
        }
        // Detection counts and the sweep, counted directly.
        for r in a.detection {
            #expect(r.truePositives == obs.filter { $0.distance <= 2 && $0.attenuation <= r.thresholdDb }.count)
            #expect(r.falsePositives == obs.filter { $0.distance > 2 && $0.attenuation <= r.thresholdDb }.count)
        }
        for r in a.sweep {
            #expect(r.truePositives == obs.filter { $0.distance <= 2 && $0.attenuation <= r.thresholdDb }.count)
        }
        // Per-pair medians.
        for g in a.pairs {
            let raw = obs.filter { $0.receiver == g.receiver && $0.transmitter == g.transmitter }.map(\.attenuation).sorted()
            #expect(g.count == raw.count && g.medianAttenuation == Statistics.quantile(sorted: raw, 0.5))
        }
        // The order rows come in changes nothing the report prints.
        let shuffled = obs.reversed().map { $0 }
        #expect(try TrialReportWriter.jsonData(TrialReport(site: nil, counts: .init(), observations: obs, options: .init()))
                == TrialReportWriter.jsonData(TrialReport(site: nil, counts: .init(), observations: shuffled, options: .init())))
    }

    /// The report's site is known before the rows stream: the first row with a site among a
    /// file's first bytes (whole rows only), so every attenuation row can carry it.
    @Test func firstSiteIsReadFromTheHeadOfTheFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("site-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent("s.csv")
        var text = "time,rpi,aem,rssi,node,site\n1,,,,\"n,1\",\n"
        for i in 0..<50 { text += "\(2 + i),\(String(repeating: "ab", count: 16)),01020304,-60,n,\"bus, 7\"\n" }
        try Data(text.utf8).write(to: url)
        #expect(SightingsExport.firstSite(url) == "bus, 7")
        #expect(SightingsExport.firstSite(url, peekBytes: 120) == "bus, 7") // cut after the first whole row with a site
        #expect(SightingsExport.firstSite(url, peekBytes: 40) == nil) // no whole row with a site that early
        #expect(SightingsExport.firstSite(dir.appendingPathComponent("missing.csv")) == nil)
    }

    @Test func plotSampleStaysBounded() {
        var tally = ObservationTally()
        for o in Self.observations(200_000) { tally.add(o) }
        #expect(tally.sample.points.count >= PlotSample.maximumPoints && tally.sample.points.count <= 2 * PlotSample.maximumPoints)
        #expect(tally.sample.minDistance == 0.05 && tally.sample.maxDistance == 8)
        // Memory follows distinct values: 8 distances x 12 pairs x (21 whole + 21 fractional) at most.
        #expect(tally.entries().count <= 8 * 12 * 42)
    }

    /// Pieces cut anywhere (quoted node names with a comma, quotes and a newline inside) give the rows
    /// of the whole file, and an error names the file's own line.
    @Test(arguments: [false, true]) func piecesReadLikeTheWholeFile(jsonLines: Bool) throws {
        let writer = SightingsFileWriter(format: jsonLines ? .jsonl : .csv)
        var text = writer.header
        for i in 0..<400 {
            text += writer.row(SightingsRecord(time: 1_795_132_800 + Double(i), rpi: try RollingProximityIdentifier(bytes: Data(repeating: UInt8(i % 256), count: 16)),
                                               aem: try AssociatedEncryptedMetadata(bytes: Data(repeating: 1, count: 4)), rssi: -60 - i % 30,
                                               scanStart: 1_795_132_800, scanEnd: 1_795_132_804, rssiCorrection: 0,
                                               node: i % 5 == 0 ? "odd, \"node\"\nname" : (i % 7 == 0 ? "one \" quote" : "n"), site: "s", address: nil))
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pieces-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent("s")
        try Data(text.utf8).write(to: url)
        let whole = try SightingsFile.records(Data(text.utf8))
        for size in [50, 333, 4096, 1 << 20] {
            var rows: [SightingRow] = []
            var pieces = 0
            try SightingsExport.forEachPiece(url, pieceBytes: size) { rows += $0; pieces += 1 }
            #expect(rows == whole, "piece size \(size)")
            if size < 1000 { #expect(pieces > 10) }
        }
        // A bad field on line 301 (header is line 1 in CSV).
        var lines = text.components(separatedBy: "\n")
        let bad = jsonLines ? 300 : 300 + 60 // CSV: the quoted names hold a newline each (60 of them before); the reader counts rows
        lines[bad] = lines[bad].replacingOccurrences(of: "-", with: "x", options: [], range: nil)
        try Data(lines.joined(separator: "\n").utf8).write(to: url)
        var wholeError = "", pieceError = ""
        do { _ = try SightingsExport.read(url) } catch { wholeError = "\(error)" }
        do { try SightingsExport.forEachPiece(url, pieceBytes: 500) { _ in } } catch { pieceError = "\(error)" }
        #expect(!wholeError.isEmpty && wholeError == pieceError, "\(wholeError) | \(pieceError)")
    }
}
