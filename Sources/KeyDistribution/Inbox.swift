import ENProtocol
import Foundation
import TrialKit

/// The publisher's inbox: the files the boards uploaded (the web server's WebDAV PUT puts
/// them there), export zips, bare export.bin or JSON key lists, signed or not: the upload
/// itself was authenticated by the web server with the board's credentials.
public enum Inbox {
    public struct Skipped: Sendable {
        public var file: String
        public var reason: String
    }

    /// Files larger than this are skipped (a board's 14 keys are a few hundred bytes).
    public static let maxFileSize = 1 << 20
    /// Directories are read this deep (the web server keeps one directory per board).
    static let maxDepth = 3

    /// Every key in `directory`, with its file's submission time from `ledger` (its
    /// modification time, but not before the ledger's last publication for a file first seen now).
    /// A file that is not a key file is skipped with its reason, not fatal: one board's bad
    /// upload must not stop the trial's publication. Names starting with "." (a web server's
    /// temporary files) are ignored.
    public static func read(_ directory: String, ledger: inout SubmissionLedger) throws -> (keys: [SubmittedKey], files: Int, skipped: [Skipped]) {
        var keys: [SubmittedKey] = [], skipped: [Skipped] = [], files = 0
        func walk(_ dir: String, depth: Int) throws {
            let names: [String]
            do { names = try FileManager.default.contentsOfDirectory(atPath: dir).sorted() } catch {
                throw PublishError.io(path: dir, reason: "cannot read the inbox: \(error.localizedDescription)")
            }
            for name in names where !name.hasPrefix(".") {
                let path = dir + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR {
                    if depth < maxDepth { try walk(path, depth: depth + 1) }
                    continue
                }
                guard st.st_mode & S_IFMT == S_IFREG else { skipped.append(Skipped(file: path, reason: "not a regular file")); continue }
                guard Int(st.st_size) <= maxFileSize else { skipped.append(Skipped(file: path, reason: "\(st.st_size) bytes, more than \(maxFileSize)")); continue }
                files += 1
                do {
                    let data = try Data(contentsOf: URL(fileURLWithPath: path))
                    let relative = String(path.dropFirst(directory.count + 1))
                    let submitted = ledger.submission(file: relative, mtime: Int64(st.st_mtim.tv_sec), size: Int64(st.st_size))
                    keys += try decode(data, file: path).map { SubmittedKey(key: $0, submittedAt: submitted) }
                } catch {
                    skipped.append(Skipped(file: path, reason: "\(error)"))
                }
            }
        }
        try walk(directory, depth: 0)
        return (keys, files, skipped)
    }

    static func decode(_ data: Data, file: String) throws -> [DiagnosisKey] {
        if KeyInputKind.detect(data) == .jsonKeyList { return try KeyListFile.decode(data, file: file) }
        let export = try KeyExportFile(parsing: data, limits: KeyExportLimits(maxFileSize: maxFileSize, maxExportSize: maxFileSize))
        return export.keyBatches().flatMap { $0 }
    }
}
