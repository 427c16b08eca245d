/// H4 packet indicators (Core spec Vol 4 Part A, 2 "Protocol": UART Transport Layer).
/// The same framing is used on every stream transport (UART, TCP, Unix socket) and on the
/// kernel's HCI user channel, where each read returns exactly one such packet.
public enum H4PacketType: UInt8, Sendable, CaseIterable {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05

    /// Size of the header that follows the indicator and where its length field sits.
    /// Command: opcode(2) len(1); ACL: handle(2) len(2); SCO: handle(2) len(1);
    /// Event: code(1) len(1); ISO: handle(2) len(2, top two bits reserved).
    var header: (size: Int, lengthOffset: Int, lengthSize: Int, lengthMask: Int) {
        switch self {
        case .command: return (3, 2, 1, 0xFF)
        case .acl: return (4, 2, 2, 0xFFFF)
        case .sco: return (3, 2, 1, 0xFF)
        case .event: return (2, 1, 1, 0xFF)
        case .iso: return (4, 2, 2, 0x3FFF)
        }
    }
}

/// One whole H4 packet: the indicator and the HCI packet that follows it (header included).
public struct H4Packet: Equatable, Hashable, Sendable {
    public var type: H4PacketType
    /// The HCI packet without the indicator byte (for an event: code, length, parameters).
    public var payload: [UInt8]

    public init(type: H4PacketType, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// The bytes as they go on the wire, indicator first.
    public var bytes: [UInt8] { [type.rawValue] + payload }
}

/// What the framer has after a call to `next()`.
public enum H4FrameResult: Equatable, Sendable {
    case packet(H4Packet)
    /// The buffered bytes are a prefix of a packet; `missing` more bytes are known to be
    /// needed (at least 1).
    case needMoreData(missing: Int)
}

/// The one H4 framer every stream transport uses (swift-nio ByteToMessageDecoder style):
/// append bytes as they arrive, take whole packets out. A packet's length is bounded by its
/// header (at most 255 or 65535 bytes), so the buffer never grows without bound.
/// An unknown indicator byte means the stream is out of step; the framer throws and the
/// transport must be reopened (there is no way to resynchronise H4 reliably).
public struct H4Framer: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes received but not yet returned as a packet.
    public var bufferedByteCount: Int { buffer.count - start }

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        // Compact lazily so that appending a byte at a time stays linear.
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next whole packet, or `.needMoreData` with how many bytes are still missing.
    public mutating func next() throws -> H4FrameResult {
        let available = buffer.count - start
        guard available >= 1 else { return .needMoreData(missing: 1) }
        let indicator = buffer[start]
        guard let type = H4PacketType(rawValue: indicator) else {
            throw HCIDecodingError.unknownPacketType(indicator)
        }
        let header = type.header
        guard available >= 1 + header.size else {
            return .needMoreData(missing: 1 + header.size - available)
        }
        let lengthAt = start + 1 + header.lengthOffset
        var length = Int(buffer[lengthAt])
        if header.lengthSize == 2 { length |= Int(buffer[lengthAt + 1]) << 8 }
        length &= header.lengthMask
        let total = 1 + header.size + length
        guard available >= total else { return .needMoreData(missing: total - available) }
        let packet = H4Packet(type: type, payload: Array(buffer[(start + 1)..<(start + total)]))
        start += total
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return .packet(packet)
    }

    /// Drops everything buffered (after a reconnect the old bytes mean nothing).
    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        start = 0
    }
}
