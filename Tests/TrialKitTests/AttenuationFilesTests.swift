import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// `trial report --attenuations` reads files in pieces on worker threads (AttenuationFiles):
/// the report directory must be byte for byte the one of reading the rows one by one.
@Suite struct AttenuationFilesTests {
    /// A tree of attenuation files in the shapes the report takes: its own attenuation.csv
    /// (exact decimals, site, rpi), another tool's columns in another order with a
    /// calibration_tx, rows without a distance (markers give it), names that need quoting (a
    /// comma, a doubled quote, a newline), CRLF and blank lines, rows of another site, rows
    /// before the first site, a gzip copy and JSON lines.
    static func tree(in dir: URL) throws -> [URL] {
        var rng = SeededRandom(seed: 22)
        let distances = [0.5500000000000007, 1, 1.5, 2, 3.25, 6.365728552176884]
        func r(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        var own = TrialReportWriter.attenuationHeader.joined(separator: ",") + "\n"
        for i in 0..<3000 {
            let d = distances[r(distances.count)]
            let a = Double(40 + r(40)) + (i % 5 == 0 ? 0.25 : 0) + (i % 11 == 0 ? 0.1 : 0)
            let rpi = i % 7 == 0 ? "" : String(format: "%032x", i)
            own += "\(Format.time(1_700_000_000 + Double(i) * 37.125)),board-\(r(12)),board-\(r(12)),\(Format.exact(d)),\(Format.exact(a)),"
            own += "\(i < 10 ? "" : "hall"),\(rpi),\(i % 3 == 0 ? "" : "-30"),\(-60 - r(30)),\(i % 4 == 0 ? "" : "5")\n"
        }
        var other = "attenuation,time,transmitter,receiver,calibration_tx,tx_power,site\r\n"
        for i in 0..<2000 {
            let rx = ["a,b", "say \"\"hi\"\"", "line\nbreak", "plain"][r(4)]
            let q = rx == "plain" ? rx : "\"\(rx)\""
            let site = i % 9 == 0 ? "annex" : (i % 13 == 0 ? "" : "hall")
            other += "\(50 + r(30)).5,\(1_700_000_000 + i * 60),tx-\(r(3)),\(q),-24,0,\(site)\r\n"
            if i % 100 == 0 { other += "\r\n" }
        }
        var late = "time,attenuation,receiver,transmitter,distance\n"
        for i in 0..<500 { late += "\(1_700_100_000 + i),\(60 + r(20)),rx-9,tx-9,\(i % 2 == 0 ? "" : "4")\n" }
        var json = ""
        for i in 0..<300 {
            json += "{\"time\":\(1_700_200_000 + i),\"receiver\":\"j\",\"transmitter\":\"k\",\"distance\":\(i % 3 == 0 ? "null" : "2.5"),\"attenuation\":\(55 + i % 20)}\n"
        }
        let files: [(String, String)] = [("late.csv", late), ("own.csv", own), ("other.csv", other), ("rows.jsonl", json)]
        var urls: [URL] = []
        for (name, text) in files {
            let url = dir.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            urls.append(url)
        }
        let gz = dir.appendingPathComponent("own-copy.csv.gz")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "gzip -c \"$0\" > \"$1\"", urls[1].path, gz.path]
        try p.run(); p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        urls.insert(gz, at: 3)
        return urls
    }

    static let markers = [Marker(time: 1_700_000_000, label: "start", distance: 3, note: ""),
                          Marker(time: 1_700_100_200, label: "away", distance: nil, note: ""),
                          Marker(time: 1_700_100_300, label: "back", distance: 1.25, note: "")]

    /// The report directory as written row by row (onObservation), or by addAttenuationFiles.
    static func report(_ urls: [URL], into dir: URL, site: String?, daily: Bool, jsonLines: Bool, pieces: Bool, pieceSize: Int = 1000) throws {
        let stream = TrialStream(transmitters: [], groundTruth: GroundTruth(markers: markers), site: site)
        let rows = try AttenuationRowsWriter(reportDirectory: dir, daily: daily, jsonLines: jsonLines)
        if pieces {
            try stream.addAttenuationFiles(urls, rows: rows, pieceSize: pieceSize, threads: 2)
        } else {
            stream.onObservation = { try rows.append($0, site: stream.rowSite ?? stream.site) }
            for u in urls { try stream.addAttenuations(fileAt: u) }
        }
        try rows.commit()
        try TrialReportWriter.write(stream.report(options: AnalysisOptions()), tally: stream.tally, to: dir)
    }

