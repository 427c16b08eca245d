import DBusCore
import Foundation

/// The in-arguments of gaend's methods that take any, one type per method with one encoder
/// (`args`, the client's) and one throwing decoder (`init(args:)`, the daemon's), so that
/// neither side reads arguments by position and each signature is written once, here.
public enum GaendRequest {
    /// Decodes `args` against `signature` (one complete type per argument).
    static func check(_ args: [DBusValue], _ names: [String], _ signature: String) throws(GaendWireError) {
        let actual = args.map(\.type.signature).joined()
        guard actual == signature, args.count == names.count else {
            throw .wrongType(what: "arguments (" + names.joined(separator: ", ") + ")", expected: signature, actual: actual)
        }
    }

    /// `ProvideDiagnosisKeys(ah files, s token)`.
    public struct ProvideDiagnosisKeys: Sendable {
        public static let signature = "ahs"
        public var files: [DBusUnixFD]
        public var token: String

        public init(files: [DBusUnixFD], token: String) { self.files = files; self.token = token }

        public init(args: [DBusValue]) throws(GaendWireError) {
            try check(args, ["files", "token"], Self.signature)
            var fds: [DBusUnixFD] = []
            for (n, v) in (args[0].arrayValue ?? []).enumerated() {
                guard let fd = v.unixFDValue else { throw .wrongType(what: "files[\(n)]", expected: "h", actual: v.type.signature) }
                fds.append(fd)
            }
            files = fds
            token = try args[1].wireString("token")
        }

        public var args: [DBusValue] { [.array(.unixFD, files.map { .unixFD($0) }), .string(token)] }
    }

    /// `ExportSightings(h fd, x from, x to, s format)`; times in Unix milliseconds.
    public struct ExportSightings: Sendable {
        public static let signature = "hxxs"
        public var fd: DBusUnixFD
        public var from: Int64
        public var to: Int64
        public var format: String

        public init(fd: DBusUnixFD, from: Int64, to: Int64, format: String) { self.fd = fd; self.from = from; self.to = to; self.format = format }

        public init(args: [DBusValue]) throws(GaendWireError) {
            try check(args, ["fd", "from", "to", "format"], Self.signature)
            guard let fd = args[0].unixFDValue else { throw .wrongType(what: "fd", expected: "h", actual: args[0].type.signature) }
            self.fd = fd
            from = try args[1].wireInt64("from")
            to = try args[2].wireInt64("to")
            format = try args[3].wireString("format")
        }

        public var args: [DBusValue] { [.unixFD(fd), .int64(from), .int64(to), .string(format)] }
    }

    /// `AddMarker(x time, s label, d distance, s note)`; time in Unix milliseconds (0: now).
    public struct AddMarker: Sendable, Equatable {
        public static let signature = "xsds"
        public var time: Int64
        public var label: String
        public var distance: Double
        public var note: String

        public init(time: Int64, label: String, distance: Double, note: String) {
            self.time = time; self.label = label; self.distance = distance; self.note = note
        }

        public init(args: [DBusValue]) throws(GaendWireError) {
            try check(args, ["time", "label", "distance", "note"], Self.signature)
            time = try args[0].wireInt64("time")
            label = try args[1].wireString("label")
            distance = try args[2].wireDouble("distance")
            note = try args[3].wireString("note")
        }

        public var args: [DBusValue] { [.int64(time), .string(label), .double(distance), .string(note)] }
    }

    /// `GetMarkers(x from, x to)`; Unix milliseconds.
    public struct GetMarkers: Sendable, Equatable {
        public static let signature = "xx"
        public var from: Int64
        public var to: Int64

        public init(from: Int64, to: Int64) { self.from = from; self.to = to }

        public init(args: [DBusValue]) throws(GaendWireError) {
            try check(args, ["from", "to"], Self.signature)
            from = try args[0].wireInt64("from")
            to = try args[1].wireInt64("to")
        }

        public var args: [DBusValue] { [.int64(from), .int64(to)] }
    }

    /// `SetCalibration(n tx_power, n rssi_correction, i confidence)`.
    public struct SetCalibration: Sendable, Equatable {
        public static let signature = "nni"
        public var txPower: Int16
        public var rssiCorrection: Int16
        public var confidence: Int32

        public init(txPower: Int16, rssiCorrection: Int16, confidence: Int32) {
            self.txPower = txPower; self.rssiCorrection = rssiCorrection; self.confidence = confidence
        }

        public init(args: [DBusValue]) throws(GaendWireError) {
            try check(args, ["tx_power", "rssi_correction", "confidence"], Self.signature)
            txPower = try args[0].wireInt16("tx_power")
            rssiCorrection = try args[1].wireInt16("rssi_correction")
            confidence = try args[2].wireInt32("confidence")
        }

        public var args: [DBusValue] { [.int16(txPower), .int16(rssiCorrection), .int32(confidence)] }
    }
}
