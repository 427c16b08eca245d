#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
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
            throw KeyExportError.unrecognizedFormat(firstBytes: prefix.prefix(8).map { CFormat.string("%02x", $0) }.joined())
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
        "\"" + bytes.map { $0 >= 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c ? String(UnicodeScalar($0)) : CFormat.string("\\x%02x", $0) }.joined() + "\""
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
            throw KeyExportError.unrecognizedFormat(firstBytes: [UInt8](data.prefix(8)).map { CFormat.string("%02x", $0) }.joined())
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

/// Diagnosis keys in batches, decoded from export.bin as the sequence is walked. Every key
/// was validated when the file was parsed, so decoding here cannot fail.
public struct KeyBatches: Sequence, Sendable {
    let exportBin: Data
    let field: UInt64
    let batchSize: Int

    public struct Iterator: IteratorProtocol {
        let exportBin: Data
        var offset: Int
        let field: UInt64
        let batchSize: Int

        public mutating func next() -> [DiagnosisKey]? {
            var batch: [DiagnosisKey] = []
            batch.reserveCapacity(batchSize)
            let (field, batchSize) = (self.field, self.batchSize)
            offset = exportBin.withUnsafeBytes { raw in
                var walker = WireWalker(raw, offset: offset)
                while batch.count < batchSize, let f = try? walker.next() {
                    guard f.number == field, f.wireType == 2,
                          let k = try? KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: "", index: 0)
                    else { continue }
                    batch.append(k.diagnosisKey)
                }
                return walker.offset
            }
            return batch.isEmpty ? nil : batch
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(exportBin: exportBin, offset: KeyExportFile.headerBytes.count, field: field, batchSize: Swift.max(1, batchSize))
    }
}

/// A run of export.bin holding `count` validated entries of one key list, decoded on demand.
public struct EncodedKeyBatch: Sendable {
    let exportBin: Data
    let range: Range<Int>
    let field: UInt64
    public let count: Int

    init(exportBin: Data, range: Range<Int>, field: UInt64, count: Int) {
        self.exportBin = exportBin
        self.range = range
        self.field = field
        self.count = count
    }

    /// `count` entries of export.bin's `keys` list (field 7: tag, length, TemporaryExposureKey)
    /// laid end to end, built in memory rather than cut from a file (GaenBench makes its keys
    /// this way, on the matcher's threads). Entries are validated when they are decoded: one
    /// that does not decode is counted invalid, as in a file.
    public init(keyEntries: Data, count: Int) {
        self.init(exportBin: keyEntries, range: 0..<keyEntries.count, field: 7, count: count)
    }

    public func decode() -> [DiagnosisKey] {
        var out: [DiagnosisKey] = []
        out.reserveCapacity(count)
        exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(UnsafeRawBufferPointer(rebasing: raw[..<range.upperBound]), offset: range.lowerBound)
            while let f = try? walker.next() {
                guard f.number == field, f.wireType == 2,
                      let k = try? KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: "", index: 0)
                else { continue }
                out.append(k.diagnosisKey)
            }
        }
        return out
    }

    /// Each valid key with its index in the batch, decoded to the compact record only.
    func forEachRecord(_ body: (Int, KeyRecord) -> Void) {
        exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(UnsafeRawBufferPointer(rebasing: raw[..<range.upperBound]), offset: range.lowerBound)
            var n = 0
            while let f = try? walker.next() {
                guard f.number == field, f.wireType == 2 else { continue }
                if let k = try? KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: "", index: 0) { body(n, k) }
                n += 1
            }
        }
    }

    static func cut(_ exportBin: Data, field: UInt64, size: Int) -> [EncodedKeyBatch] {
        let size = Swift.max(1, size)
        var batches: [EncodedKeyBatch] = []
        exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(raw, offset: KeyExportFile.headerBytes.count)
            var start = walker.offset, count = 0
            while let f = try? walker.next() {
                guard f.number == field else { continue }
                if count == 0 { start = f.range.lowerBound }
                count += 1
                if count == size {
                    batches.append(EncodedKeyBatch(exportBin: exportBin, range: start..<f.range.upperBound, field: field, count: count))
                    count = 0
                }
            }
            if count > 0 { batches.append(EncodedKeyBatch(exportBin: exportBin, range: start..<walker.offset, field: field, count: count)) }
        }
        return batches
    }
}

