import DBusCore
import GaendAPI
import Foundation

/// The node's state, from ExposureNotification1's properties (JSON keys as the property names
/// in camelCase, for `gaenctl status --json`).
public struct GaendNodeStatus: Sendable, Equatable, Codable {
    public var version: String
    public var enabled: Bool
    public var status: [String]
    public var trialMode: Bool
    public var advertisementCount: UInt64
    public var scanCount: UInt64
    public var sightingCount: UInt64
    public var lastScanTime: Int64
    public var provideDiagnosisKeysRemaining: UInt32
    /// Since interface version 2 (nil from an older gaend).
    public var quarantinedRecords: UInt32?
    public var droppedScans: UInt64?
    public var droppedSightings: UInt64?
    public var clockSync: String?
    /// Whether the controller confirmed advertising and scanning on air (separate facts;
    /// scanning is off between scans in the periodic modes). Nil from a daemon older than
    /// these properties (since 2), as are the radio counters below.
    public var advertisingOnAir: Bool?
    public var scanningOnAir: Bool?
    /// Radio operations (rotations, scan starts) that failed and were retried.
    public var radioFailures: UInt64?
    /// Advertising reports without 0xFD6F service data (not kept), and reports lost to full
    /// buffers.
    public var reportsIgnored: UInt64?
    public var reportsDropped: UInt64?
    /// Field checks (since interface version 3; nil from an older gaend): the controller, the
    /// random address on air (nil: nothing on air), in trial mode the RPI on air, the
    /// calibration in use and the export labels.
    public var controller: GaendController?
    public var advertisingAddress: String?
    public var currentRPI: Data?
    public var txPower: Int16?
    public var rssiCorrection: Int16?
    public var calibrationConfidence: Int32?
    public var node: String?
    public var site: String?

    public init(properties p: [String: DBusValue]) throws(GaendWireError) {
        func get(_ name: String) throws(GaendWireError) -> DBusValue {
            guard let v = p[name] else { throw .wrongType(what: name, expected: "a value", actual: "nothing") }
            return v
        }
        func bool(_ name: String) throws(GaendWireError) -> Bool {
            let v = try get(name)
            guard let b = v.boolValue else { throw .wrongType(what: name, expected: "b", actual: v.type.signature) }
            return b
        }
        func u64(_ name: String) throws(GaendWireError) -> UInt64 {
            let v = try get(name)
            guard case .uint64(let n) = v else { throw .wrongType(what: name, expected: "t", actual: v.type.signature) }
            return n
        }
        version = try get("Version").wireString("Version")
        enabled = try bool("Enabled")
        let s = try get("Status")
        guard case .array(.string, let items) = s else {
            throw .wrongType(what: "Status", expected: "as", actual: s.type.signature)
        }
        status = items.compactMap(\.stringValue)
        trialMode = try bool("TrialMode")
        advertisementCount = try u64("AdvertisementCount")
        scanCount = try u64("ScanCount")
        sightingCount = try u64("SightingCount")
        lastScanTime = try get("LastScanTime").wireInt64("LastScanTime")
        provideDiagnosisKeysRemaining = try get("ProvideDiagnosisKeysRemaining").wireUInt32("ProvideDiagnosisKeysRemaining")
        if case .uint32(let n)? = p["QuarantinedRecords"] { quarantinedRecords = n }
        if case .uint64(let n)? = p["DroppedScans"] { droppedScans = n }
        if case .uint64(let n)? = p["DroppedSightings"] { droppedSightings = n }
        clockSync = p["ClockSync"]?.stringValue
        func optionalBool(_ name: String) throws(GaendWireError) -> Bool? { p[name] == nil ? nil : try bool(name) }
        func optionalU64(_ name: String) throws(GaendWireError) -> UInt64? { p[name] == nil ? nil : try u64(name) }
        advertisingOnAir = try optionalBool("AdvertisingOnAir")
        scanningOnAir = try optionalBool("ScanningOnAir")
        radioFailures = try optionalU64("RadioFailures")
        reportsIgnored = try optionalU64("ReportsIgnored")
        reportsDropped = try optionalU64("ReportsDropped")
        if let c = p["Controller"] { controller = try GaendController(dbus: c) }
        if let a = p["AdvertisingAddress"] {
            let address = try a.wireString("AdvertisingAddress")
            advertisingAddress = address.isEmpty ? nil : address
        }
        if let r = p["CurrentRpi"] {
            guard let bytes = r.bytesValue, r.type == .array(.byte) else {
                throw .wrongType(what: "CurrentRpi", expected: "ay", actual: r.type.signature)
            }
            currentRPI = bytes.isEmpty ? nil : bytes
        }
        txPower = try p["TxPower"].map { v throws(GaendWireError) in try v.wireInt16("TxPower") }
        rssiCorrection = try p["RssiCorrection"].map { v throws(GaendWireError) in try v.wireInt16("RssiCorrection") }
        calibrationConfidence = try p["CalibrationConfidence"].map { v throws(GaendWireError) in try v.wireInt32("CalibrationConfidence") }
        node = try p["Node"].map { v throws(GaendWireError) in try v.wireString("Node") }
        site = try p["Site"].map { v throws(GaendWireError) in try v.wireString("Site") }
    }
}

