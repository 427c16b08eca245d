import CGaenZlib
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The ZIP layer of a key export file: exactly `export.bin` and `export.sig`.
///
/// zlib does the decoding: one raw-inflate call per entry into a buffer of the declared size,
/// and zlib's crc32 (GaenBench keyfile: ZIPFoundation's chunked extraction with its Swift CRC
/// loop held parse+verify to 35 MB/s of ZIP). Before it runs, `ZipLayout` checks the
/// archive's structure strictly, because the signature covers export.bin only: nothing else
/// protects the archive's own bytes, and a lenient reader would accept an archive whose
/// headers were altered. Every field that is stored twice (local header and central
/// directory, data descriptor) must agree, the records must tile the file with no gap, no
/// overlap and nothing after the end record, and the fields stored once must hold values a
/// writer produces for a plain file. This is a structure check, not a codec.
enum KeyExportContainer {
    static let exportName = "export.bin"
    static let signatureName = "export.sig"
    static let maxEntries = 16

    /// Returns export.bin and export.sig from a ZIP archive.
    static func extract(zip data: Data, limits: KeyExportLimits) throws -> (export: Data, signature: Data) {
        let layout = try ZipLayout(data)
        var byName: [String: ZipLayout.Entry] = [:]
        for entry in layout.entries {
            guard entry.name == exportName || entry.name == signatureName else {
                throw KeyExportError.unexpectedEntry(name: entry.name)
            }
            guard byName[entry.name] == nil else { throw KeyExportError.duplicateEntry(name: entry.name) }
            byName[entry.name] = entry
        }
        guard let bin = byName[exportName] else { throw KeyExportError.missingEntry(name: exportName) }
        guard let sig = byName[signatureName] else { throw KeyExportError.missingEntry(name: signatureName) }

        let export = try inflate(bin, from: data, limit: limits.maxExportSize)
        let signature = try inflate(sig, from: data, limit: limits.maxSignatureFileSize)
        return (export, signature)
    }

    /// Inflates one entry and checks its CRC-32. The declared size was checked against the
    /// limit already, and the output buffer has room for one byte more than it: a stream that
    /// fills it lies about its size (a zip bomb does), and is then measured on, in a scratch
    /// buffer and never past the limit, only to say which error it is.
    private static func inflate(_ entry: ZipLayout.Entry, from data: Data, limit: Int) throws -> Data {
        let declared = Int(entry.uncompressedSize)
        guard declared <= limit else {
            throw KeyExportError.entryTooLarge(name: entry.name, limit: limit, size: declared)
        }
        var out = Data(count: declared + 1)
        let produced: Int = try data.withUnsafeBytes { archive in
            let compressed = UnsafeRawBufferPointer(rebasing: archive[entry.dataOffset..<(entry.dataOffset + Int(entry.compressedSize))])
            return try out.withUnsafeMutableBytes { o in
                if entry.method == 0 {
                    o.copyMemory(from: compressed) // stored: sizes are equal (ZipLayout checked)
                    return compressed.count
                }
                return try inflateRaw(compressed, into: o, entry: entry, limit: limit)
            }
        }
        guard produced == declared else {
            throw KeyExportError.malformedArchive(reason: "\(entry.name) inflates to \(produced) bytes but its header says \(declared)")
        }
        out.count = declared
        let crc = out.withUnsafeBytes { b in
            UInt32(crc32_z(0, b.bindMemory(to: Bytef.self).baseAddress, b.count))
        }
        guard crc == entry.crc32 else {
            throw KeyExportError.checksumMismatch(name: entry.name)
        }
        return out
    }

    /// Raw deflate (no zlib header, as ZIP stores it) of `input` into `output`, in one call;
    /// returns the bytes produced. The stream must end exactly at the end of `input`.
    private static func inflateRaw(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
                                   entry: ZipLayout.Entry, limit: Int) throws -> Int {
        var stream = z_stream()
        guard inflateInit2_(&stream, -MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw KeyExportError.malformedArchive(reason: "cannot extract \(entry.name): zlib would not start")
        }
        defer { inflateEnd(&stream) }
        stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
        stream.avail_in = uInt(input.count)
        stream.next_out = output.bindMemory(to: Bytef.self).baseAddress
        stream.avail_out = uInt(output.count)
        let status = CGaenZlib.inflate(&stream, Z_FINISH)
        var produced = output.count - Int(stream.avail_out)
        switch status {
        case Z_STREAM_END:
            guard stream.avail_in == 0 else {
                throw KeyExportError.malformedArchive(reason: "\(entry.name): \(stream.avail_in) bytes after the end of its deflate stream")
            }
            return produced
        case Z_OK where stream.avail_out == 0, Z_BUF_ERROR where stream.avail_out == 0:
            // More output than declared: measure on (bounded by the limit) to name the error.
            var scratch = [UInt8](repeating: 0, count: 64 << 10)
            var more = Z_OK
            while (more == Z_OK || more == Z_BUF_ERROR) && stream.avail_out == 0 {
                if produced > limit { throw KeyExportError.entryTooLarge(name: entry.name, limit: limit, size: produced) }
                more = scratch.withUnsafeMutableBytes { s in
                    stream.next_out = s.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(s.count)
                    let r = CGaenZlib.inflate(&stream, Z_FINISH)
                    produced += s.count - Int(stream.avail_out)
                    return r
                }
            }
            if produced > limit { throw KeyExportError.entryTooLarge(name: entry.name, limit: limit, size: produced) }
            return produced
        case Z_BUF_ERROR:
            throw KeyExportError.malformedArchive(reason: "cannot extract \(entry.name): its deflate stream is truncated")
        default:
            let message = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
            throw KeyExportError.malformedArchive(reason: "cannot extract \(entry.name): \(message)")
        }
    }
}

