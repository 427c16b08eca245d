#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Exposure windows from matched sightings, with the semantics of the framework (v2), as the
/// Android API documents them and google/exposure-notifications-internals implements them
/// (KeyExposureEvaluator.findExposureWindows, ExposureWindowUtils, ExposureMatchingTracer,
/// SightingRecordWithMetadata, ContactTracingFeature; cited per rule below).

/// Why a data mapping file or a windows computation was rejected.
public enum ExposureWindowError: Error, Equatable, CustomStringConvertible {
    case mapping(String)
    case sightingWithoutScan(time: Double)

    public var description: String {
        switch self {
        case .mapping(let reason): return "diagnosis keys data mapping: \(reason)"
        case .sightingWithoutScan(let t):
            return "matched sighting at \(t) has no scan_start/scan_end: exposure windows need the scan of every sighting"
        }
    }
}

/// The app's DiagnosisKeysDataMapping (Android: setDiagnosisKeysDataMapping).
public struct DiagnosisKeysDataMapping: Sendable, Equatable {
    /// Days since onset (-14...14) to infectiousness. When a mapping is set, days it does not
    /// list map to NONE (reference: DiagnosisKeysDataMappingBuilder fills the 29 entries with
    /// NONE); nil means no mapping was set, so every key gets
    /// `infectiousnessWhenDaysSinceOnsetMissing` (reference: getInfectiousness falls back to
    /// the default when the list does not have 29 entries).
    public var daysSinceOnsetToInfectiousness: [Int: Infectiousness]?
    /// Used for keys without a report type (or UNKNOWN). Never UNKNOWN itself (API check).
    public var reportTypeWhenMissing: ReportType
    /// Used for keys without days since onset, or with one outside -14...14.
    public var infectiousnessWhenDaysSinceOnsetMissing: Infectiousness

    /// Maximum |days since onset| the mapping covers (reference: MAXIMUM_OFFSET_OF_DAYS_SINCE_ONSET).
    public static let maximumOffsetOfDaysSinceOnset = 14

    public init(daysSinceOnsetToInfectiousness: [Int: Infectiousness]? = nil, reportTypeWhenMissing: ReportType = .confirmedTest,
                infectiousnessWhenDaysSinceOnsetMissing: Infectiousness = .standard) throws {
        if let map = daysSinceOnsetToInfectiousness,
           let bad = map.keys.sorted().first(where: { abs($0) > Self.maximumOffsetOfDaysSinceOnset }) {
            throw ExposureWindowError.mapping("daysSinceOnsetToInfectiousness: day \(bad) outside -14...14")
        }
        guard reportTypeWhenMissing != .unknown else {
            throw ExposureWindowError.mapping("reportTypeWhenMissing must not be UNKNOWN (0)")
        }
        self.daysSinceOnsetToInfectiousness = daysSinceOnsetToInfectiousness
        self.reportTypeWhenMissing = reportTypeWhenMissing
        self.infectiousnessWhenDaysSinceOnsetMissing = infectiousnessWhenDaysSinceOnsetMissing
    }

    /// Without a mapping file: report type CONFIRMED_TEST when missing (the API's documented
    /// default for windows), infectiousness STANDARD for every key.
    public static let `default` = try! DiagnosisKeysDataMapping()

    /// Reference: ExposureWindowUtils.getInfectiousness.
    public func infectiousness(daysSinceOnsetOfSymptoms dso: Int32?) -> Infectiousness {
        guard let dso, abs(Int(dso)) <= Self.maximumOffsetOfDaysSinceOnset, let map = daysSinceOnsetToInfectiousness else {
            return infectiousnessWhenDaysSinceOnsetMissing
        }
        return map[Int(dso)] ?? .none
    }

    /// Reference: ExposureWindowUtils.getReportType (missing or UNKNOWN -> the mapping's value).
    public func reportType(_ t: ReportType?) -> ReportType {
        guard let t, t != .unknown else { return reportTypeWhenMissing }
        return t
    }

