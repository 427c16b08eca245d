#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import PlatformSupport
import HCIProtocol
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where and how much to capture: every HCI packet, both directions, as btsnoop.
package struct CaptureSettings: Sendable, Equatable {
    /// The capture file; older parts are FILE.1, FILE.2, ... (newest first).
    package var path: String
    /// A part is closed and rotated once it reaches this size.
    package var maxBytes: Int
    /// How many rotated parts are kept beside the current one.
    package var keep: Int

    package static let defaultMaxBytes = 16 << 20
    package static let defaultKeep = 1

    package init(path: String, maxBytes: Int = CaptureSettings.defaultMaxBytes, keep: Int = CaptureSettings.defaultKeep) {
        self.path = path
        self.maxBytes = maxBytes
        self.keep = keep
    }
}

/// Writes HCI packets in the btsnoop format `btmon -w` writes (version 1, datalink 1002: H4,
/// the packet-type byte first), which `btmon -r`, Wireshark and tshark read. Format facts from
/// the btsnoop description in Wireshark's wiretap/btsnoop.c and BlueZ's src/shared/btsnoop.h:
/// 16-byte header "btsnoop\0", version and datalink (big endian); per record original and
/// included length, flags (bit 0: received, bit 1: command or event), cumulative drops and
/// microseconds since 0000-01-01 (Unix epoch + 0x00dcddb30f2f8000).
///
/// Packets are handed to a serial queue so the radio's path never waits for the disk; at most
/// `maxPendingBytes` wait there, beyond that packets are dropped and counted in the next
/// record's drops field. The file is rotated at `maxBytes`, so a capture left on for weeks stays
/// bounded (`keep + 1` parts).
package final class BTSnoopWriter: @unchecked Sendable {
    package enum Direction: Sendable { case sent, received }

    static let header: [UInt8] = Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA]
    static let unixEpochOffsetMicroseconds: Int64 = 0x00DC_DDB3_0F2F_8000
    static let maxPendingBytes = 4 << 20

    package let settings: CaptureSettings
    /// The name write errors give (made once: a capture writes every packet).
    private let writeCall: String
    private let queue = DispatchQueue(label: "gaend.capture")
    /// What `record` and the writing queue share.
    private struct Shared {
        var pendingBytes = 0
        var dropped: UInt32 = 0
        var failure: String?
    }
    private let shared = Mutex(Shared())
    // Owned by `queue`:
    private var fd: Int32 = -1
    private var size = 0

    /// Creates (or truncates) the capture file now, so that a bad path fails at start.
    package init(settings: CaptureSettings) throws {
        self.settings = settings
        writeCall = "write(\(settings.path))"
        try openFresh()
    }

    /// The first write error, if any (the capture stops there; the radio does not).
    package var error: String? { shared.withLock { $0.failure } }

    package func record(_ packet: H4Packet, _ direction: Direction, at date: Date = Date()) {
        let bytes = packet.bytes
        let accepted: UInt32? = shared.withLock { s in
            guard s.failure == nil else { return nil }
            guard s.pendingBytes + bytes.count <= Self.maxPendingBytes else {
                s.dropped &+= 1
                return nil
            }
            s.pendingBytes += bytes.count
            return s.dropped
        }
        guard let drops = accepted else { return }
        var flags: UInt32 = direction == .received ? 1 : 0
        if packet.type == .command || packet.type == .event { flags |= 2 }
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) + Self.unixEpochOffsetMicroseconds
        var record = [UInt8]()
        record.reserveCapacity(24 + bytes.count)
        for v in [UInt32(bytes.count), UInt32(bytes.count), flags, drops] { record.appendBigEndian(v) }
        record.appendBigEndian(UInt64(bitPattern: micros))
        record += bytes
        let finished = record
        queue.async { [self] in
            write(finished)
            shared.withLock { $0.pendingBytes -= bytes.count }
        }
    }

    /// Waits until everything recorded so far is on disk, then closes the file.
    package func close() {
        queue.sync {
            if fd >= 0 { _ = fsync(fd); _ = Glibc.close(fd); fd = -1 }
        }
    }

    /// Waits until everything recorded so far has been written (tests, shutdown).
    package func flush() { queue.sync {} }

    private func openFresh() throws {
        let f = open(settings.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard f >= 0 else { throw SystemCallError(function: "open(\(settings.path))", errno: errno) }
        fd = f
        size = 0
        try writeAll(Self.header)
    }

    private func write(_ record: [UInt8]) {
        guard fd >= 0 else { return }
        if size + record.count > settings.maxBytes, size > Self.header.count {
            rotate()
            guard fd >= 0 else { return }
        }
        do throws(SystemCallError) { try writeAll(record) } catch { fail("\(writeCall) failed: \(error.reason)") }
    }

    private func rotate() {
        _ = Glibc.close(fd)
        fd = -1
        if settings.keep > 0 {
            for i in stride(from: settings.keep - 1, through: 1, by: -1) {
                _ = rename("\(settings.path).\(i)", "\(settings.path).\(i + 1)")
            }
            _ = rename(settings.path, "\(settings.path).1")
        }
        do { try openFresh() } catch { fail("\(error)") }
    }

    private func writeAll(_ bytes: [UInt8]) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            offset += try systemCall(writeCall) { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } }
        }
        size += bytes.count
    }

    private func fail(_ message: String) {
        shared.withLock { if $0.failure == nil { $0.failure = message } }
        if fd >= 0 { _ = Glibc.close(fd); fd = -1 }
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func appendBigEndian<T: FixedWidthInteger>(_ v: T) {
        Swift.withUnsafeBytes(of: v.bigEndian) { append(contentsOf: $0) }
    }
}

/// A connector whose transports record every packet in a btsnoop capture. One writer serves
/// every reconnect, so a capture spans a controller's unplug and replug.
package struct CapturingConnector: HCITransportConnector {
    package let inner: any HCITransportConnector
    package let writer: BTSnoopWriter
    package init(_ inner: any HCITransportConnector, writer: BTSnoopWriter) {
        self.inner = inner
        self.writer = writer
    }
    package var description: String { inner.description }

    package func connect() async throws -> any HCITransport {
        CapturingTransport(try await inner.connect(), writer: writer)
    }
}

/// Records what passes through another transport.
final class CapturingTransport: HCITransport, @unchecked Sendable {
    let packets: AsyncThrowingStream<H4Packet, any Error>
    private let inner: any HCITransport
    private let writer: BTSnoopWriter
    private let pump: Task<Void, Never>

    init(_ inner: any HCITransport, writer: BTSnoopWriter) {
        self.inner = inner
        self.writer = writer
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: H4Packet.self, throwing: (any Error).self)
        packets = stream
        pump = Task {
            do {
                for try await p in inner.packets {
                    writer.record(p, .received)
                    continuation.yield(p)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ packet: H4Packet) throws {
        try inner.send(packet)
        writer.record(packet, .sent)
    }

    func close() { inner.close() }

    deinit { pump.cancel() }
}
