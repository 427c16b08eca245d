import ArgumentParser
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport
import TrialFormats

/// A failure a gaenctl command reports as one line on stderr before exiting with status 1.
package struct CommandFailure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Prints `message` as one line on stderr.
package func printError(_ message: String) {
    StandardStream.writeError(message.replacing(scalar: "\n", with: " ") + "\n")
}

/// Runs a command body, turning any failure into one stderr line and exit status 1.
package func runReportingFailures(_ command: String, _ body: () throws -> Void) throws {
    do {
        try body()
    } catch let e as ExitCode {
        throw e
    } catch {
        printError("gaenctl \(command): \(error)")
        throw ExitCode(1)
    }
}

/// `--trust ID[:VERSION]=PEMFILE`, shared by every command that reads key files
/// (`keys inspect`, `match`).
package struct TrustOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("trust"),
            help: ArgumentHelp("Trust a P-256 public key (PEM file) for signatures by key id ID (and VERSION, if given). Repeatable; with it, a file no trusted key verifies is rejected.",
                               valueName: "ID[:VERSION]=PEMFILE"))
    var trust: [String] = []

    /// nil when no `--trust` was given (signatures are then not required).
    package func trustSet() throws -> KeyExportTrustSet? {
        guard !trust.isEmpty else { return nil }
        var set = KeyExportTrustSet()
        for spec in trust {
            guard let eq = spec.firstIndex(of: "="), eq != spec.startIndex, spec.index(after: eq) != spec.endIndex else {
                throw CommandFailure("--trust '\(spec)': expected ID[:VERSION]=PEMFILE")
            }
            let who = spec[..<eq], path = String(spec[spec.index(after: eq)...])
            let id: String, version: String?
            if let colon = who.firstIndex(of: ":") {
                id = String(who[..<colon]); version = String(who[who.index(after: colon)...])
            } else {
                id = String(who); version = nil
            }
            guard !id.isEmpty else { throw CommandFailure("--trust '\(spec)': the key id is empty") }
            let pem: String
            do { pem = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw CommandFailure("--trust: cannot read \(path): \(SystemCallError.reason(of: error))")
            }
            do { set.add(keyId: id, version: version, key: try P256PublicKey(pem: pem)) } catch {
                throw CommandFailure("--trust: \(path): \(error)")
            }
        }
        return set
    }
}

package enum KeyFileLoader {
    /// A JSON key list (KeyListFile) as a bare, unsigned export.bin (header + protobuf), the
    /// form every reader of key files takes; its time range spans the keys' intervals.
    static func unsignedExport(fromKeyList data: Data, path: String) throws -> Data {
        let keys: [DiagnosisKey]
        do { keys = try KeyListFile.decode(data, file: path) } catch { throw CommandFailure("\(error)") }
        return try KeyExportWriter.exportBin(header: KeyExportHeader(covering: keys, region: ""), keys: keys)
    }

    /// Writes `keys` as a key export file signed by the PEM private key at `signingKey` as
    /// `keyId`:`keyVersion` (`keys create`, `keys history -o`): the header spans the keys, the
    /// output is replaced whole or left as it was, mode 0600.
    static func writeSigned(_ keys: [DiagnosisKey], region: String, signingKey: String, keyId: String, keyVersion: String,
                            to output: String) throws {
        let pem: Data
        do { pem = try readBounded(signingKey, limit: 64 << 10) } catch { throw CommandFailure("--signing-key \(error)") }
        let signer: P256PrivateKey
        do { signer = try P256PrivateKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
            throw CommandFailure("--signing-key \(signingKey): \(error)")
        }
        let header = KeyExportHeader(covering: keys, region: region)
        let zip = try KeyExportWriter.signedArchive(header: header, keys: keys, signingKey: signer, keyId: keyId, keyVersion: keyVersion)
        do { try AtomicOutputFile.write(zip, to: output, mode: 0o600) } catch let e as AtomicOutputFile.Failure {
            throw CommandFailure("cannot write \(output): \(e.reason)")
        }
    }

    /// Reads at most `limit + 1` bytes, so an oversized file is refused without being read whole.
    static func readBounded(_ path: String, limit: Int) throws -> Data {
        // SmallFile: a FIFO or a directory is refused at once with what it is (a FIFO hung the
        // command, a directory printed Foundation's raw NSCocoaErrorDomain error).
        do { return Data(try SmallFile.read(path, limit: limit)) } catch {
            if case .tooLarge(let size, let limit, _) = error {
                throw CommandFailure("\(path): \(KeyExportError.fileTooLarge(size: size, limit: limit))")
            }
            throw CommandFailure("\(path) \(error)")
        }
    }

    /// Reads and parses a key file: a ZIP, a bare export.bin or a JSON key list (KeyListFile),
    /// told apart by content. A JSON key list becomes an unsigned export in memory, so every
    /// command runs the same computation on it; it carries no signature, so with `--trust` it
    /// is refused. With a trust set, a file no trusted key verifies is rejected whole; without
    /// one, a note on stderr says that no signature was required. Returns the file and, with a
    /// trust set, the signature that verified.
    package static func load(_ path: String, trust: KeyExportTrustSet?, limits: KeyExportLimits = .default)
        throws -> (file: KeyExportFile, verifiedBy: KeyExportSignatureInfo?) {
        let data = try readBounded(path, limit: limits.maxFileSize)
        if KeyInputKind.detect(data) == .jsonKeyList {
            guard trust == nil else {
                throw CommandFailure("\(path): rejected: a JSON key list carries no signature, so no --trust key can verify it (give the signed export instead)")
            }
            let bin = try unsignedExport(fromKeyList: data, path: path)
            do { return (try KeyExportFile(parsing: bin, limits: limits), nil) } catch { throw CommandFailure("\(path): \(error)") }
        }
        let file: KeyExportFile
        do { file = try KeyExportFile(parsing: data, limits: limits) } catch { throw CommandFailure("\(path): \(error)") }
        guard let trust else {
            printError("gaenctl: note: \(path): no --trust given, so no signature was required or checked")
            return (file, nil)
        }
        do { return (file, try file.requireTrustedSignature(trust)) } catch { throw CommandFailure("\(path): rejected: \(error)") }
    }
}
