#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf

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
