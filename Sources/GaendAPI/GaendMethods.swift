import DBusCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The arguments of one message of gaend's API: a method's request (in) or reply (out), or a
/// signal. Each type writes its arguments' names and signatures once (`arguments`: the
/// interface tables in `GaendInterfaces` are built from them), and has one encoder (`args`)
/// and one throwing decoder (`init(args:)`) that names the argument it refuses. The client
/// encodes requests and decodes replies with them; the daemon the reverse.
public protocol GaendMessage: Sendable {
    static var arguments: [DBusArgument] { get }
    var args: [DBusValue] { get }
    init(args: [DBusValue]) throws(GaendWireError)
}

extension GaendMessage {
    public static var signature: String { arguments.map(\.signature).joined() }

    /// The decoders' first step: the whole message has this type's signature, so each
    /// argument can then be read with its type.
    static func check(_ args: [DBusValue]) throws(GaendWireError) {
        let actual = DBusValue.signature(of: args)
        guard actual == signature, args.count == arguments.count else {
            let names = arguments.map(\.name).joined(separator: ", ")
            throw .wrongType(what: "arguments (\(names))", expected: signature, actual: actual)
        }
    }
}

/// One method of gaend's API: where it lives and its two messages.
public protocol GaendMethod {
    associatedtype Request: GaendMessage
    associatedtype Reply: GaendMessage
    static var interface: String { get }
    static var name: String { get }
}

/// One signal of gaend's API.
public protocol GaendSignal: GaendMessage {
    static var interface: String { get }
    static var member: String { get }
}

/// A message without arguments.
public struct GaendNoArguments: GaendMessage, Equatable {
    public static let arguments: [DBusArgument] = []
    public init() {}
    public var args: [DBusValue] { [] }
    public init(args: [DBusValue]) throws(GaendWireError) { try Self.check(args) }
}

extension DBusMethodDecl {
    /// A table entry whose arguments are the typed messages' (never written twice).
    public init<M: GaendMethod>(_ method: M.Type, since: Int, errors: [String] = [], deprecated: Bool = false) {
        self.init(M.name, in: M.Request.arguments, out: M.Reply.arguments, since: since, errors: errors, deprecated: deprecated)
    }
}

extension DBusSignalDecl {
    public init<S: GaendSignal>(_ signal: S.Type, since: Int) {
        self.init(S.member, S.arguments, since: since)
    }
}

/// The daemon's side of the typed methods: handlers that decode each request with its one
/// decoder (a wrong argument is `InvalidArgs` naming it) and encode the reply with its one
/// encoder. `mapError` turns the handlers' own (domain) errors into D-Bus errors: the edge's
/// one mapping.
public struct GaendHandlers: Sendable {
    public let interface: String
    public private(set) var methods: [String: DBusMethodHandler] = [:]
    let mapError: @Sendable (any Error) -> any Error

    public init(interface: String, mapError: @escaping @Sendable (any Error) -> any Error = { $0 }) {
        self.interface = interface
        self.mapError = mapError
    }

    public mutating func on<M: GaendMethod>(_ method: M.Type,
                                            _ body: @escaping @Sendable (M.Request, DBusMethodCall) async throws -> M.Reply) {
        precondition(M.interface == interface, "\(M.name) belongs to \(M.interface), not \(interface)")
        let mapError = self.mapError
        methods[M.name] = { call in
            let request: M.Request
            do { request = try M.Request(args: call.args) } catch { throw DBusNamedError.invalidArgs("\(error)") }
            do { return try await body(request, call).args } catch { throw mapError(error) }
        }
    }
}

/// ExposureNotification1's methods (docs/dbus.md).
public enum GaendExposureNotification {
    static let interface = GaendBus.exposureNotificationInterface