/// Walks the top level of a protobuf message field by field.
///
/// SwiftProtobuf's generated TemporaryExposureKeyExport would decode every key into one
/// array; a file of 750,000 keys would then sit in memory as values. Walking the top level
/// here lets each `keys` entry be decoded on its own with the generated
/// TemporaryExposureKey message, and everything else with the generated export message.
/// It reads from a raw buffer (within `withUnsafeBytes`) because byte-wise `Data` access
/// costs a dynamic exclusivity check per byte, a third of the parse time on large files.
struct WireWalker {
    struct Field {
        var number: UInt64
        var wireType: UInt8
        /// The whole field, tag included.
        var range: Range<Int>
        /// For length-delimited fields, the payload.
        var payload: Range<Int>
    }

    let bytes: UnsafeRawBufferPointer
    var offset: Int
    let name = KeyExportContainer.exportName

    init(_ bytes: UnsafeRawBufferPointer, offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    private mutating func varint(tagStart: Int, isTag: Bool) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else {
                if isTag { throw KeyExportError.trailingGarbage(entry: name, offset: tagStart, count: bytes.count - tagStart) }
                throw KeyExportError.truncated(entry: name, offset: tagStart)
            }
            let b = bytes[offset]
            offset += 1
            guard shift < 64, !(shift == 63 && b > 1) else {
                if isTag { throw KeyExportError.trailingGarbage(entry: name, offset: tagStart, count: bytes.count - tagStart) }
                throw KeyExportError.malformedProtobuf(entry: name, offset: tagStart, reason: "varint longer than 64 bits")
            }
            value |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// The next field, or nil at the end.
    mutating func next() throws -> Field? {
        guard offset < bytes.count else { return nil }
        let start = offset
        let tag = try varint(tagStart: start, isTag: true)
        let number = tag >> 3, wireType = UInt8(tag & 7)
        guard number >= 1, number <= 0x1FFF_FFFF, wireType == 0 || wireType == 1 || wireType == 2 || wireType == 5 else {
            offset = start
            throw KeyExportError.trailingGarbage(entry: name, offset: start, count: bytes.count - start)
        }
        var payload = offset..<offset
        switch wireType {
        case 0: _ = try varint(tagStart: start, isTag: false)
        case 1, 5:
            let n = wireType == 1 ? 8 : 4
            guard bytes.count - offset >= n else { throw KeyExportError.truncated(entry: name, offset: start) }
            offset += n
        default:
            let length = try varint(tagStart: start, isTag: false)
            guard length <= UInt64(bytes.count - offset) else { throw KeyExportError.truncated(entry: name, offset: start) }
            payload = offset..<offset + Int(length)
            offset += Int(length)
        }
        return Field(number: number, wireType: wireType, range: start..<offset, payload: payload)
    }
}

/// One validating pass over export.bin: decodes the non-key fields with the generated
/// message, and checks and counts every key without keeping it.
struct ExportScan {
    var header: KeyExportHeader
    var keyCount = 0
    var revisedKeyCount = 0

