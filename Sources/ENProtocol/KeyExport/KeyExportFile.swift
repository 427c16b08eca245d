#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf

/// Why a key export file was rejected. Each hostile-input case has its own case, with what
/// was expected and what was found.
public enum KeyExportError: Error, Equatable, CustomStringConvertible {
    case fileTooLarge(size: Int, limit: Int)
    case unrecognizedFormat(firstBytes: String)
    case malformedArchive(reason: String)
    case tooManyEntries(count: Int, limit: Int)
    case missingEntry(name: String)
    case duplicateEntry(name: String)
    case unexpectedEntry(name: String)
    /// An entry's size (declared, or counted while inflating: zip bombs lie) exceeds the limit.
    case entryTooLarge(name: String, limit: Int, size: Int)
    case checksumMismatch(name: String)
    case wrongHeader(found: String)
    /// A field's bytes run past the end of the entry.
    case truncated(entry: String, offset: Int)
    /// Bytes that cannot start a protobuf field, after the last complete field.
    case trailingGarbage(entry: String, offset: Int, count: Int)
    case malformedProtobuf(entry: String, offset: Int, reason: String)
    case keyDataLength(list: String, index: Int, actual: Int)
    case rollingPeriod(list: String, index: Int, value: Int32)
    case rollingStartInterval(list: String, index: Int, value: Int32)
    /// report_type outside the proto's enum (0...5).
    case reportType(list: String, index: Int, value: Int64)
    /// days_since_onset_of_symptoms outside -14...14 (the framework's range: its data mapping
    /// maps exactly those days).
    case daysSinceOnset(list: String, index: Int, value: Int32)
    // Signature checks (only when a trust set is given).
    case noSignatures
    case emptySignature(keyId: String, keyVersion: String)
    case unsupportedAlgorithm(keyId: String, algorithm: String)
    case signatureBatchMismatch(keyId: String, expected: String, actual: String)
    case badSignature(keyId: String, keyVersion: String)
    case noTrustedSignature(present: [String])

    public var description: String {
        switch self {
        case .fileTooLarge(let s, let l): return "file is \(s) bytes, more than the limit of \(l)"
        case .unrecognizedFormat(let b): return "not a key export file: neither a ZIP archive nor an export.bin (starts with \(b))"
        case .malformedArchive(let r): return "malformed ZIP archive: \(r)"
        case .tooManyEntries(let c, let l): return "archive has \(c) entries; a key export has 2 (limit \(l))"
        case .missingEntry(let n): return "archive has no \(n)"
        case .duplicateEntry(let n): return "archive has \(n) more than once"
        case .unexpectedEntry(let n): return "archive has an unexpected entry '\(n)'; only export.bin and export.sig are allowed"
        case .entryTooLarge(let n, let l, let s): return "\(n) inflates to at least \(s) bytes, more than the limit of \(l)"
        case .checksumMismatch(let n): return "\(n) does not match its CRC-32"
        case .wrongHeader(let f): return "export.bin header is \(f), expected \"EK Export v1    \""
        case .truncated(let e, let o): return "\(e) is truncated: the field at offset \(o) runs past its end"
        case .trailingGarbage(let e, let o, let c): return "\(e) has \(c) bytes of trailing garbage at offset \(o)"
        case .malformedProtobuf(let e, let o, let r): return "\(e): malformed protobuf at offset \(o): \(r)"
        case .keyDataLength(let l, let i, let a): return "\(l)[\(i)]: key_data is \(a) bytes, expected 16"
        case .rollingPeriod(let l, let i, let v): return "\(l)[\(i)]: rolling_period \(v) is outside 1...144"
        case .rollingStartInterval(let l, let i, let v): return "\(l)[\(i)]: rolling_start_interval_number \(v) is negative"
        case .reportType(let l, let i, let v): return "\(l)[\(i)]: report_type \(v) is not a report type (0...5)"
        case .daysSinceOnset(let l, let i, let v): return "\(l)[\(i)]: days_since_onset_of_symptoms \(v) is outside -14...14"
        case .noSignatures: return "export.sig holds no signature, and a trusted signature is required"
        case .emptySignature(let id, let v): return "signature for key '\(id)' version '\(v)' is empty"
        case .unsupportedAlgorithm(let id, let a): return "signature for key '\(id)' uses algorithm \(a), expected 1.2.840.10045.4.3.2 (ECDSA P-256 SHA-256)"
        case .signatureBatchMismatch(let id, let e, let a): return "signature for key '\(id)' is for batch \(a), the export is batch \(e)"
        case .badSignature(let id, let v): return "signature for key '\(id)' version '\(v)' does not verify"
        case .noTrustedSignature(let p):
            return "no trusted key verifies this file (signatures present for: \(p.isEmpty ? "none" : p.joined(separator: ", ")))"
        }
    }
}

