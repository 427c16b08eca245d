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
    /// The exposure service is matching provided key files (nil from a gaend without the property).
    public var matching: Bool?

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
        matching = try optionalBool("Matching")
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

    /// Calls one typed method: the request's one encoder, the reply's one decoder.
    public func call<M: GaendMethod>(_ method: M.Type, _ request: M.Request) async throws -> M.Reply {
        let out = try await bus.call(destination, GaendBus.objectPath, M.interface, M.name, request.args)
        do { return try M.Reply(args: out) } catch {
            throw GaendWireError.wrongType(what: "reply of \(M.name)", expected: M.Reply.signature, actual: DBusValue.signature(of: out))
        }
    }

    public func call<M: GaendMethod>(_ method: M.Type) async throws -> M.Reply where M.Request == GaendNoArguments {
        try await call(method, GaendNoArguments())
    }

    typealias EN = GaendExposureNotification
    typealias R = GaendResearch

    // MARK: ExposureNotification1

    public func start() async throws { _ = try await call(EN.Start.self) }
    public func stop() async throws { _ = try await call(EN.Stop.self) }

    public func status() async throws -> GaendNodeStatus {
        try GaendNodeStatus(properties: try await bus.getAllProperties(
            destination, GaendBus.objectPath, GaendBus.exposureNotificationInterface))
    }

    public func temporaryExposureKeyHistory() async throws -> [GaendTemporaryExposureKey] {
        try await call(EN.GetTemporaryExposureKeyHistory.self).keys
    }

    /// Provides key export files (the client keeps its descriptors); returns the keys accepted.
    public func provideDiagnosisKeys(files: [DBusUnixFD], token: String) async throws -> UInt32 {
        try await call(EN.ProvideDiagnosisKeys.self, .init(files: files, token: token)).keys
    }

    public func exposureWindows() async throws -> [GaendExposureWindow] {
        try await call(EN.GetExposureWindows.self).windows
    }

    /// Daily summaries of the stored windows under `config` (docs/dbus.md, "Summary configuration").
    public func dailySummaries(config: GaendDailySummariesConfig) async throws -> [GaendDailySummary] {
        try await call(EN.GetDailySummaries.self, .init(config: config)).summaries
    }

    public func setDiagnosisKeysDataMapping(_ mapping: GaendDataMapping) async throws {
        _ = try await call(EN.SetDiagnosisKeysDataMapping.self, .init(mapping: mapping))
    }

    public func diagnosisKeysDataMapping() async throws -> GaendDataMapping {
        try await call(EN.GetDiagnosisKeysDataMapping.self).mapping
    }

    public func exposureSummary(config: GaendExposureConfigurationV1) async throws -> GaendExposureSummaryV1 {
        try await call(EN.GetExposureSummary.self, .init(config: config)).summary
    }

    /// ExposureStateUpdated signals; malformed ones are dropped.
    public func exposureStateUpdates() async throws -> AsyncStream<GaendExposureStateUpdate> {
        let raw = try await bus.signals(sender: destination, path: GaendBus.objectPath,
                                        interface: GaendExposureStateUpdate.interface, member: GaendExposureStateUpdate.member)
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
        try await call(R.ExportSightings.self, .init(fd: file, from: from, to: to, format: format)).rows
    }

    /// Adds a ground-truth marker (`time` 0: now); returns its id.
    public func addMarker(time: Int64, label: String, distance: Double, note: String) async throws -> UInt64 {
        try await call(R.AddMarker.self, .init(time: time, label: label, distance: distance, note: note)).id
    }

    public func markers(from: Int64, to: Int64) async throws -> [GaendMarker] {
        try await call(R.GetMarkers.self, .init(from: from, to: to)).markers
    }

    public func setCalibration(txPower: Int16, rssiCorrection: Int16, confidence: Int32) async throws {
        _ = try await call(R.SetCalibration.self, .init(txPower: txPower, rssiCorrection: rssiCorrection, confidence: confidence))
    }

    /// Research1's properties (the one decoder).
    public func researchProperties() async throws -> GaendResearchProperties {
        try GaendResearchProperties(properties: try await bus.getAllProperties(destination, GaendBus.objectPath, GaendBus.researchInterface))
    }

    public func calibration() async throws -> GaendCalibration {
        let p = try await researchProperties()
        return GaendCalibration(txPower: p.txPower, rssiCorrection: p.rssiCorrection, calibrationConfidence: p.calibrationConfidence)
    }

    /// The node and site labels the node writes into its exports (Research1 `Node`, `Site`).
    public func labels() async throws -> (node: String, site: String) {
        let p = try await researchProperties()
        return (p.node, p.site)
    }

    /// Each scan once, malformed signals dropped: from ScanRecorded (sightings with their
    /// advertiser addresses), or from ScanFinished when the daemon does not send ScanRecorded
    /// (Research1 revision 1).
    public func scanFinished() async throws -> AsyncStream<GaendScanFinished> {
        let raw = try await bus.signals(sender: destination, path: GaendBus.objectPath, interface: GaendBus.researchInterface)
        return AsyncStream { continuation in
            let task = Task {
                // The daemon sends ScanRecorded before ScanFinished of the same scan.
                var lastRecorded: (start: Int64, end: Int64)?
                for await m in raw {
                    if m.member == GaendScanRecorded.member, let r = try? GaendScanRecorded(args: m.body) {
                        lastRecorded = (r.scan.start, r.scan.end)
                        continuation.yield(r.scan)
                    } else if m.member == GaendScanFinished.member, let s = try? GaendScanFinished(args: m.body) {
                        if let r = lastRecorded, r == (s.start, s.end) { continue }
                        continuation.yield(s)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
