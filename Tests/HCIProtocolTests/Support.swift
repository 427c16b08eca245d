import HCITestSupport
@testable import HCIProtocol

/// Decodes a captured Command Complete for `C` and its return parameters.
func complete<C: HCICommand>(_ type: C.Type, _ capture: String) throws -> C.ReturnParameters {
    guard case let .commandComplete(cc) = try HCIEvent(packet: packet(capture)) else {
        throw HCIDecodingError.invalidValue(what: "capture", expected: "Command Complete", actual: capture)
    }
    precondition(cc.opcode == C.opcode)
    return try C.decodeReturnParameters(cc.returnParameters.dropFirst())
}
