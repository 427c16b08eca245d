import Foundation
import PlatformSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one bounded small-file read: a regular file within its limit is read whole; anything
/// else is refused at once, saying what it is.
@Suite struct SmallFileTests {
    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("smallfile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    @Test func readsARegularFileWithinItsLimit() throws {
        try withDirectory { dir in
            let path = dir + "/f"
            let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try SmallFile.read(path, limit: 100_000) == bytes)
            #expect(throws: SmallFile.Failure.tooLarge(size: 100_000, limit: 99_999, grew: false)) { try SmallFile.read(path, limit: 99_999) }
            try Data().write(to: URL(fileURLWithPath: path))
            #expect(try SmallFile.read(path, limit: 0) == [])
        }
    }

    @Test func refusesWhatIsNotARegularFileWithoutWaiting() throws {
        try withDirectory { dir in
            #expect(throws: SmallFile.Failure.notARegularFile("a directory")) { try SmallFile.read(dir, limit: 10) }
            #expect(throws: SmallFile.Failure.notARegularFile("a character device")) { try SmallFile.read("/dev/zero", limit: 10) }
            let fifo = dir + "/fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            // No writer: a blocking open would wait for ever.
            #expect(throws: SmallFile.Failure.notARegularFile("a FIFO (named pipe)")) { try SmallFile.read(fifo, limit: 10) }
            #expect(throws: SmallFile.Failure.cannotOpen(String(cString: strerror(ENOENT)))) { try SmallFile.read(dir + "/missing", limit: 10) }
            #expect(SmallFile.Failure.notARegularFile("a FIFO (named pipe)").description == "is a FIFO (named pipe), not a regular file")
        }
    }
}
