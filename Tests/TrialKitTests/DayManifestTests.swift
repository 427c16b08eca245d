import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The collected day's SHA-256 manifest (sha256sum's format) and the server's check of a day.
@Suite("Collected days: the SHA-256 manifest")
struct DayManifestTests {
    func day(_ files: [String: String]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-day-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/" + name)) }
        return dir
    }

    @Test("the manifest is sha256sum's output, sorted by name, with the published digests")
    func make() throws {
        let dir = try day(["b.csv": "abc", "a.json": ""])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // SHA-256 of "" and of "abc" (FIPS 180-2 test vector).
        #expect(try DayManifest.make(directory: dir, files: ["b.csv", "a.json"]) == """
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a.json
            ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.csv

            """)
        #expect(throws: DayManifest.Failure.self) { try DayManifest.make(directory: dir, files: ["../x"]) }
    }

    @Test("a day is complete, incomplete without its manifest, or corrupt naming the file that differs")
    func check() throws {
        let dir = try day(["sightings.csv": "time,rpi\n", "markers.csv": "time,label\n"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(DayManifest.check(directory: dir) == .incomplete)
        try Data(try DayManifest.make(directory: dir, files: ["sightings.csv", "markers.csv"]).utf8)
            .write(to: URL(fileURLWithPath: dir + "/" + DayManifest.fileName))
        #expect(DayManifest.check(directory: dir) == .complete(files: 2))
        try Data("time,rpi\n1,2\n".utf8).write(to: URL(fileURLWithPath: dir + "/sightings.csv"))
        guard case .corrupt(let reasons) = DayManifest.check(directory: dir) else { Issue.record("not corrupt"); return }
        #expect(reasons.count == 1 && reasons[0].hasPrefix("sightings.csv: SHA-256 "))
        try FileManager.default.removeItem(atPath: dir + "/markers.csv")
        guard case .corrupt(let two) = DayManifest.check(directory: dir) else { Issue.record("not corrupt"); return }
        #expect(two.contains("markers.csv: missing or unreadable"))
    }

    @Test("a manifest that is not one is refused with its line")
    func parse() {
        let good = String(repeating: "a", count: 64)
        for (text, message) in [("", "MANIFEST.sha256 lists no file"),
                                ("\(good) x.csv\n", "MANIFEST.sha256 line 1: expected '<64 lower-case hex>  <name>'"),
                                ("\(String(repeating: "A", count: 64))  x.csv\n", "MANIFEST.sha256 line 1: expected '<64 lower-case hex>  <name>'"),
                                ("\(good)  ../x\n", "MANIFEST.sha256 line 1: invalid file name '../x'"),
                                ("\(good)  x.csv\n\(good)  x.csv\n", "MANIFEST.sha256 line 2: 'x.csv' listed twice")] {
            #expect(throws: DayManifest.Failure(message)) { try DayManifest.parse(text) }
        }
    }
}
