import ArgumentParser
import CLISupport
import DBusCore
import GaendAPI
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
import GaendClient
import TrialFormats

/// `gaenctl keys history`: the node's own TEKs (authorized callers only), printed or written
/// as a signed key export file.
struct KeysHistory: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "The node's temporary exposure keys (from gaend), printed or as a signed export ZIP.",
        discussion: """
            Without -o prints one line per key (or, with --json, an array of {keyData, \
            rollingStartIntervalNumber, rollingPeriod}). With -o writes a signed key export ZIP \
            (export.bin + export.sig) that `gaenctl keys provide` or any GAEN verifier reads; it \
            needs --signing-key and --key-id. Today's key is included only in trial mode.
            """)

    @OptionGroup var bus: BusOptions
    @Option(name: .short, help: ArgumentHelp("Write a signed key export ZIP.", valueName: "FILE.zip"))
    var output: String?
    @Option(help: ArgumentHelp("P-256 private key (PKCS#8 or SEC1 PEM) signing the ZIP.", valueName: "PEM"))
    var signingKey: String?
    @Option(help: "verification_key_id recorded with the signature.")
    var keyId: String?
    @Option(help: "verification_key_version recorded with the signature.")
    var keyVersion: String = "1"
    @Option(help: "Region recorded in the export header.")
    var region: String = ""
    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if output != nil, signingKey == nil || keyId == nil {
            throw ValidationError("-o needs --signing-key PEM and --key-id ID")
        }
    }

    func run() async throws {
        try await withDaemon("keys history", bus) { client in
            let wire = try await client.temporaryExposureKeyHistory()
            let keys = try wire.map {
                DiagnosisKey(key: try TemporaryExposureKey(bytes: $0.keyData),
                             rollingStartIntervalNumber: ENIntervalNumber($0.rollingStartIntervalNumber),
                             rollingPeriod: $0.rollingPeriod)
            }
            if let output, let signingKey, let keyId {
                try KeyFileLoader.writeSigned(keys, region: region, signingKey: signingKey, keyId: keyId, keyVersion: keyVersion, to: output)
                printError("gaenctl keys history: wrote \(output): \(keys.count) keys, signed as \(keyId):\(keyVersion)")
                return
            }
            if json {
                print(JSONValue.array(keys.map {
                    .object(["keyData": .string($0.key.bytes.hexString),
                             "rollingStartIntervalNumber": .int(Int64($0.rollingStartIntervalNumber.rawValue)),
                             "rollingPeriod": .int(Int64($0.rollingPeriod))])
                }).serialized())
            } else {
                if keys.isEmpty { print("no keys (today's key is released after midnight UTC, or with --trial)") }
                for k in keys {
                    let day = k.rollingStartIntervalNumber.utcDay
                    print("\(day)  \(k.key.bytes.hexString)  interval \(k.rollingStartIntervalNumber.rawValue) +\(k.rollingPeriod)")
                }
            }
        }
    }
}

