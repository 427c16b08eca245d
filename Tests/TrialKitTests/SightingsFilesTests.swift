import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// `trial report --sightings` reads files in pieces on worker threads against one RPI table
/// (SightingsFiles): the report directory must be byte for byte the one of addSightings piece
/// by piece with ProjectMatcher (ENProtocol's matcher), and the first error the same.
@Suite struct SightingsFilesTests {
    /// A simulated trial crossing midnight (daily files, CSV or JSON lines) and a hand-made file
    /// of rows derived from its sightings: 12 intervals late (matched), 13 late (not), a TX
    /// power made implausible, rows without a node (the file's name is the receiver, and has
    /// no ground truth), another site and a site that needs quoting.
    static func trial(in dir: URL, jsonLines: Bool) throws -> (inputs: [TrialStream.SightingsInput], keys: [TransmitterKeys], truth: GroundTruth) {
        let result = try Simulator(scenario: SimulatedTrialTests.lineScenario(seed: 32, hours: 3)).run()
        try result.write(to: dir, daily: true, jsonLines: jsonLines)
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.appendingPathComponent("sightings").path)
            .filter { $0.hasSuffix(jsonLines ? ".jsonl" : ".csv") }.sorted()
        let keyFiles = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("keys").path).sorted()
        let keys = try keyFiles.map { try TrialInputs.readKeys(dir.appendingPathComponent("keys/\($0)").path) }
        let rx = try SightingsExport.read(dir.appendingPathComponent("sightings/\(files.first { $0.hasPrefix("board=rx/") }!)"))
        let table = try RPITable(keys)
        var extra = SightingsExport.Writer()
        for (i, var r) in rx.prefix(3000).enumerated() where r.rpi != nil {
            switch i % 6 {
            case 0: r.time += 12 * 600
            case 1: r.time += 13 * 600
            case 2:
                let e = try #require(table.entry(r.rpi!))
                var aem = [UInt8](r.aem!.bytes)
                aem[1] = try table.txPowerMask(r.rpi!, key: e.key) ^ 0x7f // TX power 127
                r.aem = try AssociatedEncryptedMetadata(bytes: Data(aem))
            case 3: r.node = nil
            case 4: r.site = i % 12 == 4 ? "annex" : "a \"big\", hall"
            default: break
            }
            extra.append(r)
        }
        let extraURL = dir.appendingPathComponent("extra.csv")
        try extra.write(to: extraURL)
        var inputs = files.map { f in
            TrialStream.SightingsInput(url: dir.appendingPathComponent("sightings/\(f)"), receiver: TrialInputs.receiverName(ofSightingsFile: f))
        }
        inputs.insert(.init(url: extraURL, receiver: "extra"), at: 2)
        let truth = GroundTruth(markers: try MarkersFile.read(dir.appendingPathComponent("groundtruth/markers.csv")))
        return (inputs, keys, truth)
    }

    /// The report directory as addSightings writes it (pieces of `pieceSize` bytes read one by
    /// one) or as addSightingsFiles does.
    static func report(_ t: (inputs: [TrialStream.SightingsInput], keys: [TransmitterKeys], truth: GroundTruth), into dir: URL,
                       site: String?, daily: Bool, jsonLines: Bool, threads: Bool, pieceSize: Int = 1000) throws {
        let stream = TrialStream(transmitters: t.keys, groundTruth: t.truth, site: site)
        let rows = try AttenuationRowsWriter(reportDirectory: dir, daily: daily, jsonLines: jsonLines)
        if stream.site == nil { stream.site = t.inputs.lazy.compactMap { SightingsExport.firstSite($0.url) }.first }
        if threads {
            try stream.addSightingsFiles(t.inputs, rows: rows, pieceSize: pieceSize, threads: 2)
        } else {
            // As gaenctl does: a pooled report's rows keep their sighting's site.
            stream.onObservation = { try rows.append($0, site: stream.rowSite ?? stream.site) }
            for input in t.inputs {
                try SightingsExport.forEachPiece(input.url, pieceBytes: 50_000) { try stream.addSightings($0, receiver: input.receiver) }
            }
        }
        try rows.commit()
        try TrialReportWriter.write(stream.report(options: AnalysisOptions()), tally: stream.tally, to: dir, dailyAttenuation: daily, jsonLines: jsonLines)
    }

    @Test(arguments: [(nil, false, false, false), ("test-hall", false, false, false), (nil, true, false, true), (nil, false, true, false),
                      ("annex", true, true, true)] as [(String?, Bool, Bool, Bool)])
    func piecesOnThreadsWriteTheReportOfThePiecesOneByOne(site: String?, daily: Bool, jsonLines: Bool, jsonInput: Bool) throws {
        let dir = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let t = try Self.trial(in: dir.appendingPathComponent("trial"), jsonLines: jsonInput)
        let one = dir.appendingPathComponent("one")
        try Self.report(t, into: one, site: site, daily: daily, jsonLines: jsonLines, threads: false)
        let a = try AttenuationFilesTests.files(one)
        #expect(a.count >= 14)
        // The fixture exercises what it claims: matched rows, rows without ground truth, implausible TX power.
        let report = try #require(String(data: a["/report.json"]!, encoding: .utf8))
        if site != "annex" { #expect(report.contains("\"implausibleMetadata\" : ") && !report.contains("\"implausibleMetadata\" : 0,")) }
        if site == nil { #expect(!report.contains("\"withoutGroundTruth\" : 0\n") && report.contains("a \\\"big\\\", hall")) }
        // A pooled report's attenuation rows keep the site of their own sighting (the extra
        // file's "annex" rows), not the report's first site; with --site only that site's.
        let written = a.filter { $0.key.contains("attenuation") }.values.map { String(decoding: $0, as: UTF8.self) }.joined()
        let annex = jsonLines ? "\"site\":\"annex\"" : ",annex,"
        if site == nil { #expect(written.contains(annex)) }
        if let site { #expect(!written.isEmpty && (site == "annex") == written.contains(annex)) }
        for size in [1000, 1, 1 << 20] {
            let many = dir.appendingPathComponent("many-\(size)")
            try Self.report(t, into: many, site: site, daily: daily, jsonLines: jsonLines, threads: true, pieceSize: size)
            let b = try AttenuationFilesTests.files(many)
            #expect(a.keys.sorted() == b.keys.sorted())
            for (name, data) in a { #expect(b[name] == data, "\(name) differs (pieces of \(size) bytes)") }
        }
    }

    /// The matched rows are those of ProjectMatcher: 12 intervals late is matched, 13 is not.
    @Test func theToleranceIsTheMatchersOwn() throws {
        let dir = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let t = try Self.trial(in: dir, jsonLines: false)
        let rows = try SightingsExport.read(t.inputs[2].url)
        let project = try ProjectMatcher().match(rows, against: t.keys)
        let stream = TrialStream(transmitters: t.keys, groundTruth: t.truth)
        try stream.addSightingsFiles([t.inputs[2]], rows: nil, pieceSize: 4096)
        #expect(stream.counts.matched == project.matches.count && stream.counts.implausibleMetadata == project.implausibleMetadata)
        #expect(project.matches.count > 100 && project.matches.count < rows.count * 5 / 6)
    }

    /// A bad value in a later piece is reported with its file line, as forEachPiece reports it.
    @Test(arguments: [false, true]) func theFirstBadRowIsReportedWithItsLine(header: Bool) throws {
        let dir = try SimulatedTrialTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let t = try Self.trial(in: dir.appendingPathComponent("trial"), jsonLines: !header)
        var text = try String(contentsOf: t.inputs[0].url, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count > 400)
        lines[333] = header ? "1700000000,zz,00000000,-60,,,,rx,," : "{\"time\":\"x\"}"
        text = lines.joined(separator: "\n")
        let bad = dir.appendingPathComponent(header ? "bad.csv" : "bad.jsonl")
        try Data(text.utf8).write(to: bad)
        let inputs = [t.inputs[1], TrialStream.SightingsInput(url: bad, receiver: "bad"), t.inputs[0]]
        func message(_ threads: Bool) -> String {
            do {
                try Self.report((inputs, t.keys, t.truth), into: dir.appendingPathComponent(threads ? "p" : "o"), site: nil, daily: false,
                                jsonLines: false, threads: threads, pieceSize: 700)
                return "no error"
            } catch { return String(describing: error) }
        }
        #expect(message(true) == message(false))
        #expect(message(true).contains("\(bad.path): ") && message(true).contains("334"), "\(message(true))")
    }

    /// The sightings' time fields are read without a String: the value and the refusals must be
    /// those of `Double(String)` under the reader's rules (digits and points, 15 characters at
    /// most, finite, not negative) for every such text.
    @Test func timeFieldsReadAsDoubleReadsThem() {
        func reference(_ s: String) -> Double? {
            guard !s.isEmpty, s.count <= 15, s.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }) else { return nil }
            guard let v = Double(s), v.isFinite, v >= 0 else { return nil }
            return v
        }
        func fast(_ s: String) -> Double? {
            Array(s.utf8).withUnsafeBufferPointer { SightingsPieceParser.decimalSeconds($0) }
        }
        var texts = ["", "0", "5.", ".5", ".", "..", "1.2.3", "0.0", "00000000000001", "999999999999999", "9999999999999999",
                     "99999999999999.9", "0.00000000000001", "1793578407.865", "1793578407.86", "1793578411.86", "1732104000.0005",
                     "1.5e3", "-1", "+1", " 1", "1 ", "1,5", "0x10", "inf", "nan", "1..5", "12.", ".12"]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50_000 {
            let length = Int.random(in: 1...16, using: &rng)
            var digits = (0..<length).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) }
            if Bool.random(using: &rng) { digits[Int.random(in: 0..<length, using: &rng)] = "." }
            texts.append(String(digits))
        }
        for t in texts {
            let (a, b) = (fast(t), reference(t))
            #expect(a?.bitPattern == b?.bitPattern, "\(t): \(String(describing: a)) against \(String(describing: b))")
        }
    }
}
