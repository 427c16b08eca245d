import Foundation
import Testing
@testable import GaenApp

@Suite("The app's status file is bounded before it is read")
struct StatusFileBoundsTests {
    @Test("A 3 GiB sparse status.json is refused by its size, without reading it (issue 29, 11); a FIFO at once")
    func hugeAndSpecialFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(AppStatus.fileName).path
        let fd = open(path, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0 && ftruncate(fd, 3 << 30) == 0)
        close(fd)
        // `gaenctl metrics` ran this every 15 s and reached 3.18 GB RSS before refusing.
        #expect {
            try AppStatus.read(directory: dir.path)
        } throws: { "\($0)".contains("is 3221225472 bytes, more than the limit of 1048576") }
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o644) == 0)
        #expect {
            try AppStatus.read(directory: dir.path)
        } throws: { "\($0)".contains("is a FIFO (named pipe), not a regular file") }
    }
}
