/// Parameter length of an HCI message, as the specification defines it.
public enum HCIParameterLength: Equatable, Sendable, CustomStringConvertible {
    case fixed(Int)
    case atLeast(Int)

    /// Throws `lengthMismatch`/`truncated` when `count` does not fit; called before any field
    /// is read, so a decoder never starts on a message of the wrong size.
    public func check(_ count: Int, what: String) throws {
        switch self {
        case let .fixed(n) where count != n:
            throw HCIDecodingError.lengthMismatch(what: what, expected: n, actual: count)
        case let .atLeast(n) where count < n:
            throw HCIDecodingError.truncated(what: what, expected: n, actual: count)
        default: return
        }
    }

    public var description: String {
        switch self {
        case let .fixed(n): return "\(n)"
        case let .atLeast(n): return ">=\(n)"
        }
    }
}

/// Name and sizes of one command. `returnParameters` counts the Status byte.
public struct HCICommandInfo: Sendable {
    public let opcode: HCIOpcode
    public let name: String
    /// Section of Core spec Vol 4 Part E.
    public let section: String
    public let parameters: HCIParameterLength
    public let returnParameters: HCIParameterLength
}

/// Name and parameter size of one event or LE subevent (LE subevents count the subevent code).
public struct HCIEventInfo: Sendable {
    public let code: UInt8
    public let name: String
    public let section: String
    public let parameters: HCIParameterLength
}

/// The one table of message names and sizes, shared by the decoders (length checks before
/// any read) and by `HCITrace` (btmon-style lines), as BlueZ's monitor/packet.c does.
public enum HCIMessageTable {
    private static func op(_ ogf: UInt8, _ ocf: UInt16) -> HCIOpcode { HCIOpcode(ogf: ogf, ocf: ocf) }

    public static let commands: [HCICommandInfo] = [
        .init(opcode: op(0x03, 0x0001), name: "Set Event Mask", section: "7.3.1", parameters: .fixed(8), returnParameters: .fixed(1)),
        .init(opcode: op(0x03, 0x0003), name: "Reset", section: "7.3.2", parameters: .fixed(0), returnParameters: .fixed(1)),
        .init(opcode: op(0x04, 0x0001), name: "Read Local Version Information", section: "7.4.1", parameters: .fixed(0), returnParameters: .fixed(9)),
        .init(opcode: op(0x04, 0x0002), name: "Read Local Supported Commands", section: "7.4.2", parameters: .fixed(0), returnParameters: .fixed(65)),
        .init(opcode: op(0x04, 0x0003), name: "Read Local Supported Features", section: "7.4.3", parameters: .fixed(0), returnParameters: .fixed(9)),
        .init(opcode: op(0x04, 0x0009), name: "Read BD_ADDR", section: "7.4.6", parameters: .fixed(0), returnParameters: .fixed(7)),
        .init(opcode: op(0x08, 0x0001), name: "LE Set Event Mask", section: "7.8.1", parameters: .fixed(8), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x0003), name: "LE Read Local Supported Features", section: "7.8.3", parameters: .fixed(0), returnParameters: .fixed(9)),
        .init(opcode: op(0x08, 0x0005), name: "LE Set Random Address", section: "7.8.4", parameters: .fixed(6), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x0006), name: "LE Set Advertising Parameters", section: "7.8.5", parameters: .fixed(15), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x0007), name: "LE Read Advertising Physical Channel Tx Power", section: "7.8.6", parameters: .fixed(0), returnParameters: .fixed(2)),
        .init(opcode: op(0x08, 0x0008), name: "LE Set Advertising Data", section: "7.8.7", parameters: .fixed(32), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x000A), name: "LE Set Advertising Enable", section: "7.8.9", parameters: .fixed(1), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x000B), name: "LE Set Scan Parameters", section: "7.8.10", parameters: .fixed(7), returnParameters: .fixed(1)),
        .init(opcode: op(0x08, 0x000C), name: "LE Set Scan Enable", section: "7.8.11", parameters: .fixed(2), returnParameters: .fixed(1)),
    ]

    public static let events: [HCIEventInfo] = [
        .init(code: 0x05, name: "Disconnection Complete", section: "7.7.5", parameters: .fixed(4)),
        .init(code: 0x0E, name: "Command Complete", section: "7.7.14", parameters: .atLeast(3)),
        .init(code: 0x0F, name: "Command Status", section: "7.7.15", parameters: .fixed(4)),
        .init(code: 0x10, name: "Hardware Error", section: "7.7.16", parameters: .fixed(1)),
        .init(code: 0x3E, name: "LE Meta", section: "7.7.65", parameters: .atLeast(1)),
    ]

    public static let leSubevents: [HCIEventInfo] = [
        // Subevent code, Num_Reports, then at least one report of 11 bytes (7.7.65.2).
        .init(code: 0x02, name: "LE Advertising Report", section: "7.7.65.2", parameters: .atLeast(2)),
        // Subevent code, Num_Reports, then reports of 24 bytes plus data (7.7.65.13).
        .init(code: 0x0D, name: "LE Extended Advertising Report", section: "7.7.65.13", parameters: .atLeast(2)),
    ]

    private static let commandIndex = Dictionary(uniqueKeysWithValues: commands.map { ($0.opcode, $0) })
    private static let eventIndex = Dictionary(uniqueKeysWithValues: events.map { ($0.code, $0) })
    private static let subeventIndex = Dictionary(uniqueKeysWithValues: leSubevents.map { ($0.code, $0) })

    public static func command(_ opcode: HCIOpcode) -> HCICommandInfo? { commandIndex[opcode] }
    public static func event(_ code: UInt8) -> HCIEventInfo? { eventIndex[code] }
    public static func leSubevent(_ code: UInt8) -> HCIEventInfo? { subeventIndex[code] }

    public static func commandName(_ opcode: HCIOpcode) -> String {
        if opcode == .none { return "NOP" }
        return command(opcode)?.name ?? "Unknown command"
    }
    public static func eventName(_ code: UInt8) -> String { event(code)?.name ?? "Unknown event" }
    public static func leSubeventName(_ code: UInt8) -> String { leSubevent(code)?.name ?? "Unknown LE subevent" }
}
