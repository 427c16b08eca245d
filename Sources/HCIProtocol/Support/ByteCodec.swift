/// Little-endian reader over a byte slice. Every read checks the remaining length first and
/// throws `HCIDecodingError.truncated` naming the message and field; it never traps.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private(set) var index: Int
    let what: String

    init(_ bytes: ArraySlice<UInt8>, what: String) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.what = what
    }

    var remaining: Int { bytes.endIndex - index }

    private mutating func take(_ count: Int, _ field: String) throws -> ArraySlice<UInt8> {
        guard count <= remaining else {
            throw HCIDecodingError.truncated(what: "\(what).\(field)", expected: count, actual: remaining)
        }
        defer { index += count }
        return bytes[index..<index + count]
    }

    mutating func u8(_ field: String) throws -> UInt8 { try take(1, field).first! }
    mutating func i8(_ field: String) throws -> Int8 { Int8(bitPattern: try u8(field)) }

    mutating func u16(_ field: String) throws -> UInt16 {
        let s = try take(2, field)
        return UInt16(s[s.startIndex]) | UInt16(s[s.startIndex + 1]) << 8
    }

    mutating func u64(_ field: String) throws -> UInt64 {
        let s = try take(8, field)
        var v: UInt64 = 0
        for (i, b) in s.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        return v
    }

    mutating func bytes(_ count: Int, _ field: String) throws -> [UInt8] { Array(try take(count, field)) }

    mutating func address(_ field: String) throws -> BDAddress {
        BDAddress(littleEndian: try bytes(6, field))
    }

    /// Trailing bytes after the last field mean the message is not what we think it is.
    func expectEnd() throws {
        guard remaining == 0 else {
            throw HCIDecodingError.lengthMismatch(what: what, expected: index - bytes.startIndex, actual: bytes.count)
        }
    }
}

/// Little-endian writer; the counterpart of `ByteReader`.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []
    init(capacity: Int = 16) { bytes.reserveCapacity(capacity) }
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    mutating func append<C: Collection>(_ b: C) where C.Element == UInt8 { bytes.append(contentsOf: b) }
    mutating func address(_ a: BDAddress) { bytes.append(contentsOf: a.littleEndianBytes) }
}
