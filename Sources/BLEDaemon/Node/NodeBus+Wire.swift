import DBusCore
import ENProtocol
import GaendAPI
import HCIHost
import HCIProtocol
import NodeConfig
import GaenStore

/// The edge's conversions between the node's domain values and gaend's wire types
/// (GaendAPI), and the one mapping of the node's errors to D-Bus error names. The typed
/// decoders have already checked each key's type; here are the domain's rules (required
/// keys, counts, ranges).
extension NodeBus {
    // MARK: Errors

    static func errorName(_ e: NodeError) -> String {
        typealias E = GaendInterfaces.ErrorName
        switch e {
        case .notAuthorized: return E.notAuthorized
        case .rateLimited: return E.rateLimited
        case .invalidKeyFile: return E.invalidKeyFile
        case .untrustedKeyFile: return E.untrustedKeyFile
        case .limitExceeded: return E.limitExceeded
        case .busy: return E.busy
        case .controllerMissing: return E.controllerMissing
        case .clockUnsynchronised: return E.clockUnsynchronised
        case .storage: return E.storageError
        case .writeFailed: return E.writeFailed
        case .timeout: return E.timeout
        case .invalidArgs: return E.invalidArgs
        case .internalFailure: return E.failed
        }
    }

    /// What a handler's failure becomes on the wire: a node error its D-Bus name; anything
    /// else as it is (the object server replies `Failed` for what it does not know).
    @Sendable static func wireError(_ error: any Error) -> any Error {
        guard let e = error as? NodeError else { return error }
        return DBusNamedError(name: errorName(e), message: e.message)
    }

    // MARK: Status

    static func wire(_ c: NodeCondition) -> String {
        switch c {
        case .active: GaendStatus.active
        case .inactive: GaendStatus.inactive
        case .clockUnsynchronised: GaendStatus.clockUnsynchronised
        case .clockSuspect: GaendStatus.clockSuspect
        case .controllerMissing: GaendStatus.controllerMissing
        case .controllerError: GaendStatus.controllerError
        case .advertisingOffAir: GaendStatus.advertisingOffAir
        case .scanningOffAir: GaendStatus.scanningOffAir
        case .scanningSilent: GaendStatus.scanningSilent
        case .storageError: GaendStatus.storageError
        case .storageFull: GaendStatus.storageFull
        }
    }

    // MARK: Properties

    /// ExposureNotification1's properties from one reading of the node.
    static func exposureProperties(_ s: NodeStatusSnapshot, settings: GaendSettings) -> GaendExposureProperties {
        let c = s.calibration
        var p = GaendExposureProperties()
        p.version = version
        p.enabled = s.enabled
        p.status = s.status.map(wire)
        p.trialMode = settings.trial
        p.advertisementCount = s.advertisements
        p.scanCount = s.scans
        p.sightingCount = s.sightings
        p.lastScanTime = s.lastScanEnd.map(ms) ?? 0
        p.provideDiagnosisKeysRemaining = s.provideRemaining
        p.quarantinedRecords = UInt32(clamping: s.storeLosses.quarantined)
        p.droppedScans = UInt64(s.storeLosses.droppedScans)
        p.droppedSightings = UInt64(s.storeLosses.droppedSightings)
        p.clockSync = s.clockSync
        p.advertisingOnAir = s.radio.advertisingOnAir
        p.scanningOnAir = s.radio.scanningOnAir
        p.radioFailures = s.radio.failedOperations
        p.reportsIgnored = s.radio.reportsIgnored
        p.reportsDropped = s.radio.reportsDropped
        p.controller = controller(s)
        p.advertisingAddress = s.radio.advertisingAddress?.description
        p.currentRPI = s.trialRPI?.bytes
        p.txPower = Int16(clamping: c.txPower)
        p.rssiCorrection = Int16(clamping: c.rssiCorrection)
        p.calibrationConfidence = Int32(c.confidence.rawValue)
        p.node = settings.research.node
        p.site = settings.research.site
        p.matching = s.matching
        p.rotationCount = s.radio.rotations
        p.failedRotations = s.radio.failedRotations
        p.secondsOnAir = UInt64(s.secondsOnAir.rounded(.down))
        p.secondsOffAir = UInt64(s.secondsOffAir.rounded(.down))
        p.watchdogFeeds = s.counters.watchdogFeeds
        p.matchingRuns = s.counters.matchingRuns
        p.matchingTime = UInt64((s.counters.matchingSeconds * 1000).rounded())
        p.keyFiles = UInt32(clamping: s.counters.keyFiles ?? 0)
        p.exposureWindows = UInt32(clamping: s.counters.windows ?? 0)
        p.storeBytes = UInt64(clamping: s.storeBytes)
        return p
    }

    // MARK: Replies

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

    static func wire(_ s: DailySummary) -> GaendDailySummary {
        var per: [Int32: GaendSummaryData] = [:]
        for (name, d) in s.summaryDataPerReportType {
            let code = ReportTypeCode.names.firstIndex(of: name) ?? Int(name) ?? 0
            per[Int32(code)] = wire(d)
        }
        return GaendDailySummary(daysSinceEpoch: UInt32(clamping: s.daysSinceEpoch), summaryData: wire(s.summaryData), reportTypeSummaries: per)
    }

