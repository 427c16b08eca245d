import DBusCore
import GaendAPI
import HCIProtocol
import ENProtocol
import Foundation
import Logging

/// Binds the node to gaend's D-Bus tables (GaendInterfaces): handlers, properties and the
/// signals ExposureStateUpdated, ScanFinished and PropertiesChanged.
public final class NodeBus: NodeObserver, Sendable {
    public let service: BusService
    let node: GaenNode
    let trust: KeyExportTrustSet
    let research: Bool
    let logger: Logger
    /// Calls passing descriptors in flight per caller uid (settings.callers.callsInFlight).
    let slots: CallerSlots
    /// Transfers on callers' descriptors in flight (ended at shutdown by the research service).
    public let transfers = CallerTransfers()
    static let version = "0.1.0"

    public init(service: BusService, node: GaenNode, trust: KeyExportTrustSet, logger: Logger) {
        self.service = service
        self.node = node
        self.trust = trust
        self.research = node.settings.research.enabled
        self.slots = CallerSlots(limit: node.settings.callers.callsInFlight)
        self.logger = logger
    }

    /// Exports the interfaces at /org/gaend (Research1 only when research is enabled).
    public func export() throws {
        var list = [try exposureNotification()]
        if research { list.append(try researchInterface()) }
        try service.export(path: GaendBus.objectPath, list)
    }

    static func ms(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }

    // MARK: ExposureNotification1

