/// A command opcode: OGF in the top 6 bits, OCF in the low 10 (Vol 4 Part E, 5.4.1).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF) }

    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x03FF }

    /// The "no command" opcode a controller uses in Command Complete/Status to hand out
    /// credits without completing anything (Vol 4 Part E, 7.7.14).
    public static let none = HCIOpcode(rawValue: 0x0000)

    /// btmon style: `0x03|0x0003`.
    public var description: String { "0x\(hex2(ogf))|0x\(hex4(ocf))" }
}

/// Command groups used here (Vol 4 Part E, 7.1-7.8).
public enum HCIOpcodeGroup {
    public static let controllerAndBaseband: UInt8 = 0x03
    public static let informational: UInt8 = 0x04
    public static let le: UInt8 = 0x08
}
