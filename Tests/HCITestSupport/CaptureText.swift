import HCIProtocol

/// Hex with spaces allowed, as captures are pasted ("04 0e 04 01 03 0c 00").
package func h(_ s: String) -> [UInt8] {
    let digits = s.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex length")
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

/// Splits a captured H4 byte sequence (indicator first) into a packet.
package func packet(_ s: String) -> H4Packet {
    let b = h(s)
    return H4Packet(type: H4PacketType(rawValue: b[0])!, payload: Array(b.dropFirst()))
}
