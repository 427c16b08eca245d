/// An HCI event (Core spec Vol 4 Part E, 5.4.4 "HCI Event packet"; events in 7.7). One case
/// per event this host understands, and `.unknown` keeping the bytes of any other.
public enum HCIEvent: Equatable, Sendable {
    case commandComplete(HCICommandCompleteEvent)
    case commandStatus(HCICommandStatusEvent)
    case hardwareError(HCIHardwareErrorEvent)
    case disconnectionComplete(HCIDisconnectionCompleteEvent)
    case leMeta(HCILEMetaEvent)
    case unknown(code: UInt8, parameters: [UInt8])

    /// Decodes an event packet's payload (Event_Code, Parameter_Total_Length, parameters).
    /// The header length must match the bytes present, and each event's length is checked
    /// against `HCIMessageTable` before any field is read.
    public init(payload: [UInt8]) throws {
        guard payload.count >= 2 else {
            throw HCIDecodingError.truncated(what: "HCI event header", expected: 2, actual: payload.count)
        }
        let code = payload[0]
        let length = Int(payload[1])
        let parameters = payload[2...]
        guard parameters.count == length else {
            throw HCIDecodingError.lengthMismatch(what: "HCI event \(HCIMessageTable.eventName(code)) (0x\(hex2(code))) parameters", expected: length, actual: parameters.count)
        }
        switch code {
        case HCICommandCompleteEvent.eventCode: self = .commandComplete(try HCICommandCompleteEvent(parameters: parameters))
        case HCICommandStatusEvent.eventCode: self = .commandStatus(try HCICommandStatusEvent(parameters: parameters))
        case HCIHardwareErrorEvent.eventCode: self = .hardwareError(try HCIHardwareErrorEvent(parameters: parameters))
        case HCIDisconnectionCompleteEvent.eventCode: self = .disconnectionComplete(try HCIDisconnectionCompleteEvent(parameters: parameters))
        case HCILEMetaEvent.eventCode: self = .leMeta(try HCILEMetaEvent(parameters: parameters))
        default: self = .unknown(code: code, parameters: Array(parameters))
        }
    }

    /// Decodes an H4 packet that must be an event.
    public init(packet: H4Packet) throws {
        guard packet.type == .event else {
            throw HCIDecodingError.invalidValue(what: "HCI event packet type", expected: "event (0x04)", actual: "\(packet.type)")
        }
        try self.init(payload: packet.payload)
    }

    public var code: UInt8 {
        switch self {
        case .commandComplete: return HCICommandCompleteEvent.eventCode
        case .commandStatus: return HCICommandStatusEvent.eventCode
        case .hardwareError: return HCIHardwareErrorEvent.eventCode
        case .disconnectionComplete: return HCIDisconnectionCompleteEvent.eventCode
        case .leMeta: return HCILEMetaEvent.eventCode
        case let .unknown(code, _): return code
        }
    }

    public func encodeParameters() -> [UInt8] {
        switch self {
        case let .commandComplete(e): return e.encodeParameters()
        case let .commandStatus(e): return e.encodeParameters()
        case let .hardwareError(e): return e.encodeParameters()
        case let .disconnectionComplete(e): return e.encodeParameters()
        case let .leMeta(e): return e.encodeParameters()
        case let .unknown(_, parameters): return parameters
        }
    }

    /// The whole H4 event packet. Parameters longer than 255 bytes cannot be expressed and
    /// are a programming error of the caller.
    public var packet: H4Packet {
        let params = encodeParameters()
        precondition(params.count <= 255, "HCI event parameters exceed 255 bytes")
        return H4Packet(type: .event, payload: [code, UInt8(params.count)] + params)
    }
}

/// HCI_Command_Complete (Vol 4 Part E, 7.7.14): Num_HCI_Command_Packets, Command_Opcode,
/// Return_Parameters (Status first for every command this host sends).
public struct HCICommandCompleteEvent: Equatable, Sendable {
    public static let eventCode: UInt8 = 0x0E
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode
    public var returnParameters: [UInt8]

    public init(numHCICommandPackets: UInt8, opcode: HCIOpcode, returnParameters: [UInt8]) {
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
        self.returnParameters = returnParameters
    }