    private func exposureNotification() throws -> DBusInterfaceImplementation {
        let node = self.node, trust = self.trust, logger = self.logger
        let methods: [String: DBusMethodHandler] = [
            "Start": { _ in try await node.enable(); return [] },
            "Stop": { _ in try await node.disable(); return [] },
            "GetTemporaryExposureKeyHistory": { call in
                let uid = try await call.callerUID()
                guard await node.mayReadKeys(uid: uid) else {
                    throw NodeError.notAuthorized("uid \(uid) may not read the key history")
                }
                let keys = try await node.keyHistory()
                logger.info("key history read", metadata: ["caller.uid": "\(uid)", "keys": "\(keys.count)"])
                return [GaendTemporaryExposureKey.array(keys.map {
                    GaendTemporaryExposureKey(keyData: $0.key.bytes, rollingStartIntervalNumber: $0.rollingStartIntervalNumber.rawValue,
                                              rollingPeriod: $0.rollingPeriod)
                })]
            },
            "ProvideDiagnosisKeys": { [self] call in
                let request = try Self.decode { try GaendRequest.ProvideDiagnosisKeys(args: call.args) }
                let token = request.token, fds = request.files
                guard token.utf8.count <= 256 else { throw NodeError.invalidArgs("token: at most 256 bytes") }
                guard fds.count <= 16 else { throw NodeError.limitExceeded("\(fds.count) files; at most 16 per call") }
                var descriptors: [CallerDescriptor] = []
                for (n, v) in fds.enumerated() {
                    guard let fd = v.take() else { throw NodeError.invalidArgs("files[\(n)] was already taken") }
                    do { descriptors.append(try CallerDescriptor(taking: fd, what: "file \(n + 1)")) } catch let e as CallerIOError {
                        throw Self.keyFileError(e)
                    }
                }
                let files = try await self.withCallerSlot(call) { [timeout = self.ioTimeout, descriptors] in
                    do {
                        return try await transfers.run("gaend.keyfile-read") { flag in
                            try descriptors.map { try $0.readAll(limit: 16 << 20, timeout: timeout, cancel: flag) }
                        }
                    } catch let e as CallerIOError { throw Self.keyFileError(e) }
                }
                let count = try await node.acceptKeyFiles(files, trust: trust)
                await node.beginMatching { [self] result in await self.matched(token: token, result) }
                return [.uint32(UInt32(clamping: count))]
            },
            "GetExposureWindows": { _ in
                [GaendExposureWindow.array(try await node.exposureWindows().map(Self.wire))]
            },
            "GetDailySummaries": { call in
                let config = try Self.summariesConfig(call.args[0].vardictValue ?? [:])
                let summaries: [DailySummary]
                do { summaries = try await node.dailySummaries(config: config) } catch let e as NodeError { throw e } catch {
                    throw NodeError.invalidArgs("config: \(error)")
                }
                return [GaendDailySummary.array(summaries.map { s in
                    var per: [Int32: GaendSummaryData] = [:]
                    for (name, d) in s.summaryDataPerReportType {
                        let code = ReportTypeCode.names.firstIndex(of: name) ?? Int(name) ?? 0
                        per[Int32(code)] = Self.wire(d)
                    }
                    return GaendDailySummary(daysSinceEpoch: UInt32(clamping: s.daysSinceEpoch), summaryData: Self.wire(s.summaryData),
                                             reportTypeSummaries: per)
                })]
            },
            "SetDiagnosisKeysDataMapping": { call in
                try await node.setDataMapping(try Self.mapping(call.args[0].vardictValue ?? [:]))
                return []
            },
            "GetDiagnosisKeysDataMapping": { _ in
                let m = try await node.dataMapping()
                var d: [String: DBusValue] = [
                    "report_type_when_missing": .int32(Int32(m.reportTypeWhenMissing.rawValue)),
                    "infectiousness_when_days_since_onset_missing": .int32(Int32(m.infectiousnessWhenDaysSinceOnsetMissing.rawValue)),
                ]
                if let table = m.daysSinceOnsetToInfectiousness {
                    d["days_since_onset_to_infectiousness"] = .dict(key: .int32, value: .int32, table.sorted { $0.key < $1.key }.map {
                        DBusDictEntry(key: .int32(Int32($0.key)), value: .int32(Int32($0.value.rawValue)))
                    })
                }
                return [.vardict(d)]
            },
            "GetExposureSummary": { call in
                let config = try Self.v1Config(call.args[0].vardictValue ?? [:])
                let s: ExposureSummaryV1, summation: Int
                do { (s, summation) = try await node.exposureSummary(config: config) } catch let e as NodeError { throw e } catch {
                    throw NodeError.invalidArgs("config: \(error)")
                }
                return [GaendExposureSummaryV1(daysSinceLastExposure: Int32(s.daysSinceLastExposure ?? 0), matchedKeyCount: Int32(s.matchedKeyCount),
                                               maximumRiskScore: Int32(s.maximumRiskScore), summationRiskScore: Int32(clamping: summation),
                                               attenuationDurationsInMinutes: s.attenuationDurations.map { Int32($0 / 60) }).dbusValue]
            },
        ]
        let getters: [String: DBusPropertyGetter] = [
            "Version": { .string(Self.version) },
            "Enabled": { .boolean(await node.snapshot.enabled) },
            "Status": { .array(.string, await node.snapshot.status.map { .string($0) }) },
            "TrialMode": { .boolean(node.settings.trial) },
            "AdvertisementCount": { .uint64(await node.snapshot.advertisements) },
            "ScanCount": { .uint64(await node.snapshot.scans) },
            "SightingCount": { .uint64(await node.snapshot.sightings) },
            "LastScanTime": { .int64(await node.snapshot.lastScanEnd.map(Self.ms) ?? 0) },
            "ProvideDiagnosisKeysRemaining": { .uint32(await node.provideRemaining) },
            "QuarantinedRecords": { .uint32(UInt32(clamping: await node.snapshot.storeLosses.quarantined)) },
            "DroppedScans": { .uint64(UInt64(await node.snapshot.storeLosses.droppedScans)) },
            "DroppedSightings": { .uint64(UInt64(await node.snapshot.storeLosses.droppedSightings)) },
            "ClockSync": { .string(await node.snapshot.clockSync) },
            "AdvertisingOnAir": { .boolean(await node.snapshot.radio.advertisingOnAir) },
            "ScanningOnAir": { .boolean(await node.snapshot.radio.scanningOnAir) },
            "RadioFailures": { .uint64(await node.snapshot.radio.failedOperations) },
            "ReportsIgnored": { .uint64(await node.snapshot.radio.reportsIgnored) },
            "ReportsDropped": { .uint64(await node.snapshot.radio.reportsDropped) },
            "Controller": { Self.controller(await node.snapshot).dbusValue },
            "AdvertisingAddress": { .string(await node.snapshot.radio.advertisingAddress?.description ?? "") },
            "CurrentRpi": { .bytes(await node.snapshot.trialRPI?.bytes ?? Data()) },
            "TxPower": { .int16(Int16(clamping: await node.calibration.txPower)) },
            "RssiCorrection": { .int16(Int16(clamping: await node.calibration.rssiCorrection)) },
            "CalibrationConfidence": { .int32(Int32(await node.calibration.confidence.rawValue)) },
            "Node": { .string(node.settings.research.node) },
            "Site": { .string(node.settings.research.site) },
        ]
        return try DBusInterfaceImplementation(GaendInterfaces.exposureNotification, methods: methods, getters: getters)
    }

