import Foundation
import Testing

@Suite("Key files that are not regular files")
struct KeyFileSpecialFilesTests {
    @Test("keys inspect: a directory and a FIFO are refused at once, saying what they are (issue 29, 10)")
    func directoryAndFIFO() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-keyfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run("gaenctl", ["keys", "inspect", dir.path])
        #expect(r.status == 1 && r.stderr == "gaenctl keys inspect: \(dir.path) is a directory, not a regular file\n", "\(r.stderr)")
        #expect(!r.stderr.contains("NSCocoaErrorDomain"))
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // A FIFO with no writer: the old reader blocked in open(2) for ever.
        let f = try CLI.runBounded("gaenctl", ["keys", "inspect", fifo], timeout: 30)
        #expect(f.status == 1 && f.stderr.contains("is a FIFO (named pipe), not a regular file"), "\(f.stderr)")
    }
}
