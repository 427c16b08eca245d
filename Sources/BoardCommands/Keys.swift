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

/// `gaenctl keys`: key export files (inspect, create) and a running node's keys (`history`,
/// `provide`: KeysClient.swift).
package struct Keys: ParsableCommand {
    package static let configuration = CommandConfiguration(
        abstract: "Read, check and write GAEN key export files.",
        subcommands: [KeysInspect.self, KeysCreate.self, KeysHistory.self, KeysProvide.self, KeysPublish.self]
    )

    package init() {}
}

/// JSON field names of a key, shared by `inspect` output and `create` input.
enum KeyJSON {
    static func object(_ k: DiagnosisKey) -> JSONValue {
        .object([
            "keyData": .string(k.key.hexString),
            "rollingStartIntervalNumber": .int(Int64(k.rollingStartIntervalNumber.rawValue)),
            "rollingPeriod": .int(Int64(k.rollingPeriod)),
            "transmissionRiskLevel": k.transmissionRiskLevel.map { .int(Int64($0)) } ?? .null,
            "reportType": k.reportType.map { .int(Int64($0.rawValue)) } ?? .null,
            "daysSinceOnsetOfSymptoms": k.daysSinceOnsetOfSymptoms.map { .int(Int64($0)) } ?? .null,
        ])
    }

}

/// Writes to stdout in large chunks, so a file of many keys streams out without being
/// assembled in memory.
struct ChunkedOutput {
    private var buffer = ""
    mutating func write(_ s: String) {
        buffer += s
        if buffer.utf8.count >= 1 << 20 { flush() }
    }
    mutating func flush() {
        StandardStream.writeOutput(buffer)
        buffer = ""
    }
}

struct KeysInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print a key export file (ZIP or bare export.bin) as JSON, checking it and its signatures.",
        discussion: """
            Prints {"header":{"startTimestamp","endTimestamp","region","batchNum","batchSize"}, \
            "keys":[{"keyData","rollingStartIntervalNumber","rollingPeriod","transmissionRiskLevel", \
            "reportType","daysSinceOnsetOfSymptoms"}],"signatures":[{"keyId","keyVersion","algorithm","verified"}]} \
            ("revisedKeys", like "keys", only when the file has revised keys). \
            With --trust, a file that no trusted key verifies is rejected (exit 1). Without --trust, \
            any well-formed file is printed (signed, unsigned or a bare export.bin), signatures show \
            "verified": false, and a note on stderr says that no signature was required.
            """
    )

    @Argument(help: "The key export file.")
    var file: String

    @OptionGroup var trustOptions: TrustOptions

    @Flag(help: "Fail unless a trusted key verifies the file (needs --trust).")
    var requireSignature = false

    func run() throws {
        try runReportingFailures("keys inspect") {
            let trust = try trustOptions.trustSet()
            if requireSignature && trust == nil { throw CommandFailure("--require-signature needs at least one --trust") }
            let (file, _) = try KeyFileLoader.load(self.file, trust: trust)
            let verified = trust.map { file.verify(against: $0).verified } ?? file.signatures.map { _ in false }
            let h = file.header
            let header: JSONValue = .object([
                "startTimestamp": .int(Int64(clamping: h.startTimestamp)),
                "endTimestamp": .int(Int64(clamping: h.endTimestamp)),
                "region": .string(h.region),
                "batchNum": .int(Int64(h.batchNum)),
                "batchSize": .int(Int64(h.batchSize)),
            ])
            let signatures: JSONValue = .array(zip(file.signatures, verified).map { s, ok in
                .object(["keyId": .string(s.info.keyId), "keyVersion": .string(s.info.keyVersion),
                         "algorithm": .string(s.info.algorithm), "verified": .bool(ok)])
            })
            // Keys sorted as JSONValue sorts them: header, keys, revisedKeys, signatures.
            var out = ChunkedOutput()
            out.write("{\"header\":" + header.serialized() + ",\"keys\":[")
            Self.writeKeys(file.keyBatches(), to: &out)
            out.write("]")
            if file.revisedKeyCount > 0 {
                out.write(",\"revisedKeys\":[")
                Self.writeKeys(file.revisedKeyBatches(), to: &out)
                out.write("]")
            }
            out.write(",\"signatures\":" + signatures.serialized() + "}\n")
            out.flush()
        }
    }

    static func writeKeys(_ batches: KeyBatches, to out: inout ChunkedOutput) {
        var first = true
        for batch in batches {
            for k in batch {
                out.write((first ? "" : ",") + KeyJSON.object(k).serialized())
                first = false
            }
        }
    }
}

struct KeysCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Write a signed key export ZIP from a JSON array of keys.",
        discussion: """
            KEYS.json is an array of objects with the fields keys inspect prints: keyData (32 hex \
            digits), rollingStartIntervalNumber, and optionally rollingPeriod (default 144), \
            transmissionRiskLevel, reportType (number or proto name such as CONFIRMED_TEST) and \
            daysSinceOnsetOfSymptoms. The header's time window runs from the earliest key's start \
            to the latest key's end; the file is batch 1 of 1 and carries one signature.
            """
    )

    @Option(name: .customLong("keys"), help: ArgumentHelp("JSON array of keys.", valueName: "KEYS.json"))
    var keysPath: String

    @Option(help: ArgumentHelp("P-256 private key (PKCS#8 or SEC1 PEM, unencrypted).", valueName: "PRIVATE.pem"))
    var signingKey: String

    @Option(help: "verification_key_id recorded with the signature.")
    var keyId: String

    @Option(help: "verification_key_version recorded with the signature.")
    var keyVersion: String = "1"

    @Option(help: "Region of the keys (e.g. an MCC or country code).")
    var region: String = ""

    @Option(name: .short, help: ArgumentHelp("Output ZIP file.", valueName: "OUT.zip"))
    var output: String

    func run() throws {
        try runReportingFailures("keys create") {
            let json = try KeyFileLoader.readBounded(keysPath, limit: 512 << 20)
            let keys = try KeyListFile.decode(json, file: keysPath)

            try KeyFileLoader.writeSigned(keys, region: region, signingKey: signingKey, keyId: keyId, keyVersion: keyVersion, to: output)
            printError("gaenctl: wrote \(output): \(keys.count) keys, signed as \(keyId):\(keyVersion)")
        }
    }
}