/// The calibration settings, from Research1's properties.
public struct GaendCalibration: Sendable, Equatable, Codable {
    public var txPower: Int16
    public var rssiCorrection: Int16
    public var calibrationConfidence: Int32

    public init(txPower: Int16, rssiCorrection: Int16, calibrationConfidence: Int32) {
        self.txPower = txPower
        self.rssiCorrection = rssiCorrection
        self.calibrationConfidence = calibrationConfidence
    }
}

/// gaend's API as typed Swift calls over a `BusClient` (docs/dbus.md). Failures are
/// `DBusNamedError`s with the daemon's error names (`GaendInterfaces.ErrorName`), or
/// `GaendWireError` if a reply does not have the documented shape.
public struct GaendClient: Sendable {
    public let bus: BusClient
    public let destination: String

    public init(bus: BusClient, destination: String = GaendBus.busName) {
        self.bus = bus
        self.destination = destination
    }

    private func en(_ method: String, _ args: [DBusValue] = [], expect signature: String) async throws -> [DBusValue] {
        try await call(GaendBus.exposureNotificationInterface, method, args, expect: signature)
    }

    private func research(_ method: String, _ args: [DBusValue] = [], expect signature: String) async throws -> [DBusValue] {
        try await call(GaendBus.researchInterface, method, args, expect: signature)
    }

    private func call(_ interface: String, _ method: String, _ args: [DBusValue], expect signature: String) async throws -> [DBusValue] {
        let out = try await bus.call(destination, GaendBus.objectPath, interface, method, args)
        let actual = DBusValue.signature(of: out)
        guard actual == signature else {
            throw GaendWireError.wrongType(what: "reply of \(method)", expected: signature, actual: actual)
        }
        return out
    }

    // MARK: ExposureNotification1

    public func start() async throws { _ = try await en("Start", expect: "") }
    public func stop() async throws { _ = try await en("Stop", expect: "") }

    public func status() async throws -> GaendNodeStatus {
        try GaendNodeStatus(properties: try await bus.getAllProperties(
            destination, GaendBus.objectPath, GaendBus.exposureNotificationInterface))
    }

    public func temporaryExposureKeyHistory() async throws -> [GaendTemporaryExposureKey] {
        let out = try await en("GetTemporaryExposureKeyHistory", expect: "a" + GaendTemporaryExposureKey.signature)
        return try GaendTemporaryExposureKey.decodeArray(out[0], what: "keys")
    }

    /// Provides key export files (the client keeps its descriptors); returns the keys accepted.
    public func provideDiagnosisKeys(files: [DBusUnixFD], token: String) async throws -> UInt32 {
        let out = try await en("ProvideDiagnosisKeys", GaendRequest.ProvideDiagnosisKeys(files: files, token: token).args, expect: "u")
        return try out[0].wireUInt32("keys")
    }

    public func exposureWindows() async throws -> [GaendExposureWindow] {
        let out = try await en("GetExposureWindows", expect: "a" + GaendExposureWindow.signature)
        return try GaendExposureWindow.decodeArray(out[0], what: "windows")
    }

    /// `config` holds the keys of docs/dbus.md ("Summary configuration").
    public func dailySummaries(config: [String: DBusValue]) async throws -> [GaendDailySummary] {
        let out = try await en("GetDailySummaries", [.vardict(config)], expect: "a" + GaendDailySummary.signature)
        return try GaendDailySummary.decodeArray(out[0], what: "summaries")
    }

    public func setDiagnosisKeysDataMapping(_ mapping: [String: DBusValue]) async throws {
        _ = try await en("SetDiagnosisKeysDataMapping", [.vardict(mapping)], expect: "")
    }

    public func diagnosisKeysDataMapping() async throws -> [String: DBusValue] {
        let out = try await en("GetDiagnosisKeysDataMapping", expect: "a{sv}")
        return out[0].vardictValue ?? [:]
    }

