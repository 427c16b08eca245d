import ENProtocol
import PlatformSupport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The store's 32-byte data key (AES-256-GCM). Redacted in descriptions; never logged.
package struct StoreKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    package static let length = 32
    let bytes: Data

    package init(bytes: Data) throws {
        guard bytes.count == Self.length else {
            throw KeyMaterialError.wrongLength(what: "store key", expected: Self.length, actual: bytes.count)
        }
        self.bytes = Data(bytes)
    }

    package static func random(using random: inout some RandomBytesGenerator) throws -> StoreKey {
        try StoreKey(bytes: random.bytes(length))
    }

    package var description: String { "StoreKey(<redacted>)" }
    package var debugDescription: String { description }

    /// The credential name under $CREDENTIALS_DIRECTORY (systemd `LoadCredential=store-key:...`).
    package static let credentialName = "store-key"

    /// Finds the key: an explicit key file wins (flags override the environment), else the
    /// systemd credential, else a clear error naming both.
    package static func load(keyFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> StoreKey {
        if let keyFile { return try load(file: keyFile, requirePrivate: true) }
        if let dir = environment["CREDENTIALS_DIRECTORY"], !dir.isEmpty {
            let path = dir.hasSuffix("/") ? dir + credentialName : dir + "/" + credentialName
            // systemd already restricts the credentials directory to the unit (a private
            // read-only mount, mode 0500), so the file's own mode bits are not re-checked.
            // Only a missing file means "no credential"; any other failure (EACCES on the
            // directory, say) is reported as itself instead of as a missing key.
            var st = stat()
            if stat(path, &st) == 0 { return try load(file: path, requirePrivate: false) }
            let e = errno
            guard e == ENOENT else {
                throw StoreError.keyFileUnreadable(path: path, reason: SystemCallError.reason(code: e) + "; " + accessFacts(path))
            }
            let present = (try? FileManager.default.contentsOfDirectory(atPath: dir))?.sorted() ?? []
            throw StoreError.noKeySource(credentialPath: path + " (the directory holds: "
                + (present.isEmpty ? "nothing" : present.joined(separator: ", ")) + ")")
        }
        throw StoreError.noKeySource(credentialPath: nil)
    }

    /// Reads a key file: 32 raw bytes, or 64 hex digits with an optional trailing newline (what
    /// `openssl rand -hex 32` writes). With `requirePrivate`, refuses a file that group or others
    /// can read, or that another user owns.
    package static func load(file path: String, requirePrivate: Bool = true) throws -> StoreKey {
        var st = stat()
        guard stat(path, &st) == 0 else {
            let e = errno
            throw StoreError.keyFileUnreadable(path: path, reason: SystemCallError.reason(code: e) + (e == ENOENT ? "" : "; " + accessFacts(path)))
        }
        if requirePrivate {
            let mode = UInt32(st.st_mode) & 0o777
            guard mode & 0o077 == 0 else {
                throw StoreError.keyFileTooOpen(path: path, mode: String(mode, radix: 8).leftPadded(to: 4))
            }
            guard st.st_uid == geteuid() else {
                throw StoreError.keyFileWrongOwner(path: path, owner: st.st_uid, expected: geteuid())
            }
        }
        let contents: Data
        do { contents = try readSmallFile(path) } catch StoreError.keyFileUnreadable(let p, let reason) {
            throw StoreError.keyFileUnreadable(path: p, reason: reason + "; " + accessFacts(path))
        }
        if contents.count == length { return try StoreKey(bytes: contents) }
        guard !contents.isEmpty else { throw StoreError.keyFileMalformed(path: path, reason: "the file is empty; expected 32 raw bytes or 64 hex digits") }
        var text = String(decoding: contents, as: UTF8.self)
        while let last = text.last, last.isWhitespace { text.removeLast() }
        if text.count == 2 * length, let bytes = try? Data(hex: text) { return try StoreKey(bytes: bytes) }
        throw StoreError.keyFileMalformed(path: path, reason: "expected 32 raw bytes or 64 hex digits, got \(contents.count) bytes")
    }

    /// Creates a new key file with mode 0600 (fails if it exists): 64 hex digits and a newline.
    /// For setup scripts, demos and tests; production keys come from `systemd-creds`.
    @discardableResult
    package static func createFile(at path: String, using random: inout some RandomBytesGenerator) throws -> StoreKey {
        let key = try StoreKey.random(using: &random)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw StoreError.keyFileExists(path: path) }
            throw StoreError.keyFileUnreadable(path: path, reason: SystemCallError.lastReason)
        }
        defer { close(fd) }
        let text = Array((key.bytes.hexString + "\n").utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(fd) == 0 else {
            throw StoreError.keyFileUnreadable(path: path, reason: "write failed: \(SystemCallError.lastReason)")
        }
        return key
    }
}

/// Who is asking and what the file and its directory allow, for an error that says why a key
/// cannot be read (a credential systemd did not make readable by the unit's user, a key file
/// of another user) without guessing: "gaend runs as uid 998 gid 998; the file: mode 0400,
/// owner uid 0 gid 0; its directory /run/credentials/gaend@hci0.service: mode 0500, owner
/// uid 0 gid 0". No content is read.
func accessFacts(_ path: String) -> String {
    func describe(_ p: String) -> String {
        var st = stat()
        guard lstat(p, &st) == 0 else { return "cannot be examined (\(SystemCallError.lastReason))" }
        let mode = String(UInt32(st.st_mode) & 0o7777, radix: 8)
        let kind = (UInt32(st.st_mode) & UInt32(S_IFMT)) == UInt32(S_IFDIR) ? "a directory, " : ""
        return "\(kind)mode \(String(repeating: "0", count: max(0, 4 - mode.count)) + mode), owner uid \(st.st_uid) gid \(st.st_gid)"
    }
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    let who = getuid() == geteuid() ? "uid \(getuid())" : "uid \(getuid()) (effective \(geteuid()))"
    return "gaend runs as \(who) gid \(getegid()); the file: \(describe(path)); its directory \(directory): \(describe(directory))"
}

/// The bytes of a key file (a key file is 32 or 65 bytes; at most 4 KiB are read): a regular
/// file, opened without waiting (`SmallFile`), each refusal naming what the path is.
private func readSmallFile(_ path: String) throws -> Data {
    do { return Data(try SmallFile.read(path, limit: 4096)) } catch {
        switch error {
        case .cannotOpen(let reason), .cannotRead(let reason): throw StoreError.keyFileUnreadable(path: path, reason: reason)
        case .notARegularFile: throw StoreError.keyFileMalformed(path: path, reason: "it \(error)")
        case .tooLarge: throw StoreError.keyFileMalformed(path: path, reason: "it \(error); a store key file is 32 raw bytes or 64 hex digits")
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