    static func wire(_ m: DiagnosisKeysDataMapping) -> GaendDataMapping {
        GaendDataMapping(
            daysSinceOnsetToInfectiousness: m.daysSinceOnsetToInfectiousness.map { table in
                Dictionary(uniqueKeysWithValues: table.map { (Int32($0.key), Int32($0.value.rawValue)) })
            },
            reportTypeWhenMissing: Int32(m.reportTypeWhenMissing.rawValue),
            infectiousnessWhenDaysSinceOnsetMissing: Int32(m.infectiousnessWhenDaysSinceOnsetMissing.rawValue))
    }

    // MARK: Requests

    /// `a{id}` weights into an array indexed by code (missing: 1.0).
    static func weights(_ table: [Int32: Double]?, _ name: String, count: Int, zeroFirst: Bool) throws -> [Double] {
        var out = [Double](repeating: 1, count: count)
        if zeroFirst { out[0] = 0 }
        for (k, d) in table ?? [:] {
            guard (0..<count).contains(Int(k)) else { throw NodeError.invalidArgs("\(name): expected a{id} with keys 0...\(count - 1), got key \(k)") }
            out[Int(k)] = d
        }
        return out
    }

    static func domain(_ w: GaendDailySummariesConfig) throws -> DailySummariesConfig {
        guard let t = w.attenuationBucketThresholdsDb, t.count == 3 else {
            throw NodeError.invalidArgs("attenuation_bucket_thresholds_db: 3 thresholds required")
        }
        guard let weights = w.attenuationBucketWeights, weights.count == 4 else {
            throw NodeError.invalidArgs("attenuation_bucket_weights: 4 weights required")
        }
        let rt = try Self.weights(w.reportTypeWeights, "report_type_weights", count: 6, zeroFirst: true)
            .enumerated().map { $0.offset == 5 ? 0 : $0.element }
        let inf = try Self.weights(w.infectiousnessWeights, "infectiousness_weights", count: 3, zeroFirst: true)
        let c = DailySummariesConfig(attenuationBucketThresholdDb: t.map(Int.init), attenuationBucketWeights: weights, reportTypeWeights: rt,
                                     infectiousnessWeights: inf, minimumWindowScore: w.minimumWindowScore ?? 0,
                                     daysSinceExposureThreshold: Int(w.daysSinceExposureThreshold ?? 0))
        do { try c.validate() } catch { throw NodeError.invalidArgs("config: \(error)") }
        return c
    }

    static func domain(_ w: GaendExposureConfigurationV1) throws -> GAENv1Configuration {
        let ones = [Int](repeating: 1, count: 8)
        let c = GAENv1Configuration(
            minimumRiskScore: Int(w.minimumRiskScore ?? 0),
            attenuationLevelValues: w.attenuationScores?.map(Int.init) ?? ones,
            daysSinceLastExposureLevelValues: w.daysSinceLastExposureScores?.map(Int.init) ?? ones,
            durationLevelValues: w.durationScores?.map(Int.init) ?? ones,
            transmissionRiskLevelValues: w.transmissionRiskScores?.map(Int.init) ?? ones,
            attenuationDurationThresholds: w.attenuationDurationThresholds?.map(Int.init) ?? [50, 70])
        do { try c.validate() } catch { throw NodeError.invalidArgs("config: \(error)") }
        return c
    }

    static func domain(_ w: GaendDataMapping) throws -> DiagnosisKeysDataMapping {
        var table: [Int: Infectiousness]?
        if let wire = w.daysSinceOnsetToInfectiousness {
            var t: [Int: Infectiousness] = [:]
            for (k, i) in wire {
                guard let inf = Infectiousness(rawValue: Int(i)) else {
                    throw NodeError.invalidArgs("days_since_onset_to_infectiousness: expected a{ii} with infectiousness 0...2, got \(i)")
                }
                t[Int(k)] = inf
            }
            table = t
        }
        let rt = try w.reportTypeWhenMissing.map { i -> ReportType in
            guard (1...4).contains(i), let r = ReportType(rawValue: Int(i)) else {
                throw NodeError.invalidArgs("report_type_when_missing: expected i in 1...4, got \(i)")
            }
            return r
        } ?? .confirmedTest
        let inf = try w.infectiousnessWhenDaysSinceOnsetMissing.map { i -> Infectiousness in
            guard let r = Infectiousness(rawValue: Int(i)) else {
                throw NodeError.invalidArgs("infectiousness_when_days_since_onset_missing: expected i in 0...2, got \(i)")
            }
            return r
        } ?? .standard
        do {
            return try DiagnosisKeysDataMapping(daysSinceOnsetToInfectiousness: table, reportTypeWhenMissing: rt,
                                                infectiousnessWhenDaysSinceOnsetMissing: inf)
        } catch { throw NodeError.invalidArgs("mapping: \(error)") }
    }
}
