import Foundation
import Testing
@testable import TrialKit
#if canImport(Glibc)
import Glibc
import TrialFormats
#endif

/// The one writer of gaenctl's output files: a failure at any step leaves an existing file
/// byte for byte and no temporary file behind; success replaces it whole.
@Suite("AtomicOutputFile")
struct AtomicOutputFileTests {
    struct Boom: Error {}

    func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    func entries(_ dir: URL) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() }

    @Test("a body that throws after writing leaves the existing file byte-identical, no temp file")
    func throwingBody() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("day.csv")
        let earlier = Data((0..<11_741).map { "row \($0)\n" }.joined().utf8)
        try earlier.write(to: target)
        #expect(throws: Boom.self) {
            try AtomicOutputFile.with(path: target.path) { out in
                try out.write(Data("half a new file".utf8))
                throw Boom()
            }
        }
        #expect(try Data(contentsOf: target) == earlier)
        #expect(try entries(dir) == ["day.csv"])
    }

    @Test("success replaces the file whole, with the requested mode")
    func replaces() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("export.csv")
        try Data("old\n".utf8).write(to: target)
        let rows = try AtomicOutputFile.with(path: target.path, mode: 0o600) { out in
            try out.write(Data("new 1\n".utf8))
            try out.write(Data("new 2\n".utf8))
            return 2
        }
        #expect(rows == 2)
        #expect(try String(contentsOf: target, encoding: .utf8) == "new 1\nnew 2\n")
        var st = stat()
        #expect(stat(target.path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(try entries(dir) == ["export.csv"])
        // Non-durable (report directories) is the same writer without the fsyncs.
        try OutputFile.write(Data("report\n".utf8), to: target)
        #expect(try String(contentsOf: target, encoding: .utf8) == "report\n")
        #expect(try entries(dir) == ["export.csv"])
    }

    @Test("a discarded or dropped file never appears; an unwritable directory is a clear error")
    func discardAndErrors() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("keys.zip")
        do {
            let file = try AtomicOutputFile(path: target.path)
            try file.write(Data("partial".utf8))
            file.discard()
        }
        do {
            let file = try AtomicOutputFile(path: target.path)
            try file.write(Data("partial".utf8))
            _ = file // dropped without commit
        }
        #expect(try entries(dir) == [])
        let missing = dir.appendingPathComponent("no/such/dir/out.csv").path
        #expect(throws: AtomicOutputFile.Failure.self) { try AtomicOutputFile.write(Data("x".utf8), to: missing) }
        do { try AtomicOutputFile.write(Data("x".utf8), to: missing) } catch {
            #expect("\(error)".hasPrefix("cannot write \(missing): No such file or directory"), "\(error)")
        }
    }
    // A write that fails midway (a full disk) is in Tests/e2e/test_outputs_e2e.py: RLIMIT_FSIZE
    // is per process, and tests here run in parallel in one process.
}
