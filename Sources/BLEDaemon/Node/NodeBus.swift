import DBusCore
import GaendAPI
import GaenStore
import HCIHost
import HCIProtocol
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NodeConfig

/// Binds the node to gaend's D-Bus tables (GaendInterfaces): handlers, properties and the
/// signals ExposureStateUpdated, ScanFinished and PropertiesChanged.
package final class NodeBus: NodeObserver, Sendable {
    package let service: BusService
    let node: GaenNode
    /// The exposure service's side of the node (ProvideDiagnosisKeys starts its matching).
    let exposure: ExposureNotifications
    let trust: KeyExportTrustSet
    let research: Bool
    let logger: Logger
    /// Calls passing descriptors in flight per caller uid (settings.callers.callsInFlight).
    let slots: CallerSlots
    /// Transfers on callers' descriptors in flight (ended at shutdown by the research service).
    package let transfers = CallerTransfers()
    static let version = GaendVersion.string

    package init(service: BusService, node: GaenNode, trust: KeyExportTrustSet, logger: Logger) {
        self.service = service
        self.node = node
        self.exposure = node.exposure
        self.trust = trust
        self.research = node.settings.research.enabled
        self.slots = CallerSlots(limit: node.settings.callers.callsInFlight)
        self.logger = logger
    }

    /// Exports the interfaces at /org/gaend (Research1 only when research is enabled).
    package func export() throws {
        var list = [try exposureNotification()]
        if research { list.append(try researchInterface()) }
        try service.export(path: GaendBus.objectPath, list)
    }

    static func ms(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }

    // MARK: ExposureNotification1

    typealias EN = GaendExposureNotification
    typealias R = GaendResearch

    private func exposureNotification() throws -> DBusInterfaceImplementation {
        let node = self.node, exposure = node.exposure, trust = self.trust, logger = self.logger
        var on = GaendHandlers(interface: GaendBus.exposureNotificationInterface, mapError: Self.wireError)
        on.on(EN.Start.self) { _, _ in try await node.enable(); return .init() }
        on.on(EN.Stop.self) { _, _ in try await node.disable(); return .init() }
        on.on(EN.GetTemporaryExposureKeyHistory.self) { _, call in
            let uid = try await call.callerUID()
            guard exposure.mayReadKeys(uid: uid) else {
                throw NodeError.notAuthorized("uid \(uid) may not read the key history")
            }
            let keys = try await exposure.keyHistory()
            logger.info("key history read", metadata: ["caller.uid": "\(uid)", "keys": "\(keys.count)"])
            return .init(keys: keys.map {
                GaendTemporaryExposureKey(keyData: $0.key.bytes, rollingStartIntervalNumber: $0.rollingStartIntervalNumber.rawValue,
                                          rollingPeriod: $0.rollingPeriod)
            })
        }
        on.on(EN.ProvideDiagnosisKeys.self) { [self] request, call in
            let token = request.token, fds = request.files
            guard token.utf8.count <= 256 else { throw NodeError.invalidArgs("token: at most 256 bytes") }
            var descriptors: [CallerDescriptor] = []
            for (n, v) in fds.enumerated() {
                guard let fd = v.take() else { throw NodeError.invalidArgs("files[\(n)] was already taken") }
                do { descriptors.append(try CallerDescriptor(taking: fd, what: "file \(n + 1)")) } catch let e as CallerIOError {
                    throw Self.keyFileError(e)
                }
            }
            // Regular files say their size up front: a call over its bound is refused before
            // a byte is read.
            let limits = exposure.provideLimits
            let declared = descriptors.compactMap(\.regularFileSize).reduce(0, +)
            guard declared <= limits.maxCallBytes else {
                throw NodeError.limitExceeded("the files are \(declared) bytes together; one call's files may be at most \(limits.maxCallBytes) bytes")
            }
            // Every byte read or inflated for this call is claimed from the budget of all
            // calls before it is spent, and released when the call returns.
            let claim = BudgetClaim(exposure.provideBudget)
            defer { claim.release() }
            let files = try await self.withCallerSlot(call) { [timeout = self.ioTimeout, descriptors] in
                do {
                    return try await transfers.run("gaend.keyfile-read") { flag in
                        var total = 0
                        return try descriptors.map { d in
                            let data = try d.readAll(limit: limits.maxCallBytes - total, timeout: timeout, cancel: flag, claim: claim)
                            total += data.count
                            return data
                        }
                    }
                } catch let e as CallerIOError { throw Self.keyFileError(e) }
            }
            let count = try await exposure.acceptKeyFiles(files, trust: trust, claim: claim)
            // Stopping: the files are stored, but no matching starts any more (the exposure
            // service has been told to stop); the next call's matching covers them.
            if Task.isCancelled {
                await exposure.abandonMatching()
                throw NodeError.internalFailure("gaend is stopping: the \(count) keys were stored and are matched after the next ProvideDiagnosisKeys")
            }
            await exposure.beginMatching(token: token)
            return .init(keys: UInt32(clamping: count))
        }
        on.on(EN.GetExposureWindows.self) { _, _ in
            .init(windows: try await exposure.exposureWindows().map(Self.wire))
        }
        on.on(EN.GetDailySummaries.self) { request, _ in
            let config = try Self.domain(request.config)
            let summaries: [DailySummary]
            do { summaries = try await exposure.dailySummaries(config: config) } catch let e as NodeError { throw e } catch {
                throw NodeError.invalidArgs("config: \(error)")
            }
            return .init(summaries: summaries.map(Self.wire))
        }
        on.on(EN.SetDiagnosisKeysDataMapping.self) { request, _ in
            try await exposure.setDataMapping(try Self.domain(request.mapping))
            return .init()
        }
        on.on(EN.GetDiagnosisKeysDataMapping.self) { _, _ in
            .init(mapping: Self.wire(try exposure.dataMapping()))
        }
        on.on(EN.GetExposureSummary.self) { request, _ in
            let config = try Self.domain(request.config)
            let s: ExposureSummaryV1, summation: Int
            do { (s, summation) = try await exposure.exposureSummary(config: config) } catch let e as NodeError { throw e } catch {
                throw NodeError.invalidArgs("config: \(error)")
            }
            return .init(summary: GaendExposureSummaryV1(
                daysSinceLastExposure: Int32(s.daysSinceLastExposure ?? 0), matchedKeyCount: Int32(s.matchedKeyCount),
                maximumRiskScore: Int32(s.maximumRiskScore), summationRiskScore: Int32(clamping: summation),
                attenuationDurationsInMinutes: s.attenuationDurations.map { Int32($0 / 60) }))
        }
        // One reading of the node per Get, GetAll or PropertiesChanged, written by the typed
        // value's one encoder.
        let settings = node.settings
        return try DBusInterfaceImplementation(GaendInterfaces.exposureNotification, methods: on.methods,
                                               snapshot: { Self.exposureProperties(await node.snapshot, settings: settings) },
                                               properties: Self.getters(GaendExposureProperties.self))
    }

    /// The getters of a typed properties value: each property from its one encoder.
    static func getters<P: GaendProperties>(_ type: P.Type) -> [String: @Sendable (P) async throws -> DBusValue] {
        Dictionary(uniqueKeysWithValues: P.names.map { name in (name, { @Sendable (p: P) async throws -> DBusValue in try p.value(name) }) })
    }

    /// The Controller property: the configured name, and the facts of its bring-up once there.
    static func controller(_ s: NodeStatusSnapshot) -> GaendController {
        guard let info = s.radio.controllerInfo else { return GaendController(name: s.controller, problem: s.radio.controllerProblem) }
        let v = info.version
        return GaendController(name: s.controller, address: info.address.description, manufacturer: v.companyIdentifier,
                               manufacturerName: CompanyIdentifier.name(v.companyIdentifier),
                               hciVersion: v.hciVersion, hciSubversion: v.hciSubversion,
                               lmpVersion: v.lmpVersion, lmpSubversion: v.lmpSubversion)
    }


    // MARK: Caller descriptors

    var ioTimeout: Double { node.settings.callers.ioTimeoutSeconds }

    /// Runs `body` holding one of the caller's slots for calls that pass descriptors.
    func withCallerSlot<T: Sendable>(_ call: DBusMethodCall, _ body: () async throws -> T) async throws -> T {
        let uid = try await call.callerUID()
        guard slots.claim(uid) else {
            throw NodeError.limitExceeded("uid \(uid) already has \(slots.limit) calls passing file descriptors in flight")
        }
        defer { slots.release(uid) }
        return try await body()
    }

    static func keyFileError(_ e: CallerIOError) -> NodeError {
        switch e {
        case .timeout: return .timeout("\(e)")
        case .tooLarge: return .limitExceeded("\(e)")
        case .unsupported, .failed: return .invalidKeyFile("\(e)")
        case .cancelled: return .internalFailure("\(e)")
        case .overBudget: return .limitExceeded("\(e)")
        }
    }

    static func exportError(_ e: CallerIOError) -> NodeError {
        switch e {
        case .timeout: return .timeout("\(e)")
        case .tooLarge: return .limitExceeded("\(e)")
        case .unsupported, .failed: return .writeFailed("\(e)")
        case .cancelled: return .internalFailure("\(e)")
        case .overBudget: return .limitExceeded("\(e)")
        }
    }

    // MARK: Research1

    private func researchInterface() throws -> DBusInterfaceImplementation {
        let node = self.node
        var on = GaendHandlers(interface: GaendBus.researchInterface, mapError: Self.wireError)
        on.on(R.ExportSightings.self) { [self] request, call in
            let from = request.from, to = request.to, format = request.format
            guard let fd = request.fd.take() else { throw NodeError.invalidArgs("fd was already taken") }
            let out: CallerDescriptor
            do { out = try CallerDescriptor(taking: fd, what: "the export's descriptor") } catch let e as CallerIOError { throw Self.exportError(e) }
            guard from <= to else { throw NodeError.invalidArgs("from \(from) is after to \(to)") }
            let context = node.research.exportContext
            let rows = try await self.withCallerSlot(call) { [timeout = self.ioTimeout] in
                // Formatting and the writes into the caller's descriptor run on the transfer
                // pool (the store read on the store's thread): a reader that stops reading
                // stalls only this call.
                try await transfers.run("gaend.export") { flag in
                    try ResearchRecords.writeSightings(context, from: Double(from) / 1000, to: Double(to) / 1000, format: format) { data in
                        do { try out.write(data, idleTimeout: timeout, cancel: flag) } catch let e as CallerIOError { throw Self.exportError(e) }
                    }
                }
            }
            return .init(rows: UInt32(clamping: rows))
        }
        on.on(R.AddMarker.self) { r, _ in
            let id = try await node.research.addMarker(time: Double(r.time) / 1000, label: r.label, distance: r.distance, note: r.note)
            return .init(id: UInt64(id))
        }
        on.on(R.GetMarkers.self) { r, _ in
            let markers = try await node.research.markers(from: Double(r.from) / 1000, to: Double(r.to) / 1000)
            guard markers.count <= 65_536 else { throw NodeError.limitExceeded("\(markers.count) markers; narrow the range") }
            return .init(markers: markers.map { r in
                let m = r.marker
                return GaendMarker(id: UInt64(r.id), time: Self.ms(m.time), label: m.label, distance: m.distanceMeters ?? -1, note: m.note)
            })
        }
        on.on(R.SetCalibration.self) { r, _ in
            try await node.calibration.set(txPower: Int(r.txPower), rssiCorrection: Int(r.rssiCorrection), confidence: Int(r.confidence))
            return .init()
        }
        // One reading per Get/GetAll, written by the typed value's one encoder.
        let settings = node.settings
        return try DBusInterfaceImplementation(GaendInterfaces.research, methods: on.methods, snapshot: {
            let c = node.calibration.current
            // The labels every export carries, so clients label what they export the same way.
            return GaendResearchProperties(txPower: Int16(clamping: c.txPower), rssiCorrection: Int16(clamping: c.rssiCorrection),
                                           calibrationConfidence: Int32(c.confidence.rawValue),
                                           node: settings.research.node, site: settings.research.site)
        }, properties: Self.getters(GaendResearchProperties.self))
    }

    // MARK: NodeObserver

    package func matchingFinished(token: String, _ result: MatchingResult) async {
        switch result {
        case .success(let (matched, windows)):
            logger.info("matching finished", metadata: ["matched.keys": "\(matched)", "windows": "\(windows)"])
            await exposureStateUpdated(token: token, matchedKeys: matched, windows: windows, error: "")
        case .failure(let error):
            let name = (error as? NodeError).map(Self.errorName) ?? GaendInterfaces.ErrorName.failed
            logger.error("matching failed", metadata: ["error": "\(error)"])
            await exposureStateUpdated(token: token, matchedKeys: 0, windows: 0, error: name)
        }
    }

    package func statusChanged() async {
        // Every property that emits changes (the table's rule, from the typed value).
        try? await service.emitPropertiesChanged(path: GaendBus.objectPath, interface: GaendBus.exposureNotificationInterface,
                                                 GaendExposureProperties.changing)
    }

    package func scanFinished(_ scan: Scan) async {
        guard research else { return }
        let signal = GaendScanFinished(start: Self.ms(scan.start), end: Self.ms(scan.end), sightings: scan.sightings.map {
            GaendSighting(time: Self.ms($0.time), rpi: $0.rpi.bytes, aem: $0.aem.bytes, rssi: Int16($0.rssi), address: $0.addressText)
        })
        do {
            // ScanRecorded (with addresses) first, then ScanFinished for older clients: a client
            // that hears both recognises the second as the same scan.
            try await service.emit(path: GaendBus.objectPath, interface: GaendScanRecorded.interface, signal: GaendScanRecorded.member,
                                   GaendScanRecorded(signal).args)
            try await service.emit(path: GaendBus.objectPath, interface: GaendScanFinished.interface, signal: GaendScanFinished.member, signal.args)
        } catch { logger.debug("ScanFinished not sent", metadata: ["error": "\(error)"]) }
    }

    private func exposureStateUpdated(token: String, matchedKeys: Int, windows: Int, error: String) async {
        let update = GaendExposureStateUpdate(token: token, matchedKeys: UInt32(clamping: matchedKeys), windows: UInt32(clamping: windows), error: error)
        do {
            try await service.emit(path: GaendBus.objectPath, interface: GaendExposureStateUpdate.interface,
                                   signal: GaendExposureStateUpdate.member, update.args)
        } catch { logger.warning("ExposureStateUpdated not sent", metadata: ["error": "\(error)"]) }
    }
}