/// Size limits that bound the work a hostile file can cause.
public struct KeyExportLimits: Sendable, Equatable {
    /// Largest file accepted (ZIP or bare export.bin), checked before anything is parsed.
    public var maxFileSize: Int
    /// Largest export.bin, declared or actually inflated.
    public var maxExportSize: Int
    /// Largest export.sig, declared or actually inflated.
    public var maxSignatureFileSize: Int

    public init(maxFileSize: Int = 64 << 20, maxExportSize: Int = 64 << 20, maxSignatureFileSize: Int = 64 << 10) {
        self.maxFileSize = maxFileSize
        self.maxExportSize = maxExportSize
        self.maxSignatureFileSize = maxSignatureFileSize
    }

    /// About 2 million keys per file, beyond what servers publish in one batch (~750,000).
    public static let `default` = KeyExportLimits()
}

/// Who signed (SignatureInfo in export.bin and export.sig).
public struct KeyExportSignatureInfo: Sendable, Hashable {
    public var keyId: String
    public var keyVersion: String
    public var algorithm: String
    public init(keyId: String, keyVersion: String, algorithm: String = KeyExportSignatureInfo.ecdsaP256SHA256) {
        self.keyId = keyId
        self.keyVersion = keyVersion
        self.algorithm = algorithm
    }
    /// ASN.1 OID of ECDSA with SHA-256 (on P-256 here): the only algorithm GAEN uses.
    public static let ecdsaP256SHA256 = "1.2.840.10045.4.3.2"

    init(_ p: ExportProto_SignatureInfo) {
        self.init(keyId: p.verificationKeyID, keyVersion: p.verificationKeyVersion, algorithm: p.signatureAlgorithm)
    }
    var proto: ExportProto_SignatureInfo {
        var p = ExportProto_SignatureInfo()
        p.verificationKeyID = keyId
        p.verificationKeyVersion = keyVersion
        p.signatureAlgorithm = algorithm
        return p
    }
}

/// One TEKSignature from export.sig.
public struct KeyExportSignature: Sendable, Hashable {
    public var info: KeyExportSignatureInfo
    public var batchNum: Int32
    public var batchSize: Int32
    public var signature: Data
}

/// The export's fields other than its keys.
public struct KeyExportHeader: Sendable, Hashable {
    public var startTimestamp: UInt64
    public var endTimestamp: UInt64
    public var region: String
    public var batchNum: Int32
    public var batchSize: Int32
    public var signatureInfos: [KeyExportSignatureInfo]

    public init(startTimestamp: UInt64, endTimestamp: UInt64, region: String, batchNum: Int32 = 1, batchSize: Int32 = 1,
                signatureInfos: [KeyExportSignatureInfo] = []) {
        self.startTimestamp = startTimestamp
        self.endTimestamp = endTimestamp
        self.region = region
        self.batchNum = batchNum
        self.batchSize = batchSize
        self.signatureInfos = signatureInfos
    }

    /// A header for one batch whose time range spans `keys`: from the earliest key's first
    /// interval to the end of the latest key's validity (0...0 without keys).
    public init(covering keys: [DiagnosisKey], region: String) {
        let start = keys.map { UInt64($0.rollingStartIntervalNumber.rawValue) }.min() ?? 0
        let end = keys.map { UInt64($0.rollingStartIntervalNumber.rawValue) + UInt64($0.rollingPeriod) }.max() ?? 0
        self.init(startTimestamp: start * 600, endTimestamp: end * 600, region: region)
    }
}

/// Public keys a receiver trusts, by verification_key_id and optionally version. A key
/// added without a version is trusted for any version of that id.
public struct KeyExportTrustSet: Sendable {
    private var keys: [(keyId: String, version: String?, key: P256PublicKey)] = []
    public init() {}
    public mutating func add(keyId: String, version: String? = nil, key: P256PublicKey) {
        keys.append((keyId, version, key))
    }
    public var isEmpty: Bool { keys.isEmpty }
    func candidates(for info: KeyExportSignatureInfo) -> [P256PublicKey] {
        keys.filter { $0.keyId == info.keyId && ($0.version == nil || $0.version == info.keyVersion) }.map(\.key)
    }
}