    public enum Start: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "Start"
        public typealias Request = GaendNoArguments
        public typealias Reply = GaendNoArguments
    }

    public enum Stop: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "Stop"
        public typealias Request = GaendNoArguments
        public typealias Reply = GaendNoArguments
    }

    public enum GetTemporaryExposureKeyHistory: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "GetTemporaryExposureKeyHistory"
        public typealias Request = GaendNoArguments
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("keys", "a" + GaendTemporaryExposureKey.signature)]
            public var keys: [GaendTemporaryExposureKey]
            public init(keys: [GaendTemporaryExposureKey]) { self.keys = keys }
            public var args: [DBusValue] { [GaendTemporaryExposureKey.array(keys)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                keys = try GaendTemporaryExposureKey.decodeArray(args[0], what: "keys")
            }
        }
    }

    /// `ProvideDiagnosisKeys(ah files, s token) -> (u keys)`.
    public enum ProvideDiagnosisKeys: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "ProvideDiagnosisKeys"
        public struct Request: GaendMessage {
            public static let arguments = [DBusArgument("files", "ah"), DBusArgument("token", "s")]
            public var files: [DBusUnixFD]
            public var token: String
            public init(files: [DBusUnixFD], token: String) { self.files = files; self.token = token }
            public var args: [DBusValue] { [.array(.unixFD, files.map { .unixFD($0) }), .string(token)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                var fds: [DBusUnixFD] = []
                for (n, v) in (args[0].arrayValue ?? []).enumerated() {
                    guard let fd = v.unixFDValue else { throw .wrongType(what: "files[\(n)]", expected: "h", actual: v.type.signature) }
                    fds.append(fd)
                }
                files = fds
                token = try args[1].wireString("token")
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("keys", "u")]
            /// Keys accepted.
            public var keys: UInt32
            public init(keys: UInt32) { self.keys = keys }
            public var args: [DBusValue] { [.uint32(keys)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                keys = try args[0].wireUInt32("keys")
            }
        }
    }

    public enum GetExposureWindows: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "GetExposureWindows"
        public typealias Request = GaendNoArguments
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("windows", "a" + GaendExposureWindow.signature)]
            public var windows: [GaendExposureWindow]
            public init(windows: [GaendExposureWindow]) { self.windows = windows }
            public var args: [DBusValue] { [GaendExposureWindow.array(windows)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                windows = try GaendExposureWindow.decodeArray(args[0], what: "windows")
            }
        }
    }

    /// `GetDailySummaries(a{sv} config) -> (a(u(ddd)a{i(ddd)}) summaries)`.
    public enum GetDailySummaries: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "GetDailySummaries"
        public struct Request: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("config", GaendDailySummariesConfig.signature)]
            public var config: GaendDailySummariesConfig
            public init(config: GaendDailySummariesConfig) { self.config = config }
            public var args: [DBusValue] { [config.dbusValue] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                config = try GaendDailySummariesConfig(dbus: args[0])
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("summaries", "a" + GaendDailySummary.signature)]
            public var summaries: [GaendDailySummary]
            public init(summaries: [GaendDailySummary]) { self.summaries = summaries }
            public var args: [DBusValue] { [GaendDailySummary.array(summaries)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                summaries = try GaendDailySummary.decodeArray(args[0], what: "summaries")
            }
        }
    }

    /// The mapping as `SetDiagnosisKeysDataMapping` takes it and `GetDiagnosisKeysDataMapping`
    /// returns it.
    public struct Mapping: GaendMessage, Equatable {
        public static let arguments = [DBusArgument("mapping", GaendDataMapping.signature)]
        public var mapping: GaendDataMapping
        public init(mapping: GaendDataMapping) { self.mapping = mapping }
        public var args: [DBusValue] { [mapping.dbusValue] }
        public init(args: [DBusValue]) throws(GaendWireError) {
            try Self.check(args)
            mapping = try GaendDataMapping(dbus: args[0])
        }
    }

    public enum SetDiagnosisKeysDataMapping: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "SetDiagnosisKeysDataMapping"
        public typealias Request = Mapping
        public typealias Reply = GaendNoArguments
    }

    public enum GetDiagnosisKeysDataMapping: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "GetDiagnosisKeysDataMapping"
        public typealias Request = GaendNoArguments
        public typealias Reply = Mapping
    }

    /// `GetExposureSummary(a{sv} config) -> ((iiiiai) summary)` (deprecated, as in the framework).
    public enum GetExposureSummary: GaendMethod {
        public static let interface = GaendExposureNotification.interface, name = "GetExposureSummary"
        public struct Request: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("config", GaendExposureConfigurationV1.signature)]
            public var config: GaendExposureConfigurationV1
            public init(config: GaendExposureConfigurationV1) { self.config = config }
            public var args: [DBusValue] { [config.dbusValue] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                config = try GaendExposureConfigurationV1(dbus: args[0])
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("summary", GaendExposureSummaryV1.signature)]
            public var summary: GaendExposureSummaryV1
            public init(summary: GaendExposureSummaryV1) { self.summary = summary }
            public var args: [DBusValue] { [summary.dbusValue] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                summary = try GaendExposureSummaryV1(dbus: args[0])
            }
        }
    }
}

/// Research1's methods (docs/dbus.md).
public enum GaendResearch {
    static let interface = GaendBus.researchInterface