/// Strict structural reading of a ZIP archive's records (see `KeyExportContainer`).
struct ZipLayout {
    struct Entry {
        var name: String
        var method: UInt16
        var crc32: UInt32
        var compressedSize: UInt32
        var uncompressedSize: UInt32
        /// Where the entry's data starts in the archive.
        var dataOffset: Int
    }

    let entries: [Entry]

    private static let localSignature: UInt32 = 0x0403_4b50
    private static let centralSignature: UInt32 = 0x0201_4b50
    private static let endSignature: UInt32 = 0x0605_4b50
    private static let descriptorSignature: UInt32 = 0x0807_4b50

    init(_ data: Data) throws {
        entries = try data.withUnsafeBytes { try Self.parse($0) } // no copy of the archive
    }

    private static func fail(_ reason: String) -> KeyExportError { .malformedArchive(reason: reason) }

    private static func u16(_ b: UnsafeRawBufferPointer, _ at: Int) throws -> UInt16 {
        guard at >= 0, at + 2 <= b.count else { throw fail("record at offset \(at) runs past the end of the file") }
        return UInt16(b[at]) | UInt16(b[at + 1]) << 8
    }

    private static func u32(_ b: UnsafeRawBufferPointer, _ at: Int) throws -> UInt32 {
        guard at >= 0, at + 4 <= b.count else { throw fail("record at offset \(at) runs past the end of the file") }
        return UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    private static func parse(_ b: UnsafeRawBufferPointer) throws -> [Entry] {
        // End of central directory: 22 bytes plus a comment of up to 65,535 bytes at the end.
        guard b.count >= 22 else { throw fail("file is \(b.count) bytes, too short for a ZIP end record") }
        var eocd = -1
        var p = b.count - 22
        let lowest = max(0, b.count - 22 - 65_535)
        while p >= lowest {
            if b[p] == 0x50, b[p + 1] == 0x4b, b[p + 2] == 0x05, b[p + 3] == 0x06 { eocd = p; break }
            p -= 1
        }
        guard eocd >= 0 else { throw fail("no end-of-central-directory record") }
        let commentLength = Int(try u16(b, eocd + 20))
        let end = eocd + 22 + commentLength
        if end < b.count {
            throw KeyExportError.trailingGarbage(entry: "archive", offset: end, count: b.count - end)
        }
        guard end == b.count else { throw fail("end record's comment runs past the end of the file") }
        guard try u16(b, eocd + 4) == 0, try u16(b, eocd + 6) == 0 else { throw fail("multi-disk archives are not supported") }
        let onDisk = Int(try u16(b, eocd + 8)), total = Int(try u16(b, eocd + 10))
        guard onDisk == total else { throw fail("end record counts \(onDisk) entries on this disk but \(total) in all") }
        guard total <= KeyExportContainer.maxEntries else { throw KeyExportError.tooManyEntries(count: total, limit: KeyExportContainer.maxEntries) }
        let cdSize = Int(try u32(b, eocd + 12)), cdOffset = Int(try u32(b, eocd + 16))
        guard cdSize != 0xFFFF_FFFF, cdOffset != 0xFFFF_FFFF else { throw fail("ZIP64 archives are not supported") }
        guard cdOffset + cdSize == eocd else {
            throw fail("central directory (offset \(cdOffset), \(cdSize) bytes) does not end where the end record starts (\(eocd))")
        }

        var entries: [Entry] = []
        var spans: [(start: Int, end: Int)] = []
        p = cdOffset
        for index in 0..<total {
            guard try u32(b, p) == centralSignature else { throw fail("central directory entry \(index) has a bad signature") }
            let madeBy = try u16(b, p + 4)
            let needed = try u16(b, p + 6)
            let flags = try u16(b, p + 8)
            let method = try u16(b, p + 10)
            let time = try u16(b, p + 12), date = try u16(b, p + 14)
            let crc = try u32(b, p + 16)
            let csize = try u32(b, p + 20), usize = try u32(b, p + 24)
            let nameLength = Int(try u16(b, p + 28)), extraLength = Int(try u16(b, p + 30))
            let commentLength = Int(try u16(b, p + 32))
            let diskStart = try u16(b, p + 34)
            let internalAttributes = try u16(b, p + 36)
            let externalAttributes = try u32(b, p + 38)
            let localOffset = Int(try u32(b, p + 42))
            let nameStart = p + 46
            guard nameStart + nameLength + extraLength + commentLength <= eocd else {
                throw fail("central directory entry \(index) runs into the end record")
            }
            let nameBytes = Array(b[nameStart..<nameStart + nameLength])
            guard !nameBytes.isEmpty, nameBytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
                throw fail("central directory entry \(index) has an empty or non-ASCII name")
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            p = nameStart + nameLength + extraLength + commentLength

            // Fields stored only here: accept what writers put there for a plain file.
            let host = madeBy >> 8, specVersion = madeBy & 0xff
            guard [0, 3, 10, 19].contains(host), specVersion <= 63 else {
                throw fail("\(name): unknown 'version made by' 0x\(String(madeBy, radix: 16))")
            }
            guard needed <= 63 else { throw fail("\(name): unknown 'version needed' \(needed)") }
            guard flags & 0x0001 == 0 else { throw fail("\(name) is encrypted") }
            // Allowed flags: deflate options (bits 1-2), data descriptor (3), UTF-8 names (11).
            guard flags & ~UInt16(0x080e) == 0 else { throw fail("\(name) has unsupported flags 0x\(String(flags, radix: 16))") }
            guard method == 0 || method == 8 else { throw fail("\(name) uses compression method \(method), not stored or deflate") }
            guard method == 8 || csize == usize else { throw fail("\(name) is stored but its sizes differ") }
            guard csize != 0xFFFF_FFFF, usize != 0xFFFF_FFFF, localOffset != 0xFFFF_FFFF else {
                throw fail("ZIP64 entries are not supported")
            }
            guard diskStart == 0 else { throw fail("\(name) starts on disk \(diskStart)") }
            guard internalAttributes & ~UInt16(1) == 0 else { throw fail("\(name) has unknown internal attributes") }
            // MS-DOS attributes (low byte): a file entry is never a directory (0x10) or volume label (0x08).
            guard externalAttributes & 0xff00 == 0, externalAttributes & 0x18 == 0 else {
                throw fail("\(name) has the attributes of a directory or other non-file")
            }
            let unixMode = externalAttributes >> 16
            if host == 3 || host == 19 {
                // The file type bits may be absent (Python's zipfile writes bare permissions).
                let type = unixMode & 0o170000
                guard type == 0 || type == 0o100000 else { throw fail("\(name) is not a regular file") }
            } else {
                guard unixMode == 0 else { throw fail("\(name) has Unix attributes on a non-Unix host") }
            }

            // The local header must repeat the central directory.
            let l = localOffset
            guard try u32(b, l) == localSignature else { throw fail("\(name): no local header at offset \(l)") }
            guard try u16(b, l + 4) == needed, try u16(b, l + 6) == flags, try u16(b, l + 8) == method,
                  try u16(b, l + 10) == time, try u16(b, l + 12) == date else {
                throw fail("\(name): local header disagrees with the central directory")
            }
            let localCRC = try u32(b, l + 14), localC = try u32(b, l + 18), localU = try u32(b, l + 22)
            let hasDescriptor = flags & 0x0008 != 0
            let agrees = localCRC == crc && localC == csize && localU == usize
            // With a data descriptor, the local fields are zero (the writer did not know them yet).
            guard agrees || (hasDescriptor && localCRC == 0 && localC == 0 && localU == 0) else {
                throw fail("\(name): local header's checksum or sizes disagree with the central directory")
            }
            guard Int(try u16(b, l + 26)) == nameLength, Array(b[min(b.count, l + 30)..<min(b.count, l + 30 + nameLength)]) == nameBytes else {
                throw fail("\(name): local header names another file")
            }
            let localExtra = Int(try u16(b, l + 28))
            let dataStart = l + 30 + nameLength + localExtra
            var dataEnd = dataStart + Int(csize)
            guard dataEnd <= cdOffset else { throw fail("\(name): data runs into the central directory") }
            if hasDescriptor {
                var q = dataEnd
                if try u32(b, q) == descriptorSignature { q += 4 }
                guard try u32(b, q) == crc, try u32(b, q + 4) == csize, try u32(b, q + 8) == usize else {
                    throw fail("\(name): data descriptor disagrees with the central directory")
                }
                dataEnd = q + 12
            }
            spans.append((l, dataEnd))
            entries.append(Entry(name: name, method: method, crc32: crc, compressedSize: csize, uncompressedSize: usize, dataOffset: dataStart))
        }
        guard p == eocd else { throw fail("central directory size does not match its entries") }
        // Local records must tile [0, central directory) exactly.
        var cursor = 0
        for span in spans.sorted(by: { $0.start < $1.start }) {
            guard span.start == cursor else {
                throw fail(span.start > cursor ? "unaccounted bytes at offset \(cursor)" : "overlapping entries at offset \(span.start)")
            }
            cursor = span.end
        }
        guard cursor == cdOffset else { throw fail("unaccounted bytes at offset \(cursor) before the central directory") }
        return entries
    }
}
