import Foundation
import PlatformSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one atomic writer: the target holds the old bytes or the new ones, never a part, and
/// nothing is left beside it.
@Suite struct AtomicFileTests {
    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("atomicfile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    func entries(_ dir: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir).sorted() }

    @Test func replacesWholeWithTheModeAsked() throws {
        try withDirectory { dir in
            let path = dir + "/f"
            try AtomicFile.write(Array("old".utf8), to: path)
            try AtomicFile.write(Data("new".utf8), to: path, mode: 0o640, durable: false)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("new".utf8))
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o640)
            #expect(try entries(dir) == ["f"])
        }
    }

    @Test func aDiscardedFileLeavesTheTargetAsItWas() throws {
        try withDirectory { dir in
            let path = dir + "/f"
            try AtomicFile.write(Array("old".utf8), to: path)
            let file = try AtomicFile(path: path)
            try file.write(Array(repeating: UInt8(7), count: 100_000))
            #expect(try entries(dir).count == 2)
            file.discard()
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("old".utf8))
            #expect(try entries(dir) == ["f"])
        }
    }

    @Test func failuresNameTheCallAndLeaveNothing() throws {
        try withDirectory { dir in
            #expect(throws: SystemCallError(function: "mkstemp", errno: ENOENT)) { try AtomicFile.write([1], to: dir + "/missing/f") }
            // A directory in the way: the rename fails and the temporary file goes.
            try FileManager.default.createDirectory(atPath: dir + "/d/x", withIntermediateDirectories: true)
            #expect(throws: SystemCallError(function: "rename", errno: EISDIR)) { try AtomicFile.write([1], to: dir + "/d") }
            #expect(try entries(dir) == ["d"])
            // A file built under a name of its own.
            try Data("built".utf8).write(to: URL(fileURLWithPath: dir + "/t"))
            try AtomicFile.replace(dir + "/g", with: dir + "/t")
            #expect(try entries(dir) == ["d", "g"])
            #expect(SystemCallError.reason(code: ENOENT) == String(cString: strerror(ENOENT)))
        }
    }
}
