/// Errors raised by the pure HCI codecs. Each case says what was being decoded, what was
/// expected and what was found, so that a log line alone explains a bad packet.
public enum HCIDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the field or header needs.
    case truncated(what: String, expected: Int, actual: Int)
    /// A length that disagrees with the message's definition (fixed size, or a header length
    /// that does not match the bytes present).
    case lengthMismatch(what: String, expected: Int, actual: Int)
    /// A field whose value is outside what the specification allows.
    case invalidValue(what: String, expected: String, actual: String)
    /// The first byte of an H4 packet is not a known packet type (Vol 4 Part A, 2).
    case unknownPacketType(UInt8)

    public var description: String {
        switch self {
        case let .truncated(what, expected, actual):
            return "\(what): truncated, need \(expected) bytes, have \(actual)"
        case let .lengthMismatch(what, expected, actual):
            return "\(what): length mismatch, expected \(expected) bytes, got \(actual)"
        case let .invalidValue(what, expected, actual):
            return "\(what): invalid value \(actual), expected \(expected)"
        case let .unknownPacketType(byte):
            return "H4: unknown packet type 0x\(hex2(byte)), expected 0x01...0x05"
        }
    }
}

/// A parameter given by the caller is outside the range the specification allows.
public struct HCIParameterError: Error, Equatable, Sendable, CustomStringConvertible {
    public let what: String
    public let expected: String
    public let actual: String
    public init(what: String, expected: String, actual: String) {
        self.what = what
        self.expected = expected
        self.actual = actual
    }
    public var description: String { "\(what): \(actual) is out of range, expected \(expected)" }
}

@inline(__always) func hex2(_ b: UInt8) -> String {
    let s = String(b, radix: 16)
    return s.count == 1 ? "0" + s : s
}

@inline(__always) func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}
