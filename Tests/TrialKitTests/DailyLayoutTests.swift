import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The many-boards layout: one file per board per UTC day, Hive-style directories.
@Suite struct DailyLayoutTests {
    @Test func daysAreUTCCalendarDays() {
        #expect(DailyLayout.day(0) == "1970-01-01")
        #expect(DailyLayout.day(86_399.999) == "1970-01-01")
        #expect(DailyLayout.day(86_400) == "1970-01-02")
        #expect(DailyLayout.day(-0.001) == "1969-12-31")
        #expect(DailyLayout.day(951_782_400) == "2000-02-29") // leap day of a century divisible by 400
        #expect(DailyLayout.day(1_795_132_800) == "2026-11-20")
        #expect(DailyLayout.day(4_107_542_399) == "2100-02-28") // 2100 is not a leap year
        #expect(DailyLayout.day(4_107_542_400) == "2100-03-01")
        // Against Foundation's calendar on a spread of times.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for t in stride(from: -1e9, through: 5e9, by: 9_876_543.21) {
            let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: t))
            #expect(DailyLayout.day(t) == String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!))
        }
    }

    @Test func boardNamesAreEscapedAndReadBack() {
        #expect(DailyLayout.relativePath(board: "board-a_1.x", day: "2026-11-20", file: "s.csv") == "board=board-a_1.x/day=2026-11-20/s.csv")
        #expect(DailyLayout.escape("a/b=c d") == "a%2Fb%3Dc%20d")
        #expect(DailyLayout.escape("..") == "%2E%2E")
        #expect(DailyLayout.escape("") == "_")
        #expect(TrialInputs.receiverName(ofSightingsFile: "x/board=a%2Fb%3Dc%20d/day=2026-11-20/sightings.csv") == "a/b=c d")
        // unescape reads back what escape wrote, and refuses what Foundation's
        // removingPercentEncoding refused.
        for name in ["board-1", "a/b=c d", "..", ".", "é ü", "%", "100%"] {
            #expect(DailyLayout.unescape(DailyLayout.escape(name)) == name)
        }
        for name in ["_", "a%2fb", "a%2Fb", "%", "%4", "%G1", "x%FF", "%C3%A9", "plain"] {
            #expect(DailyLayout.unescape(name) == name.removingPercentEncoding, "\(name)")
        }
        #expect(TrialInputs.receiverName(ofSightingsFile: "x/sightings/board-7.csv") == "board-7")
    }

    /// An export with rows on three days (one before the epoch day boundary by a millisecond)
    /// split into one file per day: every row once, in its day's file, header on each.
    @Test(arguments: [false, true]) func exportSplitsByDay(jsonLines: Bool) throws {
        let writer = SightingsFileWriter(format: jsonLines ? .jsonl : .csv)
        let times: [Double] = [1_795_132_799.999, 1_795_132_800, 1_795_150_000.5, 1_795_219_200, 1_795_219_201]
        var text = writer.header
        var lines: [String] = []
        for (i, t) in times.enumerated() {
            let empty = i == 2
            let line = writer.row(SightingsRecord(time: t, rpi: empty ? nil : try RollingProximityIdentifier(bytes: Data(repeating: UInt8(i), count: 16)),
                                                  aem: empty ? nil : try AssociatedEncryptedMetadata(bytes: Data(repeating: 1, count: 4)),
                                                  rssi: empty ? nil : -70, scanStart: t, scanEnd: t + 4, rssiCorrection: 0,
                                                  node: "n,1", site: "s", address: nil))
            lines.append(line)
            text += line
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("daily-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("export")
        try Data(text.utf8).write(to: source)
        let fd = open(source.path, O_RDONLY)
        defer { close(fd) }
        let written = try SightingsDailySplit.split(descriptor: fd, jsonLines: jsonLines, board: "n,1", into: dir.appendingPathComponent("out"))
        let ext = jsonLines ? "jsonl" : "csv"
        #expect(written.map(\.path) == ["2026-11-19", "2026-11-20", "2026-11-21"].map { "board=n%2C1/day=\($0)/sightings.\(ext)" })
        #expect(written.map(\.rows) == [1, 2, 2])
        let read = try written.map { try String(contentsOf: dir.appendingPathComponent("out/\($0.path)"), encoding: .utf8) }
        #expect(read == [writer.header + lines[0], writer.header + lines[1] + lines[2], writer.header + lines[3] + lines[4]])
        // Each file reads as a sightings file, and the rows add up to the export's.
        #expect(try read.map { try SightingsFile.records(Data($0.utf8)).count }.reduce(0, +) == times.count)
    }

    @Test func exportWithoutTimeFirstIsRefusedAndWritesNothing() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("daily-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("export")
        try Data("time,rpi\n1795132800,aa\nnope,bb\n".utf8).write(to: source)
        let fd = open(source.path, O_RDONLY)
        defer { close(fd) }
        #expect(throws: SightingsDailySplit.Failure.self) {
            try SightingsDailySplit.split(descriptor: fd, jsonLines: false, board: "b", into: dir.appendingPathComponent("out"))
        }
        let left = FileManager.default.enumerator(atPath: dir.appendingPathComponent("out").path)?.allObjects as? [String] ?? []
        #expect(left.allSatisfy { !$0.hasSuffix(".csv") }, "\(left)")
    }
}
