import CGaenZlib
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// gzip files (`.csv.gz`, as datasets are often published) read directly: a file that starts
/// with the gzip magic is inflated, whatever its name; every other file is returned as is.
public enum Gzip {
    public struct Invalid: Error, CustomStringConvertible {
        public let file: String
        public let reason: String
        public var description: String { "\(file): \(reason)" }
    }

    public static func isGzip(_ bytes: [UInt8]) -> Bool { bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B }

    /// The file's bytes, inflated when gzip (several members concatenated are read in turn, as
    /// gunzip does). `limit` bounds the inflated size.
    public static func contents(of url: URL, limit: Int = 1 << 34) throws -> [UInt8] {
        let raw = [UInt8](try Data(contentsOf: url))
        return isGzip(raw) ? try inflate(raw, file: url.path, limit: limit) : raw
    }

    public static func inflate(_ input: [UInt8], file: String, limit: Int = 1 << 34) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, max(1 << 16, input.count * 4)))
        var stream = z_stream()
        // 15 + 16: a gzip wrapper (not zlib's, not raw deflate).
        guard inflateInit2_(&stream, MAX_WBITS + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Invalid(file: file, reason: "zlib would not start")
        }
        defer { inflateEnd(&stream) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        try input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.avail_in = uInt(inBuf.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { c -> Int32 in
                    stream.next_out = c.baseAddress
                    stream.avail_out = uInt(c.count)
                    return CGaenZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                out.append(contentsOf: chunk[0..<produced])
                guard out.count <= limit else { throw Invalid(file: file, reason: "inflates to more than \(limit) bytes") }
                switch status {
                case Z_OK: continue
                case Z_STREAM_END:
                    // Another member follows (concatenated gzip files), or the end.
                    if stream.avail_in == 0 { return }
                    guard inflateReset(&stream) == Z_OK else { throw Invalid(file: file, reason: "zlib would not restart") }
                case Z_BUF_ERROR where stream.avail_in == 0:
                    throw Invalid(file: file, reason: "gzip stream is truncated (the file ends inside it)")
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw Invalid(file: file, reason: "not a readable gzip stream: \(message)")
                }
            }
        }
        return out
    }
}
