import ArgumentParser
import DBusCore
import GaendAPI
import ENProtocol
import Foundation
import TrialKit
import GaenClient

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
                let pem: String
                do { pem = try String(contentsOfFile: signingKey, encoding: .utf8) } catch {
                    throw CommandFailure("--signing-key \(signingKey): cannot read: \(error.localizedDescription)")
                }
                let signer: P256PrivateKey
                do { signer = try P256PrivateKey(pem: pem) } catch { throw CommandFailure("--signing-key \(signingKey): \(error)") }
                let start = keys.map { UInt64($0.rollingStartIntervalNumber.rawValue) }.min() ?? 0
                let end = keys.map { UInt64($0.rollingStartIntervalNumber.rawValue) + UInt64($0.rollingPeriod) }.max() ?? 0
                let header = KeyExportHeader(startTimestamp: start * 600, endTimestamp: end * 600, region: region)
                let zip = try KeyExportWriter.signedArchive(header: header, keys: keys, signingKey: signer, keyId: keyId, keyVersion: keyVersion)
                do { try AtomicOutputFile.write(zip, to: output) } catch {
                    throw CommandFailure("cannot write \(output): \(error.localizedDescription)")
                }
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
            A rejected file is a named error (e.g. org.gaend.Error.InvalidKeyFile) and exit 1.
            """)

    @OptionGroup var bus: BusOptions
    @Argument(help: ArgumentHelp("Key export files (ZIP).", valueName: "FILE"))
    var files: [String]
    @Option(help: "Seconds to wait for the matching result.")
    var wait: Double = 120
    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        guard (1...16).contains(files.count) else { throw ValidationError("give 1 to 16 key files") }
    }

    /// What a file of this mode is, when it is not a regular file.
    static func notAFile(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }

    func run() async throws {
        try await withDaemon("keys provide", bus) { client in
            var fds: [DBusUnixFD] = []
            for path in files {
                // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files go on.
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else { throw CommandFailure("\(path): cannot open: \(String(cString: strerror(errno)))") }
                let handle = DBusUnixFD(owning: fd)
                var st = stat()
                guard fstat(fd, &st) == 0 else { throw CommandFailure("\(path): cannot stat: \(String(cString: strerror(errno)))") }
                if let kind = Self.notAFile(st.st_mode) {
                    throw CommandFailure("\(path): is \(kind), not a key file: give a ZIP or export.bin file")
                }
                fds.append(handle)
            }
            let token = "gaenctl-\(getpid())-\(UInt64(Date().timeIntervalSince1970 * 1000))"
            let updates = try await client.exposureStateUpdates()
            let count = try await client.provideDiagnosisKeys(files: fds, token: token)
            let result: GaendExposureStateUpdate? = await withTaskGroup(of: GaendExposureStateUpdate?.self) { group in
                group.addTask {
                    for await u in updates where u.token == token { return u }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int64(wait * 1000)))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
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
