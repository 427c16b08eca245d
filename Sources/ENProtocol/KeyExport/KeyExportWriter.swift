#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf
import ZIPFoundation

/// Errors of writing a key export file.
public enum KeyExportWriteError: Error, Equatable, CustomStringConvertible {
    case invalidKey(index: Int, reason: String)
    case archive(reason: String)

    public var description: String {
        switch self {
        case .invalidKey(let i, let r): return "key \(i): \(r)"
        case .archive(let r): return "cannot build the ZIP archive: \(r)"
        }
    }
}

/// Builds signed key export files: export.bin (header + TemporaryExposureKeyExport) and
/// export.sig (TEKSignatureList), zipped. One batch: batch_num 1 of batch_size 1.
public enum KeyExportWriter {
    /// The bytes of export.bin for `keys`. `header.signatureInfos` is written as given.
    public static func exportBin(header: KeyExportHeader, keys: [DiagnosisKey]) throws -> Data {
        var p = ExportProto_TemporaryExposureKeyExport()
        p.startTimestamp = header.startTimestamp
        p.endTimestamp = header.endTimestamp
        p.region = header.region
        p.batchNum = header.batchNum
        p.batchSize = header.batchSize
        p.signatureInfos = header.signatureInfos.map(\.proto)
        p.keys = try keys.enumerated().map { index, key in
            guard (1...144).contains(key.rollingPeriod) else {
                throw KeyExportWriteError.invalidKey(index: index, reason: "rolling period \(key.rollingPeriod) is outside 1...144")
            }
            guard key.rollingStartIntervalNumber.rawValue <= UInt32(Int32.max) else {
                throw KeyExportWriteError.invalidKey(index: index, reason: "rolling start interval number does not fit the format's int32")
            }
            var k = ExportProto_TemporaryExposureKey()
            k.keyData = key.key.bytes
            k.rollingStartIntervalNumber = Int32(key.rollingStartIntervalNumber.rawValue)
            k.rollingPeriod = Int32(key.rollingPeriod)
            if let t = key.transmissionRiskLevel { k.transmissionRiskLevel = t }
            if let r = key.reportType { k.reportType = ExportProto_TemporaryExposureKey.ReportType(rawValue: r.rawValue) ?? .unknown }
            if let d = key.daysSinceOnsetOfSymptoms { k.daysSinceOnsetOfSymptoms = d }
            return k
        }
        var out = Data(KeyExportFile.headerBytes)
        out.append(try p.serializedData())
        return out
    }

    /// A signed ZIP: export.bin for `keys`, with one signature by `signingKey` under
    /// `keyId`/`keyVersion`, which is also recorded in export.bin's signature_infos.
    public static func signedArchive(header: KeyExportHeader, keys: [DiagnosisKey], signingKey: P256PrivateKey,
                                     keyId: String, keyVersion: String) throws -> Data {
        var header = header
        let info = KeyExportSignatureInfo(keyId: keyId, keyVersion: keyVersion)
        header.signatureInfos = [info]
        let bin = try exportBin(header: header, keys: keys)
        var sig = ExportProto_TEKSignature()
        sig.signatureInfo = info.proto
        sig.batchNum = header.batchNum
        sig.batchSize = header.batchSize
        sig.signature = try signingKey.signature(for: bin)
        var list = ExportProto_TEKSignatureList()
        list.signatures = [sig]
        return try zip([(KeyExportContainer.exportName, bin), (KeyExportContainer.signatureName, try list.serializedData())])
    }

    /// Zips named entries in memory (deflate), in the given order.
    static func zip(_ entries: [(name: String, data: Data)]) throws -> Data {
        do {
            let archive = try Archive(accessMode: .create)
            for (name, data) in entries {
                // A fixed date keeps output reproducible: the same keys give the same export.bin.
                try archive.addEntry(with: name, type: .file, uncompressedSize: Int64(data.count),
                                     modificationDate: Date(timeIntervalSince1970: 315_532_800), permissions: 0o644,
                                     compressionMethod: .deflate) { position, size in
                    data.subdata(in: Int(position)..<Int(position) + size)
                }
            }
            guard let bytes = archive.data else { throw KeyExportWriteError.archive(reason: "no in-memory data") }
            return bytes
        } catch let e as KeyExportWriteError {
            throw e
        } catch {
            throw KeyExportWriteError.archive(reason: "\(error)")
        }
    }
}