    /// Parses the mapping file: `{"daysSinceOnsetToInfectiousness": {"-14": 0, ..., "14": 2},
    /// "reportTypeWhenMissing": 1, "infectiousnessWhenDaysSinceOnsetMissing": 1}`. Values are
    /// the API's numbers or names (NONE/STANDARD/HIGH, CONFIRMED_TEST...). Unknown fields are
    /// rejected so that a misspelt name does not silently fall back to a default.
    public init(json data: Data) throws {
        let object: JSONValue
        do { object = try JSONValue.parse(data) } catch {
            throw ExposureWindowError.mapping("not JSON (\(error))")
        }
        guard case let .object(o) = object else { throw ExposureWindowError.mapping("expected a JSON object") }
        let known: Set = ["daysSinceOnsetToInfectiousness", "reportTypeWhenMissing", "infectiousnessWhenDaysSinceOnsetMissing"]
        if let unknown = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw ExposureWindowError.mapping("unknown field '\(unknown)' (expected \(known.sorted().joined(separator: ", ")))")
        }
        func infectiousness(_ v: JSONValue, _ at: String) throws -> Infectiousness {
            let names: [String: Infectiousness] = ["NONE": .none, "STANDARD": .standard, "HIGH": .high]
            if case let .string(s) = v, let i = names[s.uppercased()] { return i }
            if let n = v.integer, let i = Infectiousness(rawValue: n) { return i }
            throw ExposureWindowError.mapping("\(at): expected 0, 1, 2 or NONE, STANDARD, HIGH, got \(v)")
        }
        var map: [Int: Infectiousness]? = nil
        if let m = o["daysSinceOnsetToInfectiousness"] {
            guard case let .object(dict) = m else {
                throw ExposureWindowError.mapping("daysSinceOnsetToInfectiousness: expected an object of day -> infectiousness")
            }
            var out: [Int: Infectiousness] = [:]
            for (k, v) in dict {
                guard let day = Int(k.trimmingWhitespaces()) else {
                    throw ExposureWindowError.mapping("daysSinceOnsetToInfectiousness: key '\(k)' is not a day number")
                }
                out[day] = try infectiousness(v, "daysSinceOnsetToInfectiousness[\(k)]")
            }
            map = out
        }
        var reportType = ReportType.confirmedTest
        if let r = o["reportTypeWhenMissing"] {
            let names: [String: ReportType] = ["CONFIRMED_TEST": .confirmedTest, "CONFIRMED_CLINICAL_DIAGNOSIS": .confirmedClinicalDiagnosis,
                                               "SELF_REPORT": .selfReport, "RECURSIVE": .recursive, "REVOKED": .revoked, "UNKNOWN": .unknown]
            if case let .string(s) = r, let t = names[s.uppercased()] { reportType = t }
            else if let n = r.integer, let t = ReportType(rawValue: n) { reportType = t }
            else { throw ExposureWindowError.mapping("reportTypeWhenMissing: expected 1...5 or a report type name, got \(r)") }
        }
        var whenMissing = Infectiousness.standard
        if let v = o["infectiousnessWhenDaysSinceOnsetMissing"] {
            whenMissing = try infectiousness(v, "infectiousnessWhenDaysSinceOnsetMissing")
        }
        try self.init(daysSinceOnsetToInfectiousness: map, reportTypeWhenMissing: reportType,
                      infectiousnessWhenDaysSinceOnsetMissing: whenMissing)
    }
}

/// Builds exposure windows from matches and the node's scans.
public enum ExposureWindows {
    /// A window holds scan instances starting less than 30 minutes after its first one
    /// (reference: maxExposureWindowDurationMinutes = 30, shouldStartNewExposureWindow).
    public static let maximumWindowSeconds: Double = 30 * 60
    /// secondsSinceLastScan is capped at 5 minutes (reference: maxMinutesSinceLastScan = 5).
    public static let maximumSecondsSinceLastScan = 300
    /// ...and is 2 minutes when no earlier scan is known (reference: defaultMinutesSinceLastScan).
    public static let defaultSecondsSinceLastScan = 120
    /// Sightings of one RPI more than 20 minutes after its first sighting are dropped as
    /// suspected replays (reference: getValidSightingsForRpi, 2 x idRollingPeriodMinutes).
    public static let replaySeconds: Double = 20 * 60

    /// Counters of what was left out, for the caller to report.
    public struct Statistics: Sendable, Equatable {
        public var implausibleTxPower = 0
        public var suspectedReplays = 0
        public var revokedKeys = 0
        public var recursiveKeys = 0
        public var noInfectiousnessKeys = 0
        public init() {}
    }