/// A parsed, structurally valid key export file. The keys themselves are not held as
/// values: `keyBatches` decodes them on demand from export.bin, so matching never has
/// every key in memory at once.
public struct KeyExportFile: Sendable {
    public enum Container: String, Sendable { case zip, bareExport }

    public static let headerBytes: [UInt8] = Array("EK Export v1    ".utf8)

    public let container: Container
    public let header: KeyExportHeader
    /// From export.sig; empty for a bare export.bin.
    public let signatures: [KeyExportSignature]
    public let keyCount: Int
    public let revisedKeyCount: Int
    /// The whole export.bin, header included: what the signatures cover.
    public let exportBin: Data

    /// Parses a ZIP archive or a bare export.bin (told apart by their first bytes) and
    /// validates every key. Signatures are checked separately (`verify`).
    public init(parsing data: Data, limits: KeyExportLimits = .default) throws {
        guard data.count <= limits.maxFileSize else { throw KeyExportError.fileTooLarge(size: data.count, limit: limits.maxFileSize) }
        let prefix = [UInt8](data.prefix(16))
        let export: Data
        var sigFile: Data? = nil
        if prefix.starts(with: [0x50, 0x4b, 0x03, 0x04]) {
            (export, sigFile) = try KeyExportContainer.extract(zip: data, limits: limits)
            container = .zip
        } else if prefix == Self.headerBytes {
            guard data.count <= limits.maxExportSize else {
                throw KeyExportError.entryTooLarge(name: KeyExportContainer.exportName, limit: limits.maxExportSize, size: data.count)
            }
            export = data
            container = .bareExport
        } else {
            throw KeyExportError.unrecognizedFormat(firstBytes: Data(prefix.prefix(8)).hexString)
        }
        exportBin = export.startIndex == 0 ? export : Data(export) // rebase a slice; never copy 17 MB for nothing
        let headerFound = [UInt8](exportBin.prefix(16))
        guard headerFound == Self.headerBytes else {
            throw KeyExportError.wrongHeader(found: Self.printable(headerFound))
        }
        let scan = try ExportScan(exportBin)
        header = scan.header
        keyCount = scan.keyCount
        revisedKeyCount = scan.revisedKeyCount
        signatures = try sigFile.map(Self.parseSignatures) ?? []
    }

    private static func printable(_ bytes: [UInt8]) -> String {
        "\"" + bytes.map { $0 >= 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c ? String(UnicodeScalar($0)) : "\\x" + Data([$0]).hexString }.joined() + "\""
    }

    private static func parseSignatures(_ data: Data) throws -> [KeyExportSignature] {
        let list: ExportProto_TEKSignatureList
        do { list = try ExportProto_TEKSignatureList(serializedBytes: data) } catch {
            throw KeyExportError.malformedProtobuf(entry: KeyExportContainer.signatureName, offset: 0, reason: "\(error)")
        }
        return list.signatures.map {
            KeyExportSignature(info: KeyExportSignatureInfo($0.signatureInfo), batchNum: $0.batchNum, batchSize: $0.batchSize, signature: $0.signature)
        }
    }

    /// A signed ZIP whose export.bin is not a key export (a server's signed configuration):
    /// the same strict archive checks and signature list, the payload returned as it is.
    /// Returns the payload, the signature a trusted key verified and every signature's info.
    public static func verifiedPayload(zip data: Data, trust: KeyExportTrustSet,
                                       limits: KeyExportLimits = .default) throws -> (payload: Data, verifiedBy: KeyExportSignatureInfo, signatures: [KeyExportSignatureInfo]) {
        guard data.count <= limits.maxFileSize else { throw KeyExportError.fileTooLarge(size: data.count, limit: limits.maxFileSize) }
        guard data.starts(with: [0x50, 0x4b, 0x03, 0x04]) else {
            throw KeyExportError.unrecognizedFormat(firstBytes: Data(data.prefix(8)).hexString)
        }
        let (payload, sigFile) = try KeyExportContainer.extract(zip: data, limits: limits)
        let signatures = try parseSignatures(sigFile)
        guard !signatures.isEmpty else { throw KeyExportError.noSignatures }
        var firstFailure: KeyExportError? = nil
        for s in signatures {
            let keys = trust.candidates(for: s.info)
            guard !keys.isEmpty else { continue }
            guard s.info.algorithm == KeyExportSignatureInfo.ecdsaP256SHA256 else {
                firstFailure = firstFailure ?? .unsupportedAlgorithm(keyId: s.info.keyId, algorithm: s.info.algorithm)
                continue
            }
            if keys.contains(where: { (try? $0.isValidSignature(s.signature, for: payload)) == true }) { return (payload, s.info, signatures.map(\.info)) }
            firstFailure = firstFailure ?? .badSignature(keyId: s.info.keyId, keyVersion: s.info.keyVersion)
        }
        throw firstFailure ?? KeyExportError.noTrustedSignature(present: signatures.map { "\($0.info.keyId):\($0.info.keyVersion)" })
    }

