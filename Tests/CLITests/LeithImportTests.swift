import Foundation
import Testing
@testable import TrialKit

/// `gaenctl trial import leith DIR`: Leith & Farrell's dataset layout (three text files per
/// dataset) to contacts, on a fixture made in that layout (docs/trial-examples/leith/).
@Suite struct LeithImportTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/trial-examples/leith").standardized

    static func contacts(_ path: String) throws -> [[String: Any]] {
        try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])?["contacts"] as? [[String: Any]])
    }

    @Test func importsEveryRowWithItsDistanceAndRangesAndReplaysWithKnownAnswers() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("c.json").path
        let r = try CLI.run("gaenctl", ["trial", "import", "leith", Self.fixture.path, "--transmission-risk-level", "8", "--date", "2020-06-10", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("5 rows read, 5 written"), "\(r.stderr)")
        #expect(r.stderr.contains("windows dated 2020-06-10 (from --date)"), "\(r.stderr)")
        // The published data carries no report type or infectiousness: the import says what it assumed.
        #expect(r.stderr.contains("4 with report type 1 (CONFIRMED_TEST) assumed") && r.stderr.contains("4 with infectiousness 1 (STANDARD) assumed"), "\(r.stderr)")
        let c = try Self.contacts(out)
        #expect(c.map { $0["label"] as? String } == (1...5).map { "example row \($0): handsets " + ["1-2", "1-3", "2-3", "2-1", "3-1"][$0 - 1] })
        #expect(c.map { $0["distance"] as? Double } == [1, 1.5, 3, 0.5, 4.8])
        func scans(_ i: Int) -> [[Int]] {
            let w = (c[i]["windows"] as? [[String: Any]]) ?? []
            return w.flatMap { ($0["scanInstances"] as? [[String: Any]]) ?? [] }
                .map { [$0["typicalAttenuationDb"] as? Int ?? -1, $0["secondsSinceLastScan"] as? Int ?? -1] }
        }
        // 20 min at 48-50 dB: four 300 s instances at 49 dB; 10 min at 50-52: two at 51.
        #expect(scans(0) == Array(repeating: [49, 300], count: 4))
        #expect(scans(1) == Array(repeating: [51, 300], count: 2))
        // The pair that was never heard stays, without windows.
        #expect((c[3]["windows"] as? [Any])?.isEmpty == true)
        // 2.5 min at 80-85 (midpoint 82.5, half up: 83) and 30 min at 90-100 (95).
        #expect(scans(4) == [[83, 150]] + Array(repeating: [95, 300], count: 6))
        #expect(((c[0]["windows"] as? [[String: Any]])?.first?["transmissionRiskLevel"] as? Int) == 8)
        // Every window on the day given (midnight UTC of 2020-06-10).
        let days = Set(c.flatMap { ($0["windows"] as? [[String: Any]]) ?? [] }.compactMap { ($0["dateMillisSinceEpoch"] as? NSNumber)?.int64Value })
        #expect(days == [1_591_747_200_000])

        // SwissCovid (55/63 dB, weights 1 and 0.5, 15 min): rows 1 (20 min at 49) and 3 (16 min
        // at 49) notify; close (<= 2 m) are rows 1, 2 and 4: TP 1, FP 1, the unheard close pair a miss.
        let rep = try CLI.run("gaenctl", ["trial", "replay", "--contacts", out, "--rule", "swisscovid", "--close-contact", "2", "--json"])
        #expect(rep.status == 0, "\(rep.stderr)")
        let rule = try #require(((try CLI.json(rep.stdout) as? [String: Any])?["rules"] as? [[String: Any]])?.first)
        #expect(rule["notified"] as? Int == 2 && rule["truePositives"] as? Int == 1 && rule["falsePositives"] as? Int == 1)
        #expect(rule["close"] as? Int == 3 && rule["far"] as? Int == 2)
    }

    @Test func badDatasetsGetSpecificErrors() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        for f in ["example_attenuations.txt", "example_distances.txt", "example_pairs.txt"] {
            try fm.copyItem(at: Self.fixture.appendingPathComponent(f), to: dir.appendingPathComponent(f))
        }
        let out = dir.appendingPathComponent("c.json").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: out))
        func run() throws -> CLIResult { try CLI.run("gaenctl", ["trial", "import", "leith", dir.path, "-o", out]) }
        // One distance too few.
        let distances = dir.appendingPathComponent("example_distances.txt")
        let full = try String(contentsOf: distances, encoding: .utf8)
        try full.split(separator: "\n").dropLast().joined(separator: "\n").write(to: distances, atomically: true, encoding: .utf8)
        var r = try run()
        #expect(r.status == 1 && r.stderr.contains("5 rows of attenuations, 4 distances, 5 pairs"), "\(r.stderr)")
        try full.write(to: distances, atomically: true, encoding: .utf8)
        // A row with a column missing names its line.
        let att = dir.appendingPathComponent("example_attenuations.txt")
        var lines = try String(contentsOf: att, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2] = String(lines[2].dropLast(16))
        try lines.joined(separator: "\n").write(to: att, atomically: true, encoding: .utf8)
        r = try run()
        #expect(r.status == 1 && r.stderr.contains("example_attenuations.txt line 3: expected 19 numbers (one per attenuation range), got 18"), "\(r.stderr)")
        // No ranges named and none given.
        lines[0] = "# minutes per range"
        lines[2] = lines[1]
        try lines.joined(separator: "\n").write(to: att, atomically: true, encoding: .utf8)
        r = try run()
        #expect(r.status == 1 && r.stderr.contains("give them with --ranges"), "\(r.stderr)")
        let ranges = (0..<16).map { "\(48 + 2 * $0)-\(50 + 2 * $0)" } + ["80-85", "85-90", "90-100"]
        r = try CLI.run("gaenctl", ["trial", "import", "leith", dir.path, "--ranges", ranges.joined(separator: ","), "-o", out])
        // A sound dataset that names no date is not dated by assumption.
        #expect(r.status == 1 && r.stderr.contains("names no date in its comments; give the day the measurements were taken with --date"), "\(r.stderr)")
        r = try CLI.run("gaenctl", ["trial", "import", "leith", dir.path, "--ranges", ranges.joined(separator: ","), "--date", "2020-06-10", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        // A directory without a dataset.
        let empty = dir.appendingPathComponent("empty")
        try fm.createDirectory(at: empty, withIntermediateDirectories: true)
        try Data("old".utf8).write(to: URL(fileURLWithPath: out))
        r = try CLI.run("gaenctl", ["trial", "import", "leith", empty.path, "-o", out])
        #expect(r.status == 1 && r.stderr.contains("no *attenuations.txt"), "\(r.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "old") // a failed import leaves the output alone
    }

    /// The day comes from the dataset itself when its comments name one; --date overrides it.
    @Test func measurementDayFromTheDatasetsComment() throws {
        let dir = try TrialImportReplayTests.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        for f in ["example_attenuations.txt", "example_distances.txt", "example_pairs.txt"] {
            try FileManager.default.copyItem(at: Self.fixture.appendingPathComponent(f), to: dir.appendingPathComponent(f))
        }
        let distances = dir.appendingPathComponent("example_distances.txt")
        let text = try String(contentsOf: distances, encoding: .utf8)
        try ("# Measured on 2020-06-05 on the tram.\n" + text).write(to: distances, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("c.json").path
        var r = try CLI.run("gaenctl", ["trial", "import", "leith", dir.path, "-o", out])
        #expect(r.status == 0 && r.stderr.contains("windows dated 2020-06-05 (from the comment of example_distances.txt)"), "\(r.stderr)")
        let first = try #require((try Self.contacts(out).first?["windows"] as? [[String: Any]])?.first)
        #expect((first["dateMillisSinceEpoch"] as? NSNumber)?.int64Value == 1_591_315_200_000)
        r = try CLI.run("gaenctl", ["trial", "import", "leith", dir.path, "--date", "2020-06-20", "-o", out])
        #expect(r.status == 0 && r.stderr.contains("windows dated 2020-06-20 (from --date)"), "\(r.stderr)")

        // A contact never heard has no attenuation: NA / null, not 0 dB.
        let rep = try CLI.run("gaenctl", ["trial", "replay", "--contacts", out, "--rule", "immuni", "--close-contact", "2", "--per-contact"])
        #expect(rep.status == 0, "\(rep.stderr)")
        let never = rep.stdout.split(separator: "\n").first { $0.hasPrefix("#3 ") }.map(String.init) ?? ""
        #expect(never.contains("attenuationDb=NA") && !never.contains("attenuationDb=0"), "\(rep.stdout)")
        let json = try CLI.run("gaenctl", ["trial", "replay", "--contacts", out, "--rule", "immuni", "--close-contact", "2", "--per-contact", "--json"])
        let list = try #require((try CLI.json(json.stdout) as? [String: Any])?["contacts"] as? [[String: Any]])
        let numbers = try #require(((list[3]["verdicts"] as? [[String: Any]])?.first?["numbers"]) as? [String: Any])
        #expect(numbers["attenuationDb"] is NSNull, "\(numbers)")
        #expect((list[0]["verdicts"] as? [[String: Any]])?.first.flatMap { ($0["numbers"] as? [String: Any])?["attenuationDb"] as? Double } == 49)
    }
}