    init(_ exportBin: Data) throws {
        var rest = Data()
        var keys = 0, revised = 0
        try exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(raw, offset: KeyExportFile.headerBytes.count)
            while let f = try walker.next() {
                switch f.number {
                case 7, 8:
                    let list = f.number == 7 ? "keys" : "revised_keys"
                    guard f.wireType == 2 else {
                        throw KeyExportError.malformedProtobuf(entry: walker.name, offset: f.range.lowerBound, reason: "\(list) entry is not length-delimited")
                    }
                    _ = try KeyRecord(validating: UnsafeRawBufferPointer(rebasing: raw[f.payload]), list: list,
                                      index: f.number == 7 ? keys : revised, offset: f.range.lowerBound)
                    if f.number == 7 { keys += 1 } else { revised += 1 }
                default:
                    rest.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[f.range]))
                }
            }
        }
        keyCount = keys
        revisedKeyCount = revised
        let p: ExportProto_TemporaryExposureKeyExport
        do { p = try ExportProto_TemporaryExposureKeyExport(serializedBytes: rest) } catch {
            throw KeyExportError.malformedProtobuf(entry: KeyExportContainer.exportName, offset: 16, reason: "header fields: \(error)")
        }
        header = KeyExportHeader(startTimestamp: p.startTimestamp, endTimestamp: p.endTimestamp, region: p.region,
                                 batchNum: p.batchNum, batchSize: p.batchSize, signatureInfos: p.signatureInfos.map(KeyExportSignatureInfo.init))
    }

    /// Decodes one key with the generated message and checks what the format requires.
    static func validatedKey(_ bytes: UnsafeRawBufferPointer, list: String, index: Int, offset: Int = 0) throws -> ExportProto_TemporaryExposureKey {
        let k: ExportProto_TemporaryExposureKey
        do { k = try ExportProto_TemporaryExposureKey(serializedBytes: bytes.bytes) } catch {
            throw KeyExportError.malformedProtobuf(entry: KeyExportContainer.exportName, offset: offset, reason: "\(list)[\(index)]: \(error)")
        }
        guard k.keyData.count == TemporaryExposureKey.length else {
            throw KeyExportError.keyDataLength(list: list, index: index, actual: k.keyData.count)
        }
        guard k.rollingPeriod > 0, KeyRules.rollingPeriods.contains(UInt32(k.rollingPeriod)) else { throw KeyExportError.rollingPeriod(list: list, index: index, value: k.rollingPeriod) }
        guard k.rollingStartIntervalNumber >= 0 else {
            throw KeyExportError.rollingStartInterval(list: list, index: index, value: k.rollingStartIntervalNumber)
        }
        if k.hasDaysSinceOnsetOfSymptoms, !KeyRules.daysSinceOnset.contains(k.daysSinceOnsetOfSymptoms) {
            throw KeyExportError.daysSinceOnset(list: list, index: index, value: k.daysSinceOnsetOfSymptoms)
        }
        // swift-protobuf keeps an enum value it does not know aside (proto2), as if absent:
        // such a report_type is refused rather than read as "no report type".
        if !k.hasReportType, !k.unknownFields.data.isEmpty, let v = Self.unknownReportType(bytes) {
            throw KeyExportError.reportType(list: list, index: index, value: v)
        }
        return k
    }

    /// The last report_type (field 5, varint) in an encoded key, if any.
    static func unknownReportType(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        var walker = WireWalker(bytes, offset: 0)
        var found: Int64?
        while let f = try? walker.next() {
            guard f.number == 5, f.wireType == 0 else { continue }
            var v: UInt64 = 0, shift: UInt64 = 0
            for i in (f.range.lowerBound + 1)..<f.range.upperBound where shift < 64 {
                v |= UInt64(bytes[i] & 0x7f) << shift
                shift += 7
            }
            found = Int64(Int32(truncatingIfNeeded: v))
        }
        return found
    }

    /// A validated key as a DiagnosisKey.
    static func diagnosisKey(_ k: ExportProto_TemporaryExposureKey) -> DiagnosisKey {
        DiagnosisKey(
            key: try! TemporaryExposureKey(bytes: k.keyData), // length checked in validatedKey
            rollingStartIntervalNumber: ENIntervalNumber(UInt32(k.rollingStartIntervalNumber)),
            rollingPeriod: UInt32(k.rollingPeriod),
            transmissionRiskLevel: k.hasTransmissionRiskLevel ? k.transmissionRiskLevel : nil,
            reportType: k.hasReportType ? ReportType(rawValue: k.reportType.rawValue) : nil,
            daysSinceOnsetOfSymptoms: k.hasDaysSinceOnsetOfSymptoms ? k.daysSinceOnsetOfSymptoms : nil)
    }
}

