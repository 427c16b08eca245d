/// A 48-bit device address (Core spec Vol 2 Part B, 1.2; Vol 6 Part B, 1.3). Stored as on
/// the wire (least significant byte first); printed most significant byte first, as btmon does.
public struct BDAddress: Hashable, Sendable, CustomStringConvertible {
    /// Six bytes, least significant first (HCI byte order).
    public let littleEndianBytes: [UInt8]

    public init(littleEndian bytes: [UInt8]) {
        precondition(bytes.count == 6, "BDAddress needs 6 bytes")
        littleEndianBytes = bytes
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (most significant byte first).
    public init(string: String) throws {
        let parts = string.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else {
            throw HCIParameterError(what: "BD_ADDR", expected: "6 colon-separated hex bytes", actual: string)
        }
        var bytes: [UInt8] = []
        for part in parts.reversed() {
            guard part.count == 2, let b = UInt8(part, radix: 16) else {
                throw HCIParameterError(what: "BD_ADDR", expected: "two hex digits per byte", actual: string)
            }
            bytes.append(b)
        }
        littleEndianBytes = bytes
    }

    public static let zero = BDAddress(littleEndian: [0, 0, 0, 0, 0, 0])

    public var description: String {
        littleEndianBytes.reversed().map { hex2($0).uppercased() }.joined(separator: ":")
    }

    /// A non-resolvable private address (Vol 6 Part B, 1.3.2.2): the two most significant
    /// bits are 0, and the 46 random bits are neither all 0 nor all 1.
    public var isNonResolvablePrivate: Bool {
        let msb = littleEndianBytes[5]
        guard msb >> 6 == 0b00 else { return false }
        let random = littleEndianBytes[0..<5] + [msb & 0x3F]
        return !random.allSatisfy { $0 == 0 } && !(random.dropLast().allSatisfy { $0 == 0xFF } && msb & 0x3F == 0x3F)
    }

    /// Builds a non-resolvable private address from 6 random bytes supplied by the caller
    /// (this module has no randomness of its own). Throws if the bytes give all-0 or all-1
    /// random bits; the caller draws again.
    public static func nonResolvablePrivate(randomBytes: [UInt8]) throws -> BDAddress {
        guard randomBytes.count == 6 else {
            throw HCIParameterError(what: "random bytes for address", expected: "6", actual: "\(randomBytes.count)")
        }
        var b = randomBytes
        b[5] &= 0x3F
        let address = BDAddress(littleEndian: b)
        guard address.isNonResolvablePrivate else {
            throw HCIParameterError(what: "non-resolvable private address", expected: "random bits not all 0 or all 1", actual: address.description)
        }
        return address
    }
}

/// Address type in advertising reports (Vol 4 Part E, 7.7.65.2 and 7.7.65.13).
public enum LEAddressType: Equatable, Hashable, Sendable, CustomStringConvertible {
    case `public`
    case random
    case publicIdentity
    case randomIdentity
    /// 0xFF in an extended report: no address sent (anonymous advertising).
    case anonymous
    case reserved(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x00: self = .public
        case 0x01: self = .random
        case 0x02: self = .publicIdentity
        case 0x03: self = .randomIdentity
        case 0xFF: self = .anonymous
        default: self = .reserved(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .public: return 0
        case .random: return 1
        case .publicIdentity: return 2
        case .randomIdentity: return 3
        case .anonymous: return 0xFF
        case let .reserved(v): return v
        }
    }

    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .publicIdentity: return "public-identity"
        case .randomIdentity: return "random-identity"
        case .anonymous: return "anonymous"
        case let .reserved(v): return "reserved(0x\(hex2(v)))"
        }
    }
}

/// Own_Address_Type of LE Set Advertising Parameters / LE Set Scan Parameters (7.8.5, 7.8.10).
public enum OwnAddressType: UInt8, Sendable, CaseIterable {
    case `public` = 0x00
    case random = 0x01
    case resolvableOrPublic = 0x02
    case resolvableOrRandom = 0x03

    static func decode(_ v: UInt8, _ what: String) throws -> OwnAddressType {
        guard let t = OwnAddressType(rawValue: v) else {
            throw HCIDecodingError.invalidValue(what: what, expected: "0x00...0x03", actual: "0x\(hex2(v))")
        }
        return t
    }
}