    /// `ExportSightings(h fd, x from, x to, s format) -> (u rows)`; times in Unix milliseconds.
    public enum ExportSightings: GaendMethod {
        public static let interface = GaendResearch.interface, name = "ExportSightings"
        public struct Request: GaendMessage {
            public static let arguments = [DBusArgument("fd", "h"), DBusArgument("from", "x"), DBusArgument("to", "x"),
                                           DBusArgument("format", "s")]
            public var fd: DBusUnixFD
            public var from: Int64
            public var to: Int64
            public var format: String
            public init(fd: DBusUnixFD, from: Int64, to: Int64, format: String) { self.fd = fd; self.from = from; self.to = to; self.format = format }
            public var args: [DBusValue] { [.unixFD(fd), .int64(from), .int64(to), .string(format)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                guard let fd = args[0].unixFDValue else { throw .wrongType(what: "fd", expected: "h", actual: args[0].type.signature) }
                self.fd = fd
                from = try args[1].wireInt64("from")
                to = try args[2].wireInt64("to")
                format = try args[3].wireString("format")
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("rows", "u")]
            public var rows: UInt32
            public init(rows: UInt32) { self.rows = rows }
            public var args: [DBusValue] { [.uint32(rows)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                rows = try args[0].wireUInt32("rows")
            }
        }
    }

    /// `AddMarker(x time, s label, d distance, s note) -> (t id)`; time in Unix milliseconds (0: now).
    public enum AddMarker: GaendMethod {
        public static let interface = GaendResearch.interface, name = "AddMarker"
        public struct Request: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("time", "x"), DBusArgument("label", "s"), DBusArgument("distance", "d"),
                                           DBusArgument("note", "s")]
            public var time: Int64
            public var label: String
            public var distance: Double
            public var note: String
            public init(time: Int64, label: String, distance: Double, note: String) {
                self.time = time; self.label = label; self.distance = distance; self.note = note
            }
            public var args: [DBusValue] { [.int64(time), .string(label), .double(distance), .string(note)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                time = try args[0].wireInt64("time")
                label = try args[1].wireString("label")
                distance = try args[2].wireDouble("distance")
                note = try args[3].wireString("note")
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("id", "t")]
            public var id: UInt64
            public init(id: UInt64) { self.id = id }
            public var args: [DBusValue] { [.uint64(id)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                id = try args[0].wireUInt64("id")
            }
        }
    }

    /// `GetMarkers(x from, x to) -> (a(txsds) markers)`; Unix milliseconds.
    public enum GetMarkers: GaendMethod {
        public static let interface = GaendResearch.interface, name = "GetMarkers"
        public struct Request: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("from", "x"), DBusArgument("to", "x")]
            public var from: Int64
            public var to: Int64
            public init(from: Int64, to: Int64) { self.from = from; self.to = to }
            public var args: [DBusValue] { [.int64(from), .int64(to)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                from = try args[0].wireInt64("from")
                to = try args[1].wireInt64("to")
            }
        }
        public struct Reply: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("markers", "a" + GaendMarker.signature)]
            public var markers: [GaendMarker]
            public init(markers: [GaendMarker]) { self.markers = markers }
            public var args: [DBusValue] { [GaendMarker.array(markers)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                markers = try GaendMarker.decodeArray(args[0], what: "markers")
            }
        }
    }

    /// `SetCalibration(n tx_power, n rssi_correction, i confidence)`.
    public enum SetCalibration: GaendMethod {
        public static let interface = GaendResearch.interface, name = "SetCalibration"
        public struct Request: GaendMessage, Equatable {
            public static let arguments = [DBusArgument("tx_power", "n"), DBusArgument("rssi_correction", "n"),
                                           DBusArgument("confidence", "i")]
            public var txPower: Int16
            public var rssiCorrection: Int16
            public var confidence: Int32
            public init(txPower: Int16, rssiCorrection: Int16, confidence: Int32) {
                self.txPower = txPower; self.rssiCorrection = rssiCorrection; self.confidence = confidence
            }
            public var args: [DBusValue] { [.int16(txPower), .int16(rssiCorrection), .int32(confidence)] }
            public init(args: [DBusValue]) throws(GaendWireError) {
                try Self.check(args)
                txPower = try args[0].wireInt16("tx_power")
                rssiCorrection = try args[1].wireInt16("rssi_correction")
                confidence = try args[2].wireInt32("confidence")
            }
        }
        public typealias Reply = GaendNoArguments
    }
}
