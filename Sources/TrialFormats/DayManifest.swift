import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// The checksum list of one collected day (`board=<node>/day=<day>/MANIFEST.sha256`), in
/// sha256sum's format (`<64 hex>  <name>` per line, sorted by name), so `sha256sum -c` checks it
/// as well. `gaenctl collect` uploads it after the day's files; a day is complete on the
/// server when its manifest is there and every file it lists has that digest
/// (`gaenctl trial verify`). Names are plain file names (letters, digits, `.`, `_`, `-`).
public enum DayManifest {
    public static let fileName = "MANIFEST.sha256"
    /// A manifest longer than this is not one (a day has a handful of files).
    public static let maximumBytes = 64 << 10

    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public struct Entry: Equatable, Sendable {
        public var name: String
        public var sha256: String
    }

    /// SHA-256 of a file, read in 1 MiB pieces (a day of a busy board is large), lower-case hex.
    public static func sha256(file path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot read \(path): \(SystemCallError.lastReason)") }
        defer { close(fd) }
        var ctx = SHA256_CTX()
        SHA256_Init(&ctx)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n: Int
            do throws(SystemCallError) { n = try systemCall("read") { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } } } catch {
                throw Failure("cannot read \(path): \(error.reason)")
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { _ = SHA256_Update(&ctx, $0.baseAddress, n) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        SHA256_Final(&digest, &ctx)
        return digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= 255
            && name.unicodeScalars.allSatisfy { $0.isASCII && (("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// The manifest of `files` in `directory`.
    public static func make(directory: String, files: [String]) throws -> String {
        var text = ""
        for name in files.sorted() {
            guard isValidName(name), name != fileName else { throw Failure("'\(name)' cannot be listed in a manifest") }
            text += "\(try sha256(file: directory + "/" + name))  \(name)\n"
        }
        return text
    }

    public static func parse(_ text: String) throws -> [Entry] {
        var entries: [Entry] = []
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty { continue }
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].count == 64, parts[0].allSatisfy({ $0.isHexDigit && !$0.isUppercase }),
                  parts[1].hasPrefix(" ") else {
                throw Failure("\(fileName) line \(i + 1): expected '<64 lower-case hex>  <name>'")
            }
            let name = String(parts[1].dropFirst())
            guard isValidName(name), name != fileName else { throw Failure("\(fileName) line \(i + 1): invalid file name '\(name)'") }
            guard !entries.contains(where: { $0.name == name }) else { throw Failure("\(fileName) line \(i + 1): '\(name)' listed twice") }
            entries.append(Entry(name: name, sha256: String(parts[0])))
        }
        guard !entries.isEmpty else { throw Failure("\(fileName) lists no file") }
        return entries
    }

    /// What a collected day directory holds.
    public enum DayState: Equatable, Sendable {
        /// The manifest and every file it lists, with those digests.
        case complete(files: Int)
        /// No manifest yet: an upload not finished (or never started).
        case incomplete
        /// A manifest, but a listed file missing or different, or the manifest unreadable.
        case corrupt([String])
    }

    public static func check(directory: String) -> DayState {
        let path = directory + "/" + fileName
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: maximumBytes) } catch {
            if case .cannotOpen = error { return .incomplete }
            return .corrupt(["\(fileName) unreadable or larger than \(maximumBytes) bytes"])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .corrupt(["\(fileName) unreadable or larger than \(maximumBytes) bytes"]) }
        let entries: [Entry]
        do { entries = try parse(text) } catch { return .corrupt(["\(error)"]) }
        var problems: [String] = []
        for e in entries {
            do {
                let actual = try sha256(file: directory + "/" + e.name)
                if actual != e.sha256 { problems.append("\(e.name): SHA-256 \(actual), manifest says \(e.sha256)") }
            } catch {
                problems.append("\(e.name): missing or unreadable")
            }
        }
        return problems.isEmpty ? .complete(files: entries.count) : .corrupt(problems)
    }
}