    static func files(_ dir: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.isRegularFileKey])!
        for case let u as URL in e where (try u.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            out[String(u.path.dropFirst(dir.path.count))] = try Data(contentsOf: u)
        }
        return out
    }

    @Test(arguments: [(nil, false, false), ("hall", false, false), (nil, true, false), (nil, false, true), ("hall", true, true)] as [(String?, Bool, Bool)])
    func piecesOnThreadsWriteTheReportOfTheRowsOneByOne(site: String?, daily: Bool, jsonLines: Bool) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("att-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let urls = try Self.tree(in: dir)
        let one = dir.appendingPathComponent("one"), many = dir.appendingPathComponent("many")
        try Self.report(urls, into: one, site: site, daily: daily, jsonLines: jsonLines, pieces: false)
        try Self.report(urls, into: many, site: site, daily: daily, jsonLines: jsonLines, pieces: true)
        let a = try Self.files(one), b = try Self.files(many)
        #expect(a.keys.sorted() == b.keys.sorted())
        #expect(a.count >= 14)
        for (name, data) in a { #expect(b[name] == data, "\(name) differs") }
        // The fixture exercises what it claims: quoted names, rows without ground truth, the site.
        let report = try #require(String(data: a["/report.json"]!, encoding: .utf8))
        #expect(report.contains("line\\nbreak") && report.contains("\"withoutGroundTruth\" : 52"))
        // Whole-file pieces and single-row pieces give the same bytes too.
        for size in [1 << 20, 1] {
            let other = dir.appendingPathComponent("size-\(size)")
            try Self.report(urls, into: other, site: site, daily: daily, jsonLines: jsonLines, pieces: true, pieceSize: size)
            #expect(try Self.files(other) == a)
        }
    }

    /// A bad value in a later piece is reported with its file line, and the one of the first
    /// bad row in input order, whichever thread finds it first.
    @Test func theFirstBadRowIsReportedWithItsLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("att-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var text = "time,attenuation,distance\n"
        for i in 0..<400 { text += "\(i),\(i == 301 ? "-127" : "60"),1\n" }
        let a = dir.appendingPathComponent("a.csv"), b = dir.appendingPathComponent("b.csv")
        try Data(text.utf8).write(to: a)
        try Data("time,attenuation\n1,x\n".utf8).write(to: b)
        func message(_ pieces: Bool) -> String {
            do {
                try Self.report([a, b], into: dir.appendingPathComponent(pieces ? "p" : "o"), site: nil, daily: false, jsonLines: false,
                                pieces: pieces, pieceSize: 100)
                return "no error"
            } catch { return String(describing: error) }
        }
        #expect(message(true) == message(false))
        #expect(message(true).hasPrefix("\(a.path):303: column 'attenuation'"))
    }

    /// A pooled report (no --site) over several sites: each row written keeps the site its input
    /// row names; a row naming none takes the report's (the first site seen, once seen), on both paths.
    @Test(arguments: [false, true]) func pooledRowsKeepTheirOwnSite(pieces: Bool) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("att-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var text = "time,attenuation,distance,site\n"
        let sites = ["", "hall", "annex", "annex", "\"a, b\"", ""]
        for i in 0..<600 { text += "\(1_700_000_000 + i),\(50 + i % 30),2,\(sites[i % sites.count])\n" }
        let url = dir.appendingPathComponent("pooled.csv")
        try Data(text.utf8).write(to: url)
        let out = dir.appendingPathComponent("out")
        try Self.report([url], into: out, site: nil, daily: false, jsonLines: false, pieces: pieces, pieceSize: 300)
        let rows = try CSVReader(contentsOf: out.appendingPathComponent("attenuation.csv"))
        let c = try #require(rows.column("site"))
        var written: [String] = []
        try rows.forEachRow { written.append($0.string(c)) }
        // A row naming no site takes the report's once it is known (the first site seen); the
        // very first row comes before any.
        let want = (0..<600).map { i in i == 0 ? "" : ["hall", "hall", "annex", "annex", "a, b", "hall"][i % 6] }
        #expect(written == want)
    }

    /// The same from JSON lines (attenuation.jsonl as a report writes it): a line's "site" is
    /// its own, and --site keeps only that site's lines.
    @Test(arguments: [false, true]) func jsonLinesRowsKeepTheirOwnSite(pieces: Bool) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("att-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let sites = ["", "hall", "annex", "annex", "a, b", ""]
        var text = ""
        for i in 0..<600 {
            let site = sites[i % sites.count]
            text += "{\"time\":\(1_700_000_000 + i),\"attenuation\":\(50 + i % 30),\"distance\":2" + (site.isEmpty ? "" : ",\"site\":\"\(site)\"") + "}\n"
        }
        let url = dir.appendingPathComponent("pooled.jsonl")
        try Data(text.utf8).write(to: url)
        func written(site: String?) throws -> [String] {
            let out = dir.appendingPathComponent("out-\(site ?? "all")")
            try Self.report([url], into: out, site: site, daily: false, jsonLines: false, pieces: pieces, pieceSize: 300)
            let rows = try CSVReader(contentsOf: out.appendingPathComponent("attenuation.csv"))
            let c = try #require(rows.column("site"))
            var w: [String] = []
            try rows.forEachRow { w.append($0.string(c)) }
            return w
        }
        let want = (0..<600).map { i in i == 0 ? "" : ["hall", "hall", "annex", "annex", "a, b", "hall"][i % 6] }
        #expect(try written(site: nil) == want)
        // Only annex's lines, and the lines naming no site (as for a CSV: they are the site's).
        let annex = (0..<600).filter { sites[$0 % 6] == "annex" || sites[$0 % 6].isEmpty }.count
        #expect(try written(site: "annex") == Array(repeating: "annex", count: annex))
    }

    @Test func rowEndsOutsideQuotes() {
        func cut(_ s: String) -> Int? { PieceReader.lastRowEnd(Array(s.utf8)) }
        #expect(cut("a,b\nc,d") == 4)
        #expect(cut("a,\"x\ny\"\nb") == 8)
        #expect(cut("a\n\"open\nstill") == 2)
        #expect(cut("a,b\"c\nd") == 6) // a quote inside an unquoted field opens nothing
        #expect(cut("a\n\"x\"\"") == 2) // a doubled quote cut at the end: undecidable here
        #expect(cut("no newline") == nil)
    }
}
