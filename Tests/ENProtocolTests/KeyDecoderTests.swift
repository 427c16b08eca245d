import Foundation
import SwiftProtobuf
import Testing
@testable import ENProtocol

/// The fast key decoder against swift-protobuf (the reader of record): on every encoding it
/// accepts, the same key; on everything else it declines and swift-protobuf decides.
@Suite struct KeyDecoderTests {
    /// A random key as swift-protobuf writes it, each optional field present or not.
    static func randomKey(_ rng: inout SeededRandom) throws -> ExportProto_TemporaryExposureKey {
        var k = ExportProto_TemporaryExposureKey()
        let r = try rng.bytes(8)
        k.keyData = try rng.bytes(r[0] % 8 == 0 ? Int(r[1] % 20) : 16)
        if r[2] % 4 != 0 { k.rollingStartIntervalNumber = Int32(bitPattern: UInt32(r[3]) << 16 | UInt32(r[4])) &- (r[5] % 9 == 0 ? 1 << 30 : 0) }
        if r[2] % 3 != 0 { k.rollingPeriod = Int32(r[6] % 150) - (r[7] % 11 == 0 ? 200 : 0) }
        if r[3] % 2 == 0 { k.transmissionRiskLevel = Int32(r[4] % 9) - (r[5] % 3 == 0 ? 100_000 : 0) }
        if r[4] % 3 == 0 { k.reportType = ExportProto_TemporaryExposureKey.ReportType(rawValue: Int(r[6] % 6))! }
        if r[5] % 2 == 0 { k.daysSinceOnsetOfSymptoms = Int32(r[7] % 29) - 14 + (r[1] % 13 == 0 ? Int32.min / 2 : 0) }
        return k
    }

    static func slow(_ data: Data) -> KeyRecord? {
        data.withUnsafeBytes { try? KeyRecord(ExportScan.validatedKey($0, list: "", index: 0)) }
    }

    static func fast(_ data: Data) -> KeyRecord? { data.withUnsafeBytes { KeyRecord.fast($0) } }

    @Test func serverEncodingsDecodeAlikeOnBothPaths() throws {
        var rng = SeededRandom(seed: 0xC0DE)
        var fastTaken = 0
        for _ in 0..<5000 {
            let data: Data = try Self.randomKey(&rng).serializedBytes()
            let slow = Self.slow(data), fast = Self.fast(data)
            // The fast path takes every valid key in this plain encoding, and agrees.
            #expect(fast == slow, "\(data.hexString)")
            #expect(KeyDecoderCheck.agree(data))
            if fast != nil { fastTaken += 1 }
        }
        #expect(fastTaken > 1000)
    }

    @Test func unusualAndDamagedEncodingsNeverDisagree() throws {
        var rng = SeededRandom(seed: 0xBAD)
        var fastTaken = 0, declined = 0
        for n in 0..<20_000 {
            let encoded: [UInt8] = try Self.randomKey(&rng).serializedBytes()
            var bytes = encoded
            let r = try rng.bytes(6)
            switch n % 8 {
            case 0 where !bytes.isEmpty: bytes[Int(r[0]) % bytes.count] ^= 1 << (r[1] % 8) // a bit flip
            case 1 where !bytes.isEmpty: bytes.removeLast(Int(r[0]) % bytes.count) // truncated
            case 2: bytes += [0x38, r[0] & 0x7f] // unknown field 7
            case 3: bytes += [0x28, 0x63] // report_type 99: swift-protobuf keeps the earlier value
            case 4: bytes += [0x20, 0x80 | (r[0] % 144), 0x80, 0x80, 0x00] // a padded varint: non-canonical but valid
            case 5: bytes += [0x0A, 0x10] + (0..<16).map { UInt8($0) } // key_data again: the last wins
            case 6: bytes.insert(contentsOf: [0x0D, r[0], r[1], r[2], r[3]], at: 0) // key_data's number with fixed32
            default: bytes += [0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, r[0] % 4] // 10-byte varint
            }
            let data = Data(bytes)
            let kind = n % 8
            #expect(KeyDecoderCheck.agree(data), "case \(kind): \(data.hexString)")
            if let fast = Self.fast(data) {
                fastTaken += 1
                #expect(fast == Self.slow(data))
            } else {
                declined += 1
            }
        }
        #expect(fastTaken > 1000 && declined > 1000)
    }

    /// Whole files: keys decoded by the batch readers equal swift-protobuf's decoding of the
    /// same entries.
    @Test func batchesEqualSwiftProtobufDecoding() throws {
        var rng = SeededRandom(seed: 5)
        var keys: [DiagnosisKey] = []
        for i in 0..<500 {
            keys.append(DiagnosisKey(key: try TemporaryExposureKey(bytes: rng.bytes(16)),
                                     rollingStartIntervalNumber: ENIntervalNumber(2_650_000 + UInt32(i % 14) * 144),
                                     rollingPeriod: UInt32(1 + i % 144), transmissionRiskLevel: i % 3 == 0 ? nil : Int32(i % 9),
                                     reportType: i % 4 == 0 ? nil : ReportType(rawValue: i % 6), daysSinceOnsetOfSymptoms: i % 5 == 0 ? nil : Int32(i % 29) - 14))
        }
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: keys)
        let file = try KeyExportFile(parsing: bin)
        let reference = try ExportProto_TemporaryExposureKeyExport(serializedBytes: bin.dropFirst(16)).keys.map(ExportScan.diagnosisKey)
        #expect(reference == keys)
        #expect(file.keyBatches(size: 77).flatMap { $0 } == reference)
        #expect(file.encodedKeyBatches(size: 33).flatMap { $0.decode() } == reference)
    }
}
