import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport

/// The node's small persistent settings that D-Bus calls change: enabled, calibration, the
/// diagnosis-keys data mapping and the rate-limit counters. None is secret (no keys, no
/// sightings), so a JSON file beside the store is enough; writes replace it atomically.
struct NodeState: Codable, Equatable, Sendable {
    var enabled = true
    /// SetCalibration's values; they hold over the config's calibration only while the config
    /// still has the calibration it had when they were set (`calibrationBasis`).
    var txPower: Int?
    var rssiCorrection: Int?
    var calibrationConfidence: Int?
    var calibrationBasis: CalibrationBasis?
    var mapping: MappingState?
    /// Rate limits: the UTC day of the counted ProvideDiagnosisKeys calls, and their number.
    var provideDay: Int32?
    var provideCalls = 0
    /// When SetDiagnosisKeysDataMapping last changed the mapping (Unix seconds, node clock).
    var mappingChangedAt: Double?

    /// The config's calibration when SetCalibration was called.
    struct CalibrationBasis: Codable, Equatable, Sendable {
        var txPower: Int
        var rssiCorrection: Int
        var calibrationConfidence: Int

        init(_ c: CalibrationSettings) {
            txPower = c.txPower; rssiCorrection = c.rssiCorrection; calibrationConfidence = c.calibrationConfidence.rawValue
        }
    }

    var hasCalibrationOverride: Bool { txPower != nil || rssiCorrection != nil || calibrationConfidence != nil }

    /// The precedence rule (docs/trial.md, "Which calibration applies"): the newer of the two
    /// wins. SetCalibration overrides the config, across restarts, until the config's
    /// calibration changes (e.g. `gaenctl calibrate --config`); from then on the config applies
    /// and the override is dropped. Returns true when it dropped one.
    mutating func reconcileCalibration(with config: CalibrationSettings) -> Bool {
        guard hasCalibrationOverride, calibrationBasis != CalibrationBasis(config) else { return false }
        txPower = nil; rssiCorrection = nil; calibrationConfidence = nil; calibrationBasis = nil
        return true
    }

    struct MappingState: Codable, Equatable, Sendable {
        var daysSinceOnsetToInfectiousness: [String: Int]?
        var reportTypeWhenMissing: Int
        var infectiousnessWhenDaysSinceOnsetMissing: Int

        init(_ m: DiagnosisKeysDataMapping) {
            daysSinceOnsetToInfectiousness = m.daysSinceOnsetToInfectiousness.map {
                Dictionary(uniqueKeysWithValues: $0.map { (String($0.key), $0.value.rawValue) })
            }
            reportTypeWhenMissing = m.reportTypeWhenMissing.rawValue
            infectiousnessWhenDaysSinceOnsetMissing = m.infectiousnessWhenDaysSinceOnsetMissing.rawValue
        }

        func mapping() throws -> DiagnosisKeysDataMapping {
            var table: [Int: Infectiousness]?
            if let d = daysSinceOnsetToInfectiousness {
                var t: [Int: Infectiousness] = [:]
                for (k, v) in d {
                    guard let day = Int(k), let inf = Infectiousness(rawValue: v) else {
                        throw NodeError.internalFailure("node state: bad mapping entry \(k): \(v)")
                    }
                    t[day] = inf
                }
                table = t
            }
            guard let rt = ReportType(rawValue: reportTypeWhenMissing),
                  let inf = Infectiousness(rawValue: infectiousnessWhenDaysSinceOnsetMissing) else {
                throw NodeError.internalFailure("node state: bad mapping defaults")
            }
            return try DiagnosisKeysDataMapping(daysSinceOnsetToInfectiousness: table, reportTypeWhenMissing: rt,
                                                infectiousnessWhenDaysSinceOnsetMissing: inf)
        }
    }

    static func load(path: String) throws -> NodeState {
        guard FileManager.default.fileExists(atPath: path) else { return NodeState() }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw NodeError.internalFailure("cannot read \(BLEDaemon.fileErrorText(error))")
        }
        do { return try JSONDecoder().decode(NodeState.self, from: data) } catch {
            throw NodeError.internalFailure("\(path) is not a valid node state file: \(error)")
        }
    }

    func save(path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// The node state's file, written on a thread of its own (never on the node actor, whose
/// executor the radio's path shares). Saves land in the order the node made them: each takes a
/// ticket on the actor, before it awaits, and a save whose ticket is older than the one
/// written is skipped (the later state already holds its change).
final class NodeStateFile: @unchecked Sendable {
    let path: String
    private let lock = Lock()
    private var issued: UInt64 = 0
    private var written: UInt64 = 0

    init(path: String) { self.path = path }

    func ticket() -> UInt64 { lock.withLock { issued += 1; return issued } }

    func save(_ state: NodeState, ticket: UInt64) async throws {
        try await OwnThread.run("gaend.state") { [self] _ in
            // Held while writing: one save at a time, the newest wins.
            try lock.withLock {
                guard ticket > written else { return }
                try state.save(path: path)
                written = ticket
            }
        }
    }
}
