/// Where a Bluetooth controller is, in the one syntax used by the CLI, the config and the
/// docs (docs/radio.md), in the spirit of Bumble's transport names:
///
/// - `hci0` or `hci:0`: the kernel's HCI socket for hci0 on the HCI user channel (exclusive).
/// - `serial:/dev/ttyUSB0` or `serial:/dev/ttyUSB0:1000000`: H4 over a UART (default
///   115200 baud, RTS/CTS flow control).
/// - `tcp:127.0.0.1:9000` or `tcp:[::1]:9000`: H4 over TCP (virtual controllers).
/// - `unix:/run/ctrl.sock`: H4 over a Unix stream socket.
package enum ControllerAddress: Hashable, Sendable, CustomStringConvertible {
    case hci(index: Int)
    case serial(path: String, baud: Int)
    case tcp(host: String, port: Int)
    case unix(path: String)

    package static let defaultBaudRate = 115_200

    /// Parses the address syntax above; every error says what is wrong and shows the forms.
    package init(parsing text: String) throws {
        func fail(_ why: String) -> ControllerAddressError { ControllerAddressError(input: text, reason: why) }
        if text.hasPrefix("hci:") || (text.hasPrefix("hci") && !text.contains(":")) {
            let digits = text.hasPrefix("hci:") ? text.dropFirst(4) : text.dropFirst(3)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let n = Int(digits), n >= 0, n <= 0xFFFF else {
                throw fail("the HCI device index must be a number 0...65535")
            }
            self = .hci(index: n)
        } else if text.hasPrefix("serial:") {
            var rest = String(text.dropFirst(7))
            var baud = Self.defaultBaudRate
            if let colon = rest.lastIndex(of: ":") {
                let tail = rest[rest.index(after: colon)...]
                guard let b = Int(tail), b > 0 else { throw fail("the baud rate after the last ':' must be a positive number") }
                baud = b
                rest = String(rest[..<colon])
            }
            guard rest.hasPrefix("/") else { throw fail("the serial device must be an absolute path such as /dev/ttyUSB0") }
            self = .serial(path: rest, baud: baud)
        } else if text.hasPrefix("tcp:") {
            let rest = text.dropFirst(4)
            guard let colon = rest.lastIndex(of: ":") else { throw fail("expected tcp:HOST:PORT") }
            var host = String(rest[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw fail("the host is empty") }
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else {
                throw fail("the port must be a number 1...65535")
            }
            self = .tcp(host: host, port: port)
        } else if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard !path.isEmpty else { throw fail("the socket path is empty") }
            guard path.utf8.count < 108 else { throw fail("a Unix socket path must be shorter than 108 bytes") }
            self = .unix(path: path)
        } else {
            throw fail("unknown transport")
        }
    }

    /// The canonical spelling, which `init(parsing:)` reads back.
    package var description: String {
        switch self {
        case let .hci(index): return "hci\(index)"
        case let .serial(path, baud): return baud == Self.defaultBaudRate ? "serial:\(path)" : "serial:\(path):\(baud)"
        case let .tcp(host, port): return host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case let .unix(path): return "unix:\(path)"
        }
    }
}

/// A controller address that does not parse.
package struct ControllerAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    package let input: String
    package let reason: String
    package var description: String {
        "invalid controller address '\(input)': \(reason) (expected hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH)"
    }
}