/// A validated diagnosis key in compact form: no allocation until it becomes a DiagnosisKey.
///
/// Decoding: swift-protobuf's generated TemporaryExposureKey is the reader of record. In
/// front of it sits a decoder for the one encoding servers write (each field at most a
/// one-byte tag of the expected wire type, key_data of 16 bytes, valid values): GaenBench
/// keyfile measured swift-protobuf at about a microsecond and several allocations per key,
/// most of parse+verify. Anything else (unknown or repeated-in-other-form fields, other
/// lengths, out-of-range values) goes to swift-protobuf, which then accepts it or names the
/// error. Tests and FuzzKeyFile check that the two agree on every input the fast one takes.
struct KeyRecord: Equatable, Sendable {
    /// The TEK's 16 bytes as two words loaded from memory (byte order as in the file).
    var tek: (UInt64, UInt64)
    var rollingStartIntervalNumber: UInt32
    var rollingPeriod: UInt32
    var transmissionRiskLevel: Int32?
    var reportType: ReportType?
    var daysSinceOnsetOfSymptoms: Int32?

    init(tek: (UInt64, UInt64), rollingStartIntervalNumber: UInt32, rollingPeriod: UInt32, transmissionRiskLevel: Int32?,
         reportType: ReportType?, daysSinceOnsetOfSymptoms: Int32?) {
        self.tek = tek
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
        self.reportType = reportType
        self.daysSinceOnsetOfSymptoms = daysSinceOnsetOfSymptoms
    }

    static func == (a: KeyRecord, b: KeyRecord) -> Bool {
        a.tek == b.tek && a.rollingStartIntervalNumber == b.rollingStartIntervalNumber && a.rollingPeriod == b.rollingPeriod
            && a.transmissionRiskLevel == b.transmissionRiskLevel && a.reportType == b.reportType
            && a.daysSinceOnsetOfSymptoms == b.daysSinceOnsetOfSymptoms
    }

    /// Decodes and checks one encoded TemporaryExposureKey, throwing what is wrong with it.
    init(validating bytes: UnsafeRawBufferPointer, list: String, index: Int, offset: Int = 0) throws {
        if let fast = Self.fast(bytes) {
            self = fast
        } else {
            self.init(try ExportScan.validatedKey(bytes, list: list, index: index, offset: offset))
        }
    }

    /// From swift-protobuf's message, already validated (`ExportScan.validatedKey`).
    init(_ k: ExportProto_TemporaryExposureKey) {
        tek = k.keyData.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        rollingStartIntervalNumber = UInt32(k.rollingStartIntervalNumber)
        rollingPeriod = UInt32(k.rollingPeriod)
        transmissionRiskLevel = k.hasTransmissionRiskLevel ? k.transmissionRiskLevel : nil
        reportType = k.hasReportType ? ReportType(rawValue: k.reportType.rawValue) : nil
        daysSinceOnsetOfSymptoms = k.hasDaysSinceOnsetOfSymptoms ? k.daysSinceOnsetOfSymptoms : nil
    }

    var diagnosisKey: DiagnosisKey {
        DiagnosisKey(key: try! TemporaryExposureKey(bytes: withUnsafeBytes(of: tek) { Data($0) }), // always 16 bytes
                     rollingStartIntervalNumber: ENIntervalNumber(rollingStartIntervalNumber), rollingPeriod: rollingPeriod,
                     transmissionRiskLevel: transmissionRiskLevel, reportType: reportType, daysSinceOnsetOfSymptoms: daysSinceOnsetOfSymptoms)
    }