    /// The result of checking signatures against a trust set.
    public struct Verification: Sendable {
        /// Per signature in export.sig (same order): true when a trusted key verified it.
        public var verified: [Bool]
        /// The first signature that verified.
        public var verifiedBy: KeyExportSignatureInfo? {
            zip(verified, signatures).first { $0.0 }?.1.info
        }
        let signatures: [KeyExportSignature]
    }

    /// Checks every signature against `trust` without judging the file.
    public func verify(against trust: KeyExportTrustSet) -> Verification {
        let results = signatures.map { (try? check($0, trust)) == true }
        return Verification(verified: results, signatures: signatures)
    }

    /// Returns the signature a trusted key verified, or throws the most specific reason why
    /// none did: a file no trusted key verifies is rejected whole.
    @discardableResult
    public func requireTrustedSignature(_ trust: KeyExportTrustSet) throws -> KeyExportSignatureInfo {
        guard !signatures.isEmpty else { throw KeyExportError.noSignatures }
        var firstFailure: KeyExportError? = nil
        for s in signatures {
            do {
                if try check(s, trust) { return s.info }
            } catch let e as KeyExportError {
                firstFailure = firstFailure ?? e
            }
        }
        throw firstFailure ?? KeyExportError.noTrustedSignature(present: signatures.map { "\($0.info.keyId):\($0.info.keyVersion)" })
    }

    /// true: verified by a trusted key; false: no trusted key for it; throws: a trusted key
    /// exists for it but the signature is empty, for another algorithm or batch, or wrong.
    private func check(_ s: KeyExportSignature, _ trust: KeyExportTrustSet) throws -> Bool {
        let keys = trust.candidates(for: s.info)
        guard !keys.isEmpty else { return false }
        guard !s.signature.isEmpty else { throw KeyExportError.emptySignature(keyId: s.info.keyId, keyVersion: s.info.keyVersion) }
        guard s.info.algorithm == KeyExportSignatureInfo.ecdsaP256SHA256 else {
            throw KeyExportError.unsupportedAlgorithm(keyId: s.info.keyId, algorithm: s.info.algorithm)
        }
        guard s.batchNum == header.batchNum, s.batchSize == header.batchSize else {
            throw KeyExportError.signatureBatchMismatch(keyId: s.info.keyId, expected: "\(header.batchNum)/\(header.batchSize)",
                                                        actual: "\(s.batchNum)/\(s.batchSize)")
        }
        for key in keys where (try? key.isValidSignature(s.signature, for: exportBin)) == true { return true }
        throw KeyExportError.badSignature(keyId: s.info.keyId, keyVersion: s.info.keyVersion)
    }

    /// The keys (field `keys`) in batches of at most `size`, decoded lazily.
    public func keyBatches(size: Int = 10_000) -> KeyBatches { KeyBatches(exportBin: exportBin, field: 7, batchSize: size) }
    /// The keys cut into independent encoded batches of at most `size`, without decoding
    /// them: each batch decodes on its own, so a matcher can decode batches on every core.
    /// Costs one walk over the top-level fields (no key decoding).
    public func encodedKeyBatches(size: Int = 10_000) -> [EncodedKeyBatch] { EncodedKeyBatch.cut(exportBin, field: 7, size: size) }
    public func encodedRevisedKeyBatches(size: Int = 10_000) -> [EncodedKeyBatch] { EncodedKeyBatch.cut(exportBin, field: 8, size: size) }

    /// The revised keys (field `revised_keys`) in batches of at most `size`.
    public func revisedKeyBatches(size: Int = 10_000) -> KeyBatches { KeyBatches(exportBin: exportBin, field: 8, batchSize: size) }
}
