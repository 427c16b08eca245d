import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NodeConfig
import PlatformSupport
import Synchronization

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
        let data = try encoder.encode(self)
        do throws(SystemCallError) { try AtomicFile.write(data, to: path, mode: 0o644) } catch {
            throw SaveFailure(description: "\(path): \(error.reason)")
        }
    }

    /// A failed save as "path: reason", as `BLEDaemon.fileErrorText` words a read's failure.
    struct SaveFailure: Error, CustomStringConvertible { let description: String }
}

/// The one owner of the node's persistent state (`NodeState`): every part of the node that
/// changes it (Start/Stop, SetCalibration, the mapping, the rate-limit counts) does so through
/// `change`, under one lock, and the file is written on the blocking pool (never on a
/// cooperative thread, which the radio's path shares). Saves land in the order the changes
/// were made: each change takes a ticket under the lock, and a save whose ticket is older than
/// the one written is skipped (the later state already holds its change).
final class NodeStateFile: Sendable {
    let path: String
    private struct Held {
        var state: NodeState
        var issued: UInt64 = 0
    }
    private let held: Mutex<Held>
    /// The ticket written last; held while writing (one save at a time, the newest wins).
    private let written = Mutex<UInt64>(0)

    init(path: String, state: NodeState) {
        self.path = path
        held = Mutex(Held(state: state))
    }

    /// The state as it is now.
    var current: NodeState { held.withLock { $0.state } }

    /// Changes the state (`body` may refuse by throwing: nothing changes) and saves it.
    @discardableResult
    func change<T: Sendable>(_ body: (inout NodeState) throws -> T) async throws -> T {
        let (result, state, ticket) = try held.withLock { h -> (T, NodeState, UInt64) in
            var s = h.state
            let r = try body(&s)
            h.state = s
            h.issued += 1
            return (r, s, h.issued)
        }
        let path = self.path
        do {
            try await BlockingPool.run { [self] _ in
                try written.withLock { written in
                    guard ticket > written else { return }
                    try state.save(path: path)
                    written = ticket
                }
            }
        } catch { throw NodeError.storage("cannot save node state: \(BLEDaemon.fileErrorText(error))") }
        return result
    }
}