    /// The fast decoder: a valid key in the plain encoding, or nil (then swift-protobuf decides).
    /// Semantics follow swift-protobuf's: the last occurrence of a field wins, varints of up to
    /// ten bytes truncate to 32 bits, sint32 is zigzag, rolling_period defaults to 144.
    static func fast(_ bytes: UnsafeRawBufferPointer) -> KeyRecord? {
        guard let p = bytes.baseAddress else { return nil }
        let end = bytes.count
        var i = 0
        var hasKey = false
        var t0: UInt64 = 0, t1: UInt64 = 0
        var start: Int32 = 0, period: Int32 = 144
        var risk: Int32? = nil, type: ReportType? = nil, onset: Int32? = nil
        while i < end {
            let tag = p.load(fromByteOffset: i, as: UInt8.self)
            i &+= 1
            if tag == 0x0A { // 1: key_data, length-delimited, exactly 16 bytes
                guard i &+ 17 <= end, p.load(fromByteOffset: i, as: UInt8.self) == 16 else { return nil }
                t0 = p.loadUnaligned(fromByteOffset: i &+ 1, as: UInt64.self)
                t1 = p.loadUnaligned(fromByteOffset: i &+ 9, as: UInt64.self)
                hasKey = true
                i &+= 17
                continue
            }
            guard tag == 0x10 || tag == 0x18 || tag == 0x20 || tag == 0x28 || tag == 0x30 else { return nil }
            var v: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard i < end, shift <= 63 else { return nil }
                let c = p.load(fromByteOffset: i, as: UInt8.self)
                i &+= 1
                v |= UInt64(c & 0x7f) &<< shift
                if c & 0x80 == 0 { break }
                shift &+= 7
            }
            let v32 = Int32(truncatingIfNeeded: v)
            switch tag {
            case 0x10: risk = v32
            case 0x18: start = v32
            case 0x20: period = v32
            case 0x28:
                guard let t = ReportType(rawValue: Int(v32)) else { return nil } // swift-protobuf keeps unknown values aside
                type = t
            default:
                let z = UInt32(truncatingIfNeeded: v)
                onset = Int32(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
            }
        }
        guard hasKey, period >= 1, period <= 144, start >= 0 else { return nil }
        if let onset, !KeyRules.daysSinceOnset.contains(onset) { return nil } // swift-protobuf's path names the error
        return KeyRecord(tek: (t0, t1), rollingStartIntervalNumber: UInt32(start), rollingPeriod: UInt32(period),
                         transmissionRiskLevel: risk, reportType: type, daysSinceOnsetOfSymptoms: onset)
    }
}

/// The key decoders side by side, for the fuzz target: on any bytes, the fast decoder either
/// declines or yields exactly what swift-protobuf (with the same validation) yields.
public enum KeyDecoderCheck {
    /// False when the fast decoder accepted `encodedKey` with a result swift-protobuf does not give.
    public static func agree(_ encodedKey: Data) -> Bool {
        encodedKey.withUnsafeBytes { b in
            guard let fast = KeyRecord.fast(b) else { return true }
            guard let slow = try? ExportScan.validatedKey(b, list: "", index: 0) else { return false }
            return fast == KeyRecord(slow) && fast.diagnosisKey == ExportScan.diagnosisKey(slow)
        }
    }

    /// `agree` on every keys and revised_keys entry of a parsed file.
    public static func agreeOnEveryKey(of file: KeyExportFile) -> Bool {
        file.exportBin.withUnsafeBytes { raw in
            var walker = WireWalker(raw, offset: KeyExportFile.headerBytes.count)
            while let f = try? walker.next() {
                guard f.number == 7 || f.number == 8, f.wireType == 2 else { continue }
                if !agree(Data(UnsafeRawBufferPointer(rebasing: raw[f.payload]))) { return false }
            }
            return true
        }
    }
}
