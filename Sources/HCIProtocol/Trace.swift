/// btmon-style one-line descriptions of H4 packets, from the same `HCIMessageTable` the
/// decoders use. Used for debug logging of the controller dialogue.
public enum HCITrace {
    /// `< HCI Command: Reset (0x03|0x0003) plen 0`,
    /// `> HCI Event: Command Complete (0x0e) plen 4: Reset (0x03|0x0003) ncmd 1 status Success (0x00)`.
    public static func describe(_ packet: H4Packet, outgoing: Bool) -> String {
        let arrow = outgoing ? "<" : ">"
        switch packet.type {
        case .command:
            guard let c = try? HCICommandPacket(packet) else {
                return "\(arrow) HCI Command: malformed (\(packet.payload.count) bytes)"
            }
            return "\(arrow) HCI Command: \(HCIMessageTable.commandName(c.opcode)) (\(c.opcode)) plen \(c.parameters.count)"
        case .event:
            guard packet.payload.count >= 2 else { return "\(arrow) HCI Event: malformed (\(packet.payload.count) bytes)" }
            let code = packet.payload[0]
            let head = "\(arrow) HCI Event: \(HCIMessageTable.eventName(code)) (0x\(hex2(code))) plen \(packet.payload[1])"
            switch Result(catching: { try HCIEvent(payload: packet.payload) }) {
            case let .failure(error):
                return "\(head): undecodable: \(error)"
            case let .success(.commandComplete(e)):
                let status = (try? e.status()).map { "\($0)" } ?? "none"
                return "\(head): \(HCIMessageTable.commandName(e.opcode)) (\(e.opcode)) ncmd \(e.numHCICommandPackets) status \(status)"
            case let .success(.commandStatus(e)):
                return "\(head): \(HCIMessageTable.commandName(e.opcode)) (\(e.opcode)) ncmd \(e.numHCICommandPackets) status \(e.status)"
            case let .success(.hardwareError(e)):
                return "\(head): code 0x\(hex2(e.hardwareCode))"
            case let .success(.disconnectionComplete(e)):
                return "\(head): handle \(e.connectionHandle) reason \(e.reason)"
            case let .success(.leMeta(e)):
                let reports = LEAdvertisingReport.reports(in: e)
                return "\(head): \(HCIMessageTable.leSubeventName(e.subeventCode)) (0x\(hex2(e.subeventCode))) reports \(reports.count)"
            case .success(.unknown):
                return head
            }
        case .acl, .sco, .iso:
            return "\(arrow) \(packet.type) data: \(packet.payload.count) bytes"
        }
    }
}
