import Foundation
@testable import HCIHost
import NodeTestSupport
import HCIProtocol
import HCITestSupport
import Testing

@Suite("Controller addresses and transports")
struct TransportTests {
    @Test func addressSyntax() throws {
        #expect(try ControllerAddress(parsing: "hci0") == .hci(index: 0))
        #expect(try ControllerAddress(parsing: "hci:3") == .hci(index: 3))
        #expect(try ControllerAddress(parsing: "serial:/dev/ttyUSB0") == .serial(path: "/dev/ttyUSB0", baud: 115_200))
        #expect(try ControllerAddress(parsing: "serial:/dev/ttyAMA0:1000000") == .serial(path: "/dev/ttyAMA0", baud: 1_000_000))
        #expect(try ControllerAddress(parsing: "tcp:127.0.0.1:9000") == .tcp(host: "127.0.0.1", port: 9000))
        #expect(try ControllerAddress(parsing: "tcp:[::1]:9000") == .tcp(host: "::1", port: 9000))
        #expect(try ControllerAddress(parsing: "tcp:localhost:1") == .tcp(host: "localhost", port: 1))
        #expect(try ControllerAddress(parsing: "unix:/tmp/c.sock") == .unix(path: "/tmp/c.sock"))
        for text in ["hci0", "hci3", "serial:/dev/ttyUSB0", "serial:/dev/ttyAMA0:1000000", "tcp:127.0.0.1:9000", "tcp:[::1]:9000", "unix:/tmp/c.sock"] {
            #expect(try ControllerAddress(parsing: text).description == text, "canonical form reads back")
        }
        for bad in ["", "hci", "hci:x", "hci-1", "hcix", "serial:ttyUSB0", "serial:/dev/ttyUSB0:fast", "tcp:host", "tcp::80",
                    "tcp:host:0", "tcp:host:70000", "unix:", "usb:0", "unix:/" + String(repeating: "a", count: 120)] {
            #expect(throws: ControllerAddressError.self, "\(bad)") { try ControllerAddress(parsing: bad) }
        }
        let e = try #require(throws: ControllerAddressError.self) { try ControllerAddress(parsing: "usb:0") }
        #expect(e.description.contains("expected hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH"))
    }

    @Test func kernelSocketFailureNamesTheCause() async throws {
        // This machine's kernel has no Bluetooth; on a board the error is permission or busy.
        let error = try await #require(throws: HCITransportError.self) {
            _ = try await SystemTransportConnector(address: .hci(index: 0)).connect()
        }
        switch error {
        case .bluetoothUnsupported:
            #expect(error.description.contains("EAFNOSUPPORT"))
        case .permissionDenied, .busy, .noSuchDevice:
            #expect(error.description.contains("hci0"))
        default:
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func refusedAndMissingPeersAreClearErrors() async throws {
        await #expect(throws: HCITransportError.connectionRefused(address: "tcp:127.0.0.1:1")) {
            _ = try await SystemTransportConnector(address: .tcp(host: "127.0.0.1", port: 1)).connect()
        }
        await #expect(throws: HCITransportError.noSuchDevice(address: "unix:/nonexistent/ctrl", call: "connect(/nonexistent/ctrl)")) {
            _ = try await SystemTransportConnector(address: .unix(path: "/nonexistent/ctrl")).connect()
        }
        await #expect(throws: HCITransportError.noSuchDevice(address: "serial:/dev/nonexistent-tty", call: "open(/dev/nonexistent-tty)")) {
            _ = try await SystemTransportConnector(address: .serial(path: "/dev/nonexistent-tty", baud: 115_200)).connect()
        }
    }

    /// A stream socket pair: bytes written one at a time arrive as whole packets, writes go
    /// out with the indicator, EOF finishes the stream.
    @Test func fileDescriptorTransportFramesAStream() async throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let transport = FileDescriptorTransport(fd: fds[0], isSocket: true, name: "pair")
        let peer = fds[1]
        let stream = h("04 0e 04 01 03 0c 00 04 3e 0e 02 01 03 01 11 22 33 44 55 66 02 01 02 c4")
        for b in stream {
            var byte = b
            #expect(write(peer, &byte, 1) == 1)
        }
        var it = transport.packets.makeAsyncIterator()
        #expect(try await it.next() == packet("04 0e 04 01 03 0c 00"))
        #expect(try await it.next()?.payload.first == 0x3e)
        try transport.send(HCIReset().packet)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(read(peer, &buffer, 8) == 4)
        #expect(Array(buffer.prefix(4)) == h("01 03 0c 00"))
        close(peer)
        #expect(try await it.next() == nil, "EOF finishes the stream")
        transport.close()
        #expect(throws: HCITransportError.closed) { try transport.send(HCIReset().packet) }
    }

    /// A peer that stops reading makes send() fail after the write timeout instead of
    /// blocking the session for ever.
    @Test func stalledLinkTimesOutAWrite() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let transport = FileDescriptorTransport(fd: fds[0], isSocket: true, name: "stalled")
        defer { transport.close(); close(fds[1]) }
        let data = try HCILESetAdvertisingData(data: [UInt8](repeating: 0xAA, count: 31)).packet
        let started = ContinuousClock.now
        let error = try #require(throws: HCITransportError.self) {
            for _ in 0..<1_000_000 { try transport.send(data) }
        }
        guard case let .system(_, e) = error else { Issue.record("unexpected \(error)"); return }
        #expect(e.errno == ETIMEDOUT)
        #expect(ContinuousClock.now - started >= .milliseconds(900))
    }

    @Test func outOfStepStreamFailsTheTransport() async throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let transport = FileDescriptorTransport(fd: fds[0], isSocket: true, name: "pair")
        var bytes = h("04 10 01 2a 09 00")
        #expect(write(fds[1], &bytes, bytes.count) == bytes.count)
        var it = transport.packets.makeAsyncIterator()
        #expect(try await it.next() == packet("04 10 01 2a"))
        await #expect(throws: HCIDecodingError.unknownPacketType(0x09)) { _ = try await it.next() }
        transport.close()
        close(fds[1])
    }
}
