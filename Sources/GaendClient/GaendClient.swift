import DBusCore
import GaendAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The node's state: ExposureNotification1's properties, decoded by their one decoder
/// (`GaendExposureProperties`, GaendAPI).
public typealias GaendNodeStatus = GaendExposureProperties

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

/// The ExposureStateUpdated signal of one ProvideDiagnosisKeys call (its token), or nil after
/// `seconds`: `keys provide` and `app sync` wait for it the same way.
public func firstStateUpdate(_ updates: AsyncStream<GaendExposureStateUpdate>, token: String, within seconds: Double) async -> GaendExposureStateUpdate? {
    await withTaskGroup(of: GaendExposureStateUpdate?.self) { group in
        group.addTask {
            for await u in updates where u.token == token { return u }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
