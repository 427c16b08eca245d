/// An HCI command (Core spec Vol 4 Part E, 5.4.1 "HCI Command packet"): one value type per
/// command with its opcode, one encoder of its parameters and one throwing decoder, plus the
/// decoder of its Command Complete return parameters. Names and sizes come from
/// `HCIMessageTable`.
public protocol HCICommand: Sendable, Equatable {
    /// What Command Complete returns after the Status byte.
    associatedtype ReturnParameters: Sendable, Equatable = HCINoReturnParameters

    static var opcode: HCIOpcode { get }

    /// The command's parameters (without opcode and length).
    func encodeParameters() -> [UInt8]

    /// Decodes the command's parameters (used by scripted controllers and traces).
    init(parameters: ArraySlice<UInt8>) throws

    /// Decodes the return parameters that follow the Status byte of a successful Command
    /// Complete. The length is checked against the table before anything is read.
    static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> ReturnParameters

    /// Encodes return parameters (without Status): for controllers in tests.
    static func encodeReturnParameters(_ value: ReturnParameters) -> [UInt8]
}

/// Return parameters of a command that returns only Status.
public struct HCINoReturnParameters: Equatable, Sendable {
    public init() {}
}

extension HCICommand {
    public static var info: HCICommandInfo {
        guard let info = HCIMessageTable.command(opcode) else {
            preconditionFailure("command \(opcode) missing from HCIMessageTable")
        }
        return info
    }
    public static var name: String { info.name }

    /// Length check shared by the parameter decoders.
    static func checkParameters(_ parameters: ArraySlice<UInt8>) throws {
        try info.parameters.check(parameters.count, what: "\(name) parameters")
    }

    /// Length check shared by the return-parameter decoders (the table counts Status).
    static func checkReturn(_ afterStatus: ArraySlice<UInt8>) throws {
        try info.returnParameters.check(afterStatus.count + 1, what: "\(name) return parameters")
    }

    /// The parameters' reader, once their length has been checked: how every decoder starts.
    static func parameterReader(_ parameters: ArraySlice<UInt8>) throws -> ByteReader {
        try checkParameters(parameters)
        return ByteReader(parameters, what: name)
    }

    /// The return parameters' reader, once their length has been checked.
    static func returnReader(_ afterStatus: ArraySlice<UInt8>) throws -> ByteReader {
        try checkReturn(afterStatus)
        return ByteReader(afterStatus, what: "\(name) return")
    }

    /// The whole H4 command packet.
    public var packet: H4Packet {
        let params = encodeParameters()
        precondition(params.count <= 255, "HCI command parameters exceed 255 bytes")
        var w = ByteWriter(capacity: 3 + params.count)
        w.u16(Self.opcode.rawValue)
        w.u8(UInt8(params.count))
        w.append(params)
        return H4Packet(type: .command, payload: w.bytes)
    }

    /// Decodes a whole command packet of this type.
    public static func decode(_ packet: H4Packet) throws -> Self {
        let command = try HCICommandPacket(packet)
        guard command.opcode == opcode else {
            throw HCIDecodingError.invalidValue(what: "\(name) opcode", expected: opcode.description, actual: command.opcode.description)
        }
        return try Self(parameters: command.parameters[...])
    }
}

extension HCICommand where ReturnParameters == HCINoReturnParameters {
    public static func decodeReturnParameters(_ afterStatus: ArraySlice<UInt8>) throws -> HCINoReturnParameters {
        try checkReturn(afterStatus)
        return HCINoReturnParameters()
    }
    public static func encodeReturnParameters(_ value: HCINoReturnParameters) -> [UInt8] { [] }
}

/// Any command packet split into opcode and parameters, with its length byte checked.
public struct HCICommandPacket: Equatable, Sendable {
    public let opcode: HCIOpcode
    public let parameters: [UInt8]

    public init(opcode: HCIOpcode, parameters: [UInt8]) {
        self.opcode = opcode
        self.parameters = parameters
    }

    public init(_ packet: H4Packet) throws {
        guard packet.type == .command else {
            throw HCIDecodingError.invalidValue(what: "HCI command packet type", expected: "command (0x01)", actual: "\(packet.type)")
        }
        var r = ByteReader(packet.payload[...], what: "HCI command")
        let opcode = HCIOpcode(rawValue: try r.u16("opcode"))
        let length = Int(try r.u8("parameter length"))
        guard r.remaining == length else {
            throw HCIDecodingError.lengthMismatch(what: "HCI command \(HCIMessageTable.commandName(opcode)) parameters", expected: length, actual: r.remaining)
        }
        self.opcode = opcode
        self.parameters = try r.bytes(length, "parameters")
    }
}