    /// The Controller property: the configured name, and the facts of its bring-up once there.
    static func controller(_ s: NodeStatusSnapshot) -> GaendController {
        guard let info = s.radio.controllerInfo else { return GaendController(name: s.controller) }
        let v = info.version
        return GaendController(name: s.controller, address: info.address.description, manufacturer: v.companyIdentifier,
                               manufacturerName: CompanyIdentifier.name(v.companyIdentifier),
                               hciVersion: v.hciVersion, hciSubversion: v.hciSubversion,
                               lmpVersion: v.lmpVersion, lmpSubversion: v.lmpSubversion)
    }

    private func matched(token: String, _ result: Result<(matchedKeys: Int, windows: Int), Error>) async {
        switch result {
        case .success(let (matched, windows)):
            logger.info("matching finished", metadata: ["matched.keys": "\(matched)", "windows": "\(windows)"])
            await exposureStateUpdated(token: token, matchedKeys: matched, windows: windows, error: "")
        case .failure(let error):
            let name = (error as? NodeError)?.dbusError.name ?? GaendInterfaces.ErrorName.failed
            logger.error("matching failed", metadata: ["error": "\(error)"])
            await exposureStateUpdated(token: token, matchedKeys: 0, windows: 0, error: name)
        }
    }

    /// A request decoded at the edge; a wrong argument is InvalidArgs naming it.
    static func decode<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as GaendWireError { throw NodeError.invalidArgs("\(e)") }
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
        }
    }

    static func exportError(_ e: CallerIOError) -> NodeError {
        switch e {
        case .timeout: return .timeout("\(e)")
        case .tooLarge: return .limitExceeded("\(e)")
        case .unsupported, .failed: return .writeFailed("\(e)")
        case .cancelled: return .internalFailure("\(e)")
        }
    }

    // MARK: Research1

    private func researchInterface() throws -> DBusInterfaceImplementation {
        let node = self.node
        let methods: [String: DBusMethodHandler] = [
            "ExportSightings": { [self] call in
                let request = try Self.decode { try GaendRequest.ExportSightings(args: call.args) }
                let from = request.from, to = request.to, format = request.format
                guard let fd = request.fd.take() else { throw NodeError.invalidArgs("fd was already taken") }
                let out: CallerDescriptor
                do { out = try CallerDescriptor(taking: fd, what: "the export's descriptor") } catch let e as CallerIOError { throw Self.exportError(e) }
                guard from <= to else { throw NodeError.invalidArgs("from \(from) is after to \(to)") }
                let context = await node.exportContext
                let rows = try await self.withCallerSlot(call) { [timeout = self.ioTimeout] in
                    // Store reads, formatting and the writes into the caller's descriptor run on
                    // a thread of their own: a reader that stops reading stalls only this call.
                    try await transfers.run("gaend.export") { flag in
                        try GaenNode.writeSightings(context, from: Double(from) / 1000, to: Double(to) / 1000, format: format) { data in
                            do { try out.write(data, idleTimeout: timeout, cancel: flag) } catch let e as CallerIOError { throw Self.exportError(e) }
                        }
                    }
                }
                return [.uint32(UInt32(clamping: rows))]
            },
            "AddMarker": { call in
                let r = try Self.decode { try GaendRequest.AddMarker(args: call.args) }
                let id = try await node.addMarker(time: Double(r.time) / 1000, label: r.label, distance: r.distance, note: r.note)
                return [.uint64(UInt64(id))]
            },
            "GetMarkers": { call in
                let r = try Self.decode { try GaendRequest.GetMarkers(args: call.args) }
                let markers = try await node.markers(from: Double(r.from) / 1000, to: Double(r.to) / 1000)
                guard markers.count <= 65_536 else { throw NodeError.limitExceeded("\(markers.count) markers; narrow the range") }
                return [GaendMarker.array(markers.map { id, m in
                    GaendMarker(id: UInt64(id), time: Self.ms(m.time), label: m.label, distance: m.distanceMeters ?? -1, note: m.note)
                })]
            },
            "SetCalibration": { call in
                let r = try Self.decode { try GaendRequest.SetCalibration(args: call.args) }
                try await node.setCalibration(txPower: Int(r.txPower), rssiCorrection: Int(r.rssiCorrection), confidence: Int(r.confidence))
                return []
            },
        ]
        let getters: [String: DBusPropertyGetter] = [
            "TxPower": { .int16(Int16(await node.calibration.txPower)) },
            "RssiCorrection": { .int16(Int16(await node.calibration.rssiCorrection)) },
            "CalibrationConfidence": { .int32(Int32(await node.calibration.confidence.rawValue)) },
            // The labels every export carries, so clients label what they export the same way.
            "Node": { .string(node.settings.research.node) },
            "Site": { .string(node.settings.research.site) },
        ]
        return try DBusInterfaceImplementation(GaendInterfaces.research, methods: methods, getters: getters)
    }

    // MARK: NodeObserver

    public func statusChanged() async {
        try? await service.emitPropertiesChanged(path: GaendBus.objectPath, interface: GaendBus.exposureNotificationInterface,
                                                 ["Enabled", "Status", "AdvertisementCount", "ScanCount", "SightingCount", "LastScanTime",
                                                  "QuarantinedRecords", "DroppedScans", "DroppedSightings", "ClockSync",
                                                  "AdvertisingOnAir", "ScanningOnAir", "RadioFailures", "ReportsIgnored", "ReportsDropped",
                                                  "Controller", "AdvertisingAddress", "CurrentRpi", "TxPower", "RssiCorrection",
                                                  "CalibrationConfidence"])
    }

    public func scanFinished(_ scan: RecordedScan) async {
        guard research else { return }
        let signal = GaendScanFinished(start: Self.ms(scan.start), end: Self.ms(scan.end), sightings: scan.sightings.map {
            GaendSighting(time: Self.ms($0.time), rpi: $0.rpi.bytes, aem: $0.aem.bytes, rssi: Int16($0.rssi), address: $0.address?.description)
        })
        do {
            // ScanRecorded (with addresses) first, then ScanFinished for older clients: a client
            // that hears both recognises the second as the same scan.
            try await service.emit(path: GaendBus.objectPath, interface: GaendBus.researchInterface, signal: "ScanRecorded", signal.recordedArgs)
            try await service.emit(path: GaendBus.objectPath, interface: GaendBus.researchInterface, signal: "ScanFinished", signal.args)
        } catch { logger.debug("ScanFinished not sent", metadata: ["error": "\(error)"]) }
    }

    public func exposureStateUpdated(token: String, matchedKeys: Int, windows: Int, error: String) async {
        let update = GaendExposureStateUpdate(token: token, matchedKeys: UInt32(clamping: matchedKeys), windows: UInt32(clamping: windows), error: error)
        do {
            try await service.emit(path: GaendBus.objectPath, interface: GaendBus.exposureNotificationInterface,
                                   signal: "ExposureStateUpdated", update.args)
        } catch { logger.warning("ExposureStateUpdated not sent", metadata: ["error": "\(error)"]) }
    }

    // MARK: Conversions

    static func wire(_ w: ExposureWindow) -> GaendExposureWindow {
        GaendExposureWindow(dateMillisSinceEpoch: w.dateMillisSinceEpoch, reportType: Int32(w.reportType), infectiousness: Int32(w.infectiousness),
                            calibrationConfidence: Int32(w.calibrationConfidence),
                            scanInstances: w.scanInstances.map {
                                GaendScanInstance(typicalAttenuationDb: Int32($0.typicalAttenuationDb), minAttenuationDb: Int32($0.minAttenuationDb),
                                                  secondsSinceLastScan: Int32($0.secondsSinceLastScan))
                            })
    }

    static func wire(_ d: ExposureSummaryData) -> GaendSummaryData {
        GaendSummaryData(maximumScore: d.maximumScore, scoreSum: d.scoreSum, weightedDurationSum: d.weightedDurationSum)
    }

    static func ints(_ v: DBusValue?, _ name: String) throws -> [Int]? {
        guard let v else { return nil }
        guard let a = v.arrayValue, let out = Optional(a.compactMap { $0.integerValue.map(Int.init) }), out.count == a.count else {
            throw NodeError.invalidArgs("\(name): expected an array of integers (ai), got \(v.type.signature)")
        }
        return out
    }

    static func doubles(_ v: DBusValue?, _ name: String) throws -> [Double]? {
        guard let v else { return nil }
        guard let a = v.arrayValue, let out = Optional(a.compactMap(\.doubleValue)), out.count == a.count else {
            throw NodeError.invalidArgs("\(name): expected an array of doubles (ad), got \(v.type.signature)")
        }
        return out
    }

    /// `a{id}` weights into an array indexed by code (missing: 1.0).
    static func weights(_ v: DBusValue?, _ name: String, count: Int, zeroFirst: Bool) throws -> [Double] {
        var out = [Double](repeating: 1, count: count)
        if zeroFirst { out[0] = 0 }
        guard let v else { return out }
        guard case .dict(_, _, let entries) = v else { throw NodeError.invalidArgs("\(name): expected a{id}, got \(v.type.signature)") }
        for e in entries {
            guard let k = e.key.integerValue, let d = (e.value.variantValue ?? e.value).doubleValue, (0..<count).contains(Int(k)) else {
                throw NodeError.invalidArgs("\(name): expected a{id} with keys 0...\(count - 1)")
            }
            out[Int(k)] = d
        }
        return out
    }

    static func check(_ d: [String: DBusValue], known: Set<String>) throws {
        if let bad = d.keys.sorted().first(where: { !known.contains($0) }) { throw NodeError.invalidArgs("unknown config key '\(bad)'") }
    }

    static func summariesConfig(_ d: [String: DBusValue]) throws -> DailySummariesConfig {
        try check(d, known: ["attenuation_bucket_thresholds_db", "attenuation_bucket_weights", "infectiousness_weights",
                             "report_type_weights", "days_since_exposure_threshold", "minimum_window_score"])
        guard let t = try ints(d["attenuation_bucket_thresholds_db"], "attenuation_bucket_thresholds_db"), t.count == 3 else {
            throw NodeError.invalidArgs("attenuation_bucket_thresholds_db: 3 thresholds required")
        }
        guard let w = try doubles(d["attenuation_bucket_weights"], "attenuation_bucket_weights"), w.count == 4 else {
            throw NodeError.invalidArgs("attenuation_bucket_weights: 4 weights required")
        }
        let rt = try weights(d["report_type_weights"], "report_type_weights", count: 6, zeroFirst: true).enumerated().map { $0.offset == 5 ? 0 : $0.element }
        let inf = try weights(d["infectiousness_weights"], "infectiousness_weights", count: 3, zeroFirst: true)
        let days = try d["days_since_exposure_threshold"].map { v -> Int in
            guard let i = v.integerValue else { throw NodeError.invalidArgs("days_since_exposure_threshold: expected i") }
            return Int(i)
        } ?? 0
        let minimum = try d["minimum_window_score"].map { v -> Double in
            guard let x = v.doubleValue else { throw NodeError.invalidArgs("minimum_window_score: expected d") }
            return x
        } ?? 0
        let c = DailySummariesConfig(attenuationBucketThresholdDb: t, attenuationBucketWeights: w, reportTypeWeights: rt,
                                     infectiousnessWeights: inf, minimumWindowScore: minimum, daysSinceExposureThreshold: days)
        do { try c.validate() } catch { throw NodeError.invalidArgs("config: \(error)") }
        return c
    }

    static func v1Config(_ d: [String: DBusValue]) throws -> GAENv1Configuration {
        try check(d, known: ["attenuation_duration_thresholds", "minimum_risk_score", "attenuation_scores",
                             "days_since_last_exposure_scores", "duration_scores", "transmission_risk_scores"])
        let ones = [Int](repeating: 1, count: 8)
        let minimum = try d["minimum_risk_score"].map { v -> Int in
            guard let i = v.integerValue else { throw NodeError.invalidArgs("minimum_risk_score: expected i") }
            return Int(i)
        } ?? 0
        let c = GAENv1Configuration(
            minimumRiskScore: minimum,
            attenuationLevelValues: try ints(d["attenuation_scores"], "attenuation_scores") ?? ones,
            daysSinceLastExposureLevelValues: try ints(d["days_since_last_exposure_scores"], "days_since_last_exposure_scores") ?? ones,
            durationLevelValues: try ints(d["duration_scores"], "duration_scores") ?? ones,
            transmissionRiskLevelValues: try ints(d["transmission_risk_scores"], "transmission_risk_scores") ?? ones,
            attenuationDurationThresholds: try ints(d["attenuation_duration_thresholds"], "attenuation_duration_thresholds") ?? [50, 70])
        do { try c.validate() } catch { throw NodeError.invalidArgs("config: \(error)") }
        return c
    }

    static func mapping(_ d: [String: DBusValue]) throws -> DiagnosisKeysDataMapping {
        try check(d, known: ["days_since_onset_to_infectiousness", "report_type_when_missing", "infectiousness_when_days_since_onset_missing"])
        var table: [Int: Infectiousness]?
        if let v = d["days_since_onset_to_infectiousness"] {
            guard case .dict(_, _, let entries) = v else { throw NodeError.invalidArgs("days_since_onset_to_infectiousness: expected a{ii}") }
            var t: [Int: Infectiousness] = [:]
            for e in entries {
                guard let k = e.key.integerValue, let i = (e.value.variantValue ?? e.value).integerValue, let inf = Infectiousness(rawValue: Int(i)) else {
                    throw NodeError.invalidArgs("days_since_onset_to_infectiousness: expected a{ii} with infectiousness 0...2")
                }
                t[Int(k)] = inf
            }
            table = t
        }
        let rt = try d["report_type_when_missing"].map { v -> ReportType in
            guard let i = v.integerValue, (1...4).contains(i), let r = ReportType(rawValue: Int(i)) else {
                throw NodeError.invalidArgs("report_type_when_missing: expected i in 1...4")
            }
            return r
        } ?? .confirmedTest
        let inf = try d["infectiousness_when_days_since_onset_missing"].map { v -> Infectiousness in
            guard let i = v.integerValue, let r = Infectiousness(rawValue: Int(i)) else {
                throw NodeError.invalidArgs("infectiousness_when_days_since_onset_missing: expected i in 0...2")
            }
            return r
        } ?? .standard
        do {
            return try DiagnosisKeysDataMapping(daysSinceOnsetToInfectiousness: table, reportTypeWhenMissing: rt,
                                                infectiousnessWhenDaysSinceOnsetMissing: inf)
        } catch { throw NodeError.invalidArgs("mapping: \(error)") }
    }
}