    /// Windows sorted by date, then by the time of their first scan instance. `scans` are the
    /// log's scans (what `Sighting.scanIndex` points into), including scans that saw nothing.
    public static func compute(matches: [Match], scans: [Scan], mapping: DiagnosisKeysDataMapping = .default)
        throws -> (windows: [ExposureWindow], statistics: Statistics) {
        var stats = Statistics()
        // Per key (a TEK may appear in `keys` and again in `revised_keys`: the later wins).
        var keyOrder: [TemporaryExposureKey] = []
        var keyInfo: [TemporaryExposureKey: DiagnosisKey] = [:]
        var byKey: [TemporaryExposureKey: [Match]] = [:]
        for m in matches {
            if keyInfo[m.key.key] == nil { keyOrder.append(m.key.key) }
            keyInfo[m.key.key] = m.key
            // The AEM is not authenticated: implausible TX power is not used
            // (reference: ExposureMatchingTracer drops it before building windows).
            guard m.txPowerPlausible else { stats.implausibleTxPower += 1; continue }
            byKey[m.key.key, default: []].append(m)
        }
        // Each scan's secondsSinceLastScan: time since the same node's previous scan, whether
        // or not that scan saw anything.
        var sinceLast = [Int](repeating: defaultSecondsSinceLastScan, count: scans.count)
        let scanOrder = scans.indices.sorted { scans[$0] < scans[$1] }
        for (n, i) in scanOrder.enumerated() where n > 0 {
            let p = scanOrder[n - 1]
            guard scans[p].node == scans[i].node else { continue }
            let gap = Int((scans[i].start - scans[p].start).rounded())
            sinceLast[i] = min(maximumSecondsSinceLastScan, max(0, gap))
        }

        var windows: [(first: Double, window: ExposureWindow)] = []
        for tek in keyOrder {
            guard let key = keyInfo[tek], let keyMatches = byKey[tek] else { continue }
            // Report type and infectiousness (reference: KeyExposureEvaluator via
            // ExposureWindowUtils; REVOKED keys yield no exposure, RECURSIVE is not enabled,
            // and infectiousness NONE is dropped, as the DiagnosisKeysDataMapping docs say).
            let reportType = mapping.reportType(key.reportType)
            if reportType == .revoked { stats.revokedKeys += 1; continue }
            if reportType == .recursive { stats.recursiveKeys += 1; continue }
            let infectiousness = mapping.infectiousness(daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms)
            if infectiousness == .none { stats.noInfectiousnessKeys += 1; continue }

            // Drop suspected replays per RPI, then group by (node, scan, RPI): one scan instance each.
            var sorted = keyMatches.sorted { ($0.sighting.time, $0.sighting.rpiLow) < ($1.sighting.time, $1.sighting.rpiLow) }
            var firstSeen: [[UInt64]: Double] = [:]
            sorted = sorted.filter { m in
                let id = [m.sighting.rpiLow, m.sighting.rpiHigh]
                let first = firstSeen[id] ?? m.sighting.time
                firstSeen[id] = first
                if m.sighting.time - first > replaySeconds { stats.suspectedReplays += 1; return false }
                return true
            }
            struct Instance { var scan: Int; var first: Double; var attenuations: [Int]; var metadata: BluetoothMetadata }
            var instances: [Instance] = []
            var instanceOf: [[UInt64]: Int] = [:]
            for m in sorted {
                guard let scan = m.sighting.scanIndex.map(Int.init), scan < scans.count else {
                    throw ExposureWindowError.sightingWithoutScan(time: m.sighting.time)
                }
                // Attenuation = TX power - (RSSI + correction), floored at 0 (reference:
                // SightingRecordWithMetadata.attenuationValue).
                let attenuation = max(0, m.txPower - (Int(m.sighting.rssi) + Int(m.sighting.rssiCorrection)))
                let id: [UInt64] = [UInt64(scan), m.sighting.rpiLow, m.sighting.rpiHigh]
                if let i = instanceOf[id] {
                    instances[i].attenuations.append(attenuation)
                } else {
                    instanceOf[id] = instances.count
                    instances.append(Instance(scan: scan, first: m.sighting.time, attenuations: [attenuation], metadata: m.metadata))
                }
            }
            instances.sort { ($0.first, $0.scan) < ($1.first, $1.scan) }
            // Windows per node: a node's scans are its own timeline.
            var nodes: [String?] = []
            for i in instances where !nodes.contains(scans[i.scan].node) { nodes.append(scans[i.scan].node) }
            for node in nodes {
                var current: (first: Double, window: ExposureWindow)? = nil
                for inst in instances where scans[inst.scan].node == node {
                    if let c = current, inst.first - c.first < maximumWindowSeconds {
                        current!.window.scanInstances.append(scanInstance(inst.attenuations, sinceLast[inst.scan]))
                        continue
                    }
                    if let c = current { windows.append(c) }
                    // Date: the UTC day of the window's first sighting; calibration confidence
                    // from its metadata (v1.0 has none: LOWEST, the API's default).
                    let day = UTCDay(unixSeconds: inst.first)
                    current = (inst.first, ExposureWindow(
                        dateMillisSinceEpoch: day.millisSinceEpoch, reportType: reportType.rawValue,
                        infectiousness: infectiousness.rawValue,
                        calibrationConfidence: (inst.metadata.calibrationConfidence ?? .lowest).rawValue,
                        scanInstances: [scanInstance(inst.attenuations, sinceLast[inst.scan])],
                        transmissionRiskLevel: key.transmissionRiskLevel.map(Int.init)))
                }
                if let c = current { windows.append(c) }
            }
        }
        windows.sort { ($0.window.dateMillisSinceEpoch, $0.first) < ($1.window.dateMillisSinceEpoch, $1.first) }
        return (windows.map(\.window), stats)
    }

    /// typicalAttenuationDb is the mean rounded half up, as Java's Math.round (reference:
    /// ExposureWindowUtils.getTypicalAttenuation); minAttenuationDb the minimum.
    static func scanInstance(_ attenuations: [Int], _ secondsSinceLastScan: Int) -> ScanInstance {
        let mean = Double(attenuations.reduce(0, +)) / Double(attenuations.count)
        return ScanInstance(typicalAttenuationDb: Int((mean + 0.5).rounded(.down)), minAttenuationDb: attenuations.min() ?? 0,
                            secondsSinceLastScan: secondsSinceLastScan)
    }
}