/// `gaenctl keys provide FILE...`: hands key export files to gaend as file descriptors and
/// waits for the matching result.
struct KeysProvide: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provide",
        abstract: "Provide diagnosis key files to gaend and wait until matching has finished.",
        discussion: """
            Passes the files as file descriptors in one ProvideDiagnosisKeys call (1 to 16 files), \
            then waits for ExposureStateUpdated with its token. Prints the keys accepted, the keys \
            matched and the windows added (JSON with --json: {"keys","matchedKeys","windows"}). \
            A rejected file is a named error (e.g. org.gaend.Error.InvalidKeyFile) and exit 1. \
            A JSON key list (as keys create and keys history --json write it) is converted here \
            into an unsigned export and passed as an anonymous file: gaend accepts it only when \
            it trusts no signing key (trust settings empty), as any unsigned export.
            """)

    @OptionGroup var bus: BusOptions
    @Argument(help: ArgumentHelp("Key export files (ZIP or export.bin) or JSON key lists.", valueName: "FILE"))
    var files: [String]
    @Option(help: "Seconds to wait for the matching result.")
    var wait: Double = 120
    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        guard (1...16).contains(files.count) else { throw ValidationError("give 1 to 16 key files") }
        try NumericOption.check(wait, "--wait", 0.001...NumericOption.day)
    }


    /// When the regular file at `fd` is a JSON key list (starts with `[` or `{`): its unsigned export (KeyFileLoader) in
    /// an anonymous temporary file (created, unlinked, rewound), to pass instead. nil for key
    /// export files, which go to gaend as they are. Reads at most the daemon's file limit + 1.
    static func keyListAsExport(fd: Int32, path: String) throws -> DBusUnixFD? {
        let limit = KeyExportLimits.default.maxFileSize
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while data.count <= limit {
            let n: Int
            do throws(SystemCallError) { n = try systemCall("pread") { buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) } } } catch {
                throw CommandFailure("\(path): cannot read: \(error.reason)")
            }
            if n == 0 { break }
            data.append(contentsOf: buffer[..<n])
            offset += off_t(n)
        }
        // Only what looks like JSON is converted; anything else goes to gaend as it is, which
        // judges key export files itself (InvalidKeyFile).
        let first = data.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) })
        guard KeyInputKind.detect(data) == .jsonKeyList, first == UInt8(ascii: "[") || first == UInt8(ascii: "{") else { return nil }
        guard data.count <= limit else { throw CommandFailure("\(path): \(KeyExportError.fileTooLarge(size: data.count, limit: limit)) (or more)") }
        let bin = try KeyFileLoader.unsignedExport(fromKeyList: data, path: path)
        var template = Array((FileManager.default.temporaryDirectory.path + "/gaenctl-keys-XXXXXX").utf8CString)
        let tmp = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard tmp >= 0 else { throw CommandFailure("cannot create a temporary file: \(SystemCallError.lastReason)") }
        let handle = DBusUnixFD(owning: tmp)
        _ = fcntl(tmp, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        try bin.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                let n: Int
                do throws(SystemCallError) { n = try systemCall("write") { write(tmp, raw.baseAddress! + written, raw.count - written) } } catch {
                    throw CommandFailure("cannot write a temporary file: \(error.reason)")
                }
                written += n
            }
        }
        guard lseek(tmp, 0, SEEK_SET) == 0 else { throw CommandFailure("cannot rewind a temporary file: \(SystemCallError.lastReason)") }
        printError("gaenctl keys provide: note: \(path): a JSON key list, passed as an unsigned export")
        return handle
    }

    func run() async throws {
        try await withDaemon("keys provide", bus) { client in
            var fds: [DBusUnixFD] = []
            var keyLists: [String] = []
            for path in files {
                // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files go on.
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else { throw CommandFailure("\(path): cannot open: \(SystemCallError.lastReason)") }
                let handle = DBusUnixFD(owning: fd)
                var st = stat()
                guard fstat(fd, &st) == 0 else { throw CommandFailure("\(path): cannot stat: \(SystemCallError.lastReason)") }
                if let kind = SmallFile.kind(of: st.st_mode) {
                    throw CommandFailure("\(path): is \(kind), not a key file: give a ZIP, an export.bin or a JSON key list")
                }
                if let converted = try Self.keyListAsExport(fd: fd, path: path) {
                    keyLists.append(path)
                    fds.append(converted)
                } else {
                    fds.append(handle)
                }
            }
            // Unguessable (16 bytes from the OS): another connection cannot forge the result of
            // this call by guessing the token (the signal's sender is checked as well).
            var random = SecureRandom()
            let token = "gaenctl-" + (try random.bytes(16)).hexString
            let updates = try await client.exposureStateUpdates()
            let count: UInt32
            do { count = try await client.provideDiagnosisKeys(files: fds, token: token) } catch where !keyLists.isEmpty && "\(error)".contains("UntrustedKeyFile") {
                throw CommandFailure("\(error) (\(keyLists.joined(separator: ", ")): a JSON key list carries no signature, and this gaend requires one; give the signed export, e.g. from gaenctl keys history -o or keys create --signing-key)")
            }
            let result = await firstStateUpdate(updates, token: token, within: wait)
            guard let result else { throw CommandFailure("\(count) keys accepted, but no matching result within \(wait) s") }
            guard result.error.isEmpty else { throw CommandFailure("\(count) keys accepted; matching failed: \(result.error)") }
            if json {
                print(JSONValue.object(["keys": .int(Int64(count)), "matchedKeys": .int(Int64(result.matchedKeys)),
                                        "windows": .int(Int64(result.windows))]).serialized())
            } else {
                print("\(count) keys accepted; \(result.matchedKeys) matched; \(result.windows) exposure windows")
            }
        }
    }
}

