#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Hex is the lingua franca of researchers' tools (gaenctl's JSON, CSV exports), so every
/// byte-carrying value speaks it the same way: lowercase, no separators.
public enum HexError: Error, Equatable, CustomStringConvertible {
    case oddLength(Int)
    case invalidCharacter(Character, offset: Int)
    case wrongLength(expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .oddLength(let n): return "hex string has an odd number of digits (\(n))"
        case .invalidCharacter(let c, let offset): return "invalid hex digit '\(c)' at offset \(offset)"
        case .wrongLength(let expected, let actual): return "expected \(expected) bytes of hex, got \(actual)"
        }
    }
}

extension Data {
    /// Parses a hex string (upper or lower case, optional `0x` prefix).
    public init(hex: String) throws {
        var s = Substring(hex)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        guard s.count % 2 == 0 else { throw HexError.oddLength(s.count) }
        var out = Data(capacity: s.count / 2)
        var high: UInt8? = nil
        for (offset, c) in s.enumerated() {
            guard let v = c.hexDigitValue else { throw HexError.invalidCharacter(c, offset: offset) }
            if let h = high { out.append(h << 4 | UInt8(v)); high = nil } else { high = UInt8(v) }
        }
        self = out
    }

    /// Parses hex that must decode to exactly `count` bytes.
    public init(hex: String, count: Int) throws {
        let d = try Data(hex: hex)
        guard d.count == count else { throw HexError.wrongLength(expected: count, actual: d.count) }
        self = d
    }

    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var chars = [UInt8](); chars.reserveCapacity(count * 2)
        for b in self { chars.append(digits[Int(b >> 4)]); chars.append(digits[Int(b & 0x0f)]) }
        return String(decoding: chars, as: UTF8.self)
    }
}
