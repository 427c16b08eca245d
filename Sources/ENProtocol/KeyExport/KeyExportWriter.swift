#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CGaenZlib
import SwiftProtobuf

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

/// One signing key and the SignatureInfo recorded with its signature.
public struct KeyExportSigner: Sendable {
    public var key: P256PrivateKey
    public var info: KeyExportSignatureInfo
    public init(key: P256PrivateKey, info: KeyExportSignatureInfo) {
        self.key = key
        self.info = info
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
        try signedArchive(header: header, keys: keys,
                          signers: [KeyExportSigner(key: signingKey, info: KeyExportSignatureInfo(keyId: keyId, keyVersion: keyVersion))])
    }

    /// A signed ZIP with one signature per signer, in the given order (a server rotating its
    /// key lists the newest first); export.bin's signature_infos lists them in the same order.
    public static func signedArchive(header: KeyExportHeader, keys: [DiagnosisKey], signers: [KeyExportSigner]) throws -> Data {
        var header = header
        header.signatureInfos = signers.map(\.info)
        let bin = try exportBin(header: header, keys: keys)
        return try signedZip(exportBin: bin, batchNum: header.batchNum, batchSize: header.batchSize, signers: signers)
    }

    /// A ZIP of `exportBin` (any bytes: a key export, or a signed configuration) and an
    /// export.sig holding one TEKSignature per signer over exactly those bytes.
    public static func signedZip(exportBin bin: Data, batchNum: Int32 = 1, batchSize: Int32 = 1, signers: [KeyExportSigner]) throws -> Data {
        var list = ExportProto_TEKSignatureList()
        list.signatures = try signers.map { signer in
            var sig = ExportProto_TEKSignature()
            sig.signatureInfo = signer.info.proto
            sig.batchNum = batchNum
            sig.batchSize = batchSize
            sig.signature = try signer.key.signature(for: bin)
            return sig
        }
        return try zip([(KeyExportContainer.exportName, bin), (KeyExportContainer.signatureName, try list.serializedData())])
    }

    /// Zips named entries in memory (deflate), in the given order.
    ///
    /// Written on zlib here rather than with a ZIP library because the one we used
    /// (ZIPFoundation) imports full Foundation, which gaend must not link (the idle
    /// daemon's footprint, scripts/measure-idle.sh). The archive is the plain form
    /// every reader takes (KeyExportContainer's strict check included): for each entry a local
    /// header with its sizes and CRC-32, the raw deflate stream, then the central directory and
    /// the end record; no data descriptors, no extra fields, no ZIP64 (an entry or archive of
    /// 4 GiB or more is an error). A fixed date (1980-01-01 00:00, MS-DOS time's first day)
    /// keeps output reproducible: the same keys give the same file.
    static func zip(_ entries: [(name: String, data: Data)]) throws -> Data {
        let versionNeeded: UInt16 = 20 // 2.0: deflate
        let madeBy: UInt16 = 3 << 8 | 20 // Unix, 2.0: external attributes hold a Unix mode
        let dosTime: UInt16 = 0, dosDate: UInt16 = 0 << 9 | 1 << 5 | 1 // 1980-01-01 00:00
        let mode: UInt32 = 0o100644 // a regular file, rw-r--r--
        var out = Data()
        var central = Data()
        func le16(_ v: UInt16, _ d: inout Data) { d.append(UInt8(v & 0xff)); d.append(UInt8(v >> 8)) }
        func le32(_ v: UInt32, _ d: inout Data) { le16(UInt16(v & 0xffff), &d); le16(UInt16(v >> 16), &d) }
        func fits(_ n: Int, _ what: String) throws -> UInt32 {
            guard n < 0xFFFF_FFFF else { throw KeyExportWriteError.archive(reason: "\(what) is 4 GiB or more (ZIP64 is not written)") }
            return UInt32(n)
        }
        guard entries.count <= 0xFFFF else { throw KeyExportWriteError.archive(reason: "\(entries.count) entries (at most 65535)") }
        for (name, data) in entries {
            let nameBytes = Array(name.utf8)
            guard !nameBytes.isEmpty, nameBytes.count <= 0xFFFF else { throw KeyExportWriteError.archive(reason: "entry name '\(name)' is empty or too long") }
            let usize = try fits(data.count, name)
            let compressed = try deflateRaw(data)
            let crc = data.withUnsafeBytes { UInt32(crc32_z(0, $0.bindMemory(to: Bytef.self).baseAddress, $0.count)) }
            let csize = try fits(compressed.count, "\(name) compressed")
            let offset = try fits(out.count, "the archive before \(name)")
            // Local header (30 bytes + name) and data.
            le32(0x0403_4b50, &out); le16(versionNeeded, &out); le16(0, &out); le16(8, &out)
            le16(dosTime, &out); le16(dosDate, &out); le32(crc, &out); le32(csize, &out); le32(usize, &out)
            le16(UInt16(nameBytes.count), &out); le16(0, &out)
            out.append(contentsOf: nameBytes)
            out.append(compressed)
            // Its central directory entry (46 bytes + name).
            le32(0x0201_4b50, &central); le16(madeBy, &central); le16(versionNeeded, &central); le16(0, &central); le16(8, &central)
            le16(dosTime, &central); le16(dosDate, &central); le32(crc, &central); le32(csize, &central); le32(usize, &central)
            le16(UInt16(nameBytes.count), &central); le16(0, &central); le16(0, &central) // name, extra, comment lengths
            le16(0, &central); le16(0, &central); le32(mode << 16, &central); le32(offset, &central) // disk, internal, external, offset
            central.append(contentsOf: nameBytes)
        }
        let centralOffset = try fits(out.count, "the archive")
        let centralSize = try fits(central.count, "the central directory")
        out.append(central)
        _ = try fits(out.count, "the archive")
        le32(0x0605_4b50, &out); le16(0, &out); le16(0, &out)
        le16(UInt16(entries.count), &out); le16(UInt16(entries.count), &out)
        le32(centralSize, &out); le32(centralOffset, &out); le16(0, &out)
        return out
    }

    /// `data` as one raw deflate stream (no zlib header: ZIP's method 8) at zlib's default level.
    private static func deflateRaw(_ data: Data) throws -> Data {
        var stream = z_stream()
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                            zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw KeyExportWriteError.archive(reason: "zlib would not start")
        }
        defer { deflateEnd(&stream) }
        var out = Data(count: Int(deflateBound(&stream, uLong(data.count))))
        let status: Int32 = data.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = output.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(output.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        // deflateBound is enough for one Z_FINISH call.
        guard status == Z_STREAM_END else { throw KeyExportWriteError.archive(reason: "zlib deflate status \(status)") }
        out.count = Int(stream.total_out)
        return out
    }
}