    /// A successful completion of `command` with its return parameters encoded.
    public init<C: HCICommand>(_ command: C.Type, numHCICommandPackets: UInt8 = 1, status: HCIStatusCode = .success, returning value: C.ReturnParameters) {
        self.init(numHCICommandPackets: numHCICommandPackets, opcode: C.opcode,
                  returnParameters: [status.rawValue] + (status == .success ? C.encodeReturnParameters(value) : []))
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try eventParameterReader(Self.eventCode, parameters)
        numHCICommandPackets = try r.u8("Num_HCI_Command_Packets")
        opcode = HCIOpcode(rawValue: try r.u16("Command_Opcode"))
        returnParameters = try r.bytes(r.remaining, "Return_Parameters")
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(); w.u8(numHCICommandPackets); w.u16(opcode.rawValue); w.append(returnParameters); return w.bytes
    }

    /// The Status byte that starts the return parameters; nil only for the NOP opcode,
    /// which carries no return parameters.
    public func status() throws -> HCIStatusCode {
        guard let first = returnParameters.first else {
            throw HCIDecodingError.truncated(what: "Command Complete (\(HCIMessageTable.commandName(opcode))) Status", expected: 1, actual: 0)
        }
        return HCIStatusCode(rawValue: first)
    }
}

/// HCI_Command_Status (Vol 4 Part E, 7.7.15): Status, Num_HCI_Command_Packets, Command_Opcode.
public struct HCICommandStatusEvent: Equatable, Sendable {
    public static let eventCode: UInt8 = 0x0F
    public var status: HCIStatusCode
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode

    public init(status: HCIStatusCode, numHCICommandPackets: UInt8, opcode: HCIOpcode) {
        self.status = status
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try eventParameterReader(Self.eventCode, parameters)
        status = HCIStatusCode(rawValue: try r.u8("Status"))
        numHCICommandPackets = try r.u8("Num_HCI_Command_Packets")
        opcode = HCIOpcode(rawValue: try r.u16("Command_Opcode"))
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(); w.u8(status.rawValue); w.u8(numHCICommandPackets); w.u16(opcode.rawValue); return w.bytes
    }
}

/// HCI_Hardware_Error (Vol 4 Part E, 7.7.16): Hardware_Code (vendor specific). The host
/// resets the controller after it.
public struct HCIHardwareErrorEvent: Equatable, Sendable {
    public static let eventCode: UInt8 = 0x10
    public var hardwareCode: UInt8
    public init(hardwareCode: UInt8) { self.hardwareCode = hardwareCode }
    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try eventParameterReader(Self.eventCode, parameters)
        hardwareCode = try r.u8("Hardware_Code")
    }
    public func encodeParameters() -> [UInt8] { [hardwareCode] }
}

/// HCI_Disconnection_Complete (Vol 4 Part E, 7.7.5): Status, Connection_Handle (12 bits), Reason.
public struct HCIDisconnectionCompleteEvent: Equatable, Sendable {
    public static let eventCode: UInt8 = 0x05
    public var status: HCIStatusCode
    public var connectionHandle: UInt16
    public var reason: HCIStatusCode

    public init(status: HCIStatusCode, connectionHandle: UInt16, reason: HCIStatusCode) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    public init(parameters: ArraySlice<UInt8>) throws {
        var r = try eventParameterReader(Self.eventCode, parameters)
        status = HCIStatusCode(rawValue: try r.u8("Status"))
        let handle = try r.u16("Connection_Handle")
        guard handle <= 0x0EFF else {
            throw HCIDecodingError.invalidValue(what: "Disconnection Complete.Connection_Handle", expected: "0x0000...0x0EFF", actual: "0x\(hex4(handle))")
        }
        connectionHandle = handle
        reason = HCIStatusCode(rawValue: try r.u8("Reason"))
    }

    public func encodeParameters() -> [UInt8] {
        var w = ByteWriter(); w.u8(status.rawValue); w.u16(connectionHandle); w.u8(reason.rawValue); return w.bytes
    }
}

/// An event's parameters' reader, once their length has been checked against the table (whose
/// name for the event the errors use): how every event decoder starts.
func eventParameterReader(_ code: UInt8, _ parameters: ArraySlice<UInt8>) throws -> ByteReader {
    let info = HCIMessageTable.event(code)!
    try info.parameters.check(parameters.count, what: "\(info.name) parameters")
    return ByteReader(parameters, what: info.name)
}