    public func exposureSummary(config: [String: DBusValue]) async throws -> GaendExposureSummaryV1 {
        let out = try await en("GetExposureSummary", [.vardict(config)], expect: GaendExposureSummaryV1.signature)
        return try GaendExposureSummaryV1(dbus: out[0])
    }

    /// ExposureStateUpdated signals; malformed ones are dropped.
    public func exposureStateUpdates() async throws -> AsyncStream<GaendExposureStateUpdate> {
        let raw = try await bus.signals(sender: destination, path: GaendBus.objectPath,
                                        interface: GaendBus.exposureNotificationInterface, member: "ExposureStateUpdated")
        return AsyncStream { continuation in
            let task = Task {
                for await m in raw {
                    if let u = try? GaendExposureStateUpdate(args: m.body) { continuation.yield(u) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Research1

    /// Writes sightings of [from, to) (ms) to `file` as `format` (`csv` or `jsonl`); returns the rows.
    public func exportSightings(to file: DBusUnixFD, from: Int64, to: Int64, format: String) async throws -> UInt32 {
        let out = try await research("ExportSightings", GaendRequest.ExportSightings(fd: file, from: from, to: to, format: format).args,
                                     expect: "u")
        return try out[0].wireUInt32("rows")
    }

    /// Adds a ground-truth marker (`time` 0: now); returns its id.
    public func addMarker(time: Int64, label: String, distance: Double, note: String) async throws -> UInt64 {
        let out = try await research("AddMarker", GaendRequest.AddMarker(time: time, label: label, distance: distance, note: note).args,
                                     expect: "t")
        return try out[0].wireUInt64("id")
    }

    public func markers(from: Int64, to: Int64) async throws -> [GaendMarker] {
        let out = try await research("GetMarkers", GaendRequest.GetMarkers(from: from, to: to).args, expect: "a" + GaendMarker.signature)
        return try GaendMarker.decodeArray(out[0], what: "markers")
    }

    public func setCalibration(txPower: Int16, rssiCorrection: Int16, confidence: Int32) async throws {
        _ = try await research("SetCalibration", GaendRequest.SetCalibration(txPower: txPower, rssiCorrection: rssiCorrection, confidence: confidence).args,
                               expect: "")
    }

    public func calibration() async throws -> GaendCalibration {
        let p = try await bus.getAllProperties(destination, GaendBus.objectPath, GaendBus.researchInterface)
        guard case .int16(let tx)? = p["TxPower"], case .int16(let rc)? = p["RssiCorrection"],
              case .int32(let cc)? = p["CalibrationConfidence"] else {
            throw GaendWireError.wrongType(what: "Research1 properties", expected: "TxPower n, RssiCorrection n, CalibrationConfidence i",
                                           actual: p.map { "\($0.key) \($0.value.type.signature)" }.sorted().joined(separator: ", "))
        }
        return GaendCalibration(txPower: tx, rssiCorrection: rc, calibrationConfidence: cc)
    }

    /// The node and site labels the node writes into its exports (Research1 `Node`, `Site`).
    public func labels() async throws -> (node: String, site: String) {
        let p = try await bus.getAllProperties(destination, GaendBus.objectPath, GaendBus.researchInterface)
        guard case .string(let node)? = p["Node"], case .string(let site)? = p["Site"] else {
            throw GaendWireError.wrongType(what: "Research1 properties", expected: "Node s, Site s",
                                           actual: p.map { "\($0.key) \($0.value.type.signature)" }.sorted().joined(separator: ", "))
        }
        return (node, site)
    }

    /// ScanFinished signals; malformed ones are dropped.
    /// Each scan once: from ScanRecorded (sightings with their advertiser addresses), or from
    /// ScanFinished when the daemon does not send ScanRecorded (Research1 revision 1).
    public func scanFinished() async throws -> AsyncStream<GaendScanFinished> {
        let raw = try await bus.signals(sender: destination, path: GaendBus.objectPath, interface: GaendBus.researchInterface)
        return AsyncStream { continuation in
            let task = Task {
                // The daemon sends ScanRecorded before ScanFinished of the same scan.
                var lastRecorded: (start: Int64, end: Int64)?
                for await m in raw {
                    guard m.member == "ScanRecorded" || m.member == "ScanFinished",
                          let s = try? GaendScanFinished(args: m.body) else { continue }
                    if m.member == "ScanRecorded" {
                        lastRecorded = (s.start, s.end)
                    } else if let r = lastRecorded, r == (s.start, s.end) {
                        continue
                    }
                    continuation.yield(s)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
