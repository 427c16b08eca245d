import Foundation

/// A simulated trial, as read from a scenario JSON file (docs/trial.md, examples/scenarios/).
/// Every field but `durationSeconds` and `nodes` is optional; defaults are documented here and
/// in docs/trial.md.
public struct Scenario: Codable, Sendable, Equatable {
    public var name: String?
    /// Site label carried into every sightings row (a bus, a carriage, an office).
    public var site: String?
    /// Seed of every random choice; with a seed the whole output is reproducible, TEKs included.
    public var seed: UInt64?
    /// Start of the trial, ISO 8601 UTC (default 2026-11-20T08:00:00Z).
    public var start: String?
    public var durationSeconds: Double
    public var channel: ChannelSpec?
    /// Added to the attenuation when a node with `body: true` has the other node behind it
    /// (published: 10-20 dB; 0 or absent: no body blocking).
    public var bodyBlockingDb: Double?
    /// Per-device calibration error before calibration (published: RX sigma about 5 dB, TX about 8).
    public var heterogeneity: Heterogeneity?
    /// Probability that one advertising event in a scan window is not received (default 0.1).
    public var packetLoss: Double?
    /// Reports whose attenuation exceeds this are below the receiver's sensitivity (default 100 dB).
    public var maxAttenuationDb: Double?
    /// Advertising interval range in ms (GAEN: 200-270).
    public var advertisingIntervalMs: [Double]?
    public var scan: ScanSpec?
    /// Rotation period range in seconds (GAEN: 600-1200).
    public var rotationSeconds: [Double]?
    /// Ground truth: a marker is written when a pair's distance has changed by this much (default 0.1 m).
    public var markerResolutionM: Double?
    public var nodes: [NodeSpec]

    public struct ChannelSpec: Codable, Sendable, Equatable {
        /// "open-air", "indoor-crowd" or "vehicle"; the fields below override the preset.
        public var preset: String?
        public var attenuationAt1m: Double?
        public var slopePerDecade: Double?
        public var sigma: Double?
        /// Vehicle occupancy effect: dB added at full occupancy, in proportion to the share of
        /// nodes present.
        public var occupancyShiftDb: Double?
        public init(preset: String? = nil, attenuationAt1m: Double? = nil, slopePerDecade: Double? = nil,
                    sigma: Double? = nil, occupancyShiftDb: Double? = nil) {
            self.preset = preset; self.attenuationAt1m = attenuationAt1m; self.slopePerDecade = slopePerDecade
            self.sigma = sigma; self.occupancyShiftDb = occupancyShiftDb
        }
    }

    public struct Heterogeneity: Codable, Sendable, Equatable {
        public var txSigma: Double?
        public var rxSigma: Double?
        public init(txSigma: Double? = nil, rxSigma: Double? = nil) { self.txSigma = txSigma; self.rxSigma = rxSigma }
    }

    public struct ScanSpec: Codable, Sendable, Equatable {
        /// Scan length, 2-4 s (default 4).
        public var durationSeconds: Double?
        /// Random period range between scan starts (default [210, 300]); one value: fixed period.
        public var periodSeconds: [Double]?
        public init(durationSeconds: Double? = nil, periodSeconds: [Double]? = nil) {
            self.durationSeconds = durationSeconds; self.periodSeconds = periodSeconds
        }
    }

    public struct Waypoint: Codable, Sendable, Equatable {
        /// Seconds from the start.
        public var t: Double
        public var x: Double
        public var y: Double
        public init(t: Double, x: Double, y: Double) { self.t = t; self.x = x; self.y = y }
    }

    public struct NodeSpec: Codable, Sendable, Equatable {
        public var name: String
        /// "both" (default: advertises and scans, like a phone or a board), "advertiser", "scanner".
        public var role: String?
        /// A fixed position in metres (shorthand for one waypoint).
        public var position: [Double]?
        /// Positions over time, linear in between, held before the first and after the last.
        public var waypoints: [Waypoint]?
        /// Present from `enter` to `leave` seconds (default: the whole trial).
        public var enter: Double?
        public var leave: Double?
        /// Calibrated TX power the node puts into its AEM (default -20 dBm).
        public var txPower: Int?
        /// The node's RSSI correction, written into its sightings (default 0).
        public var rssiCorrection: Double?
        /// Calibration confidence 0-3 in the metadata (v1.1); absent: metadata v1.0.
        public var calibrationConfidence: Int?
        /// A person carries the node: the body blocks what arrives from behind.
        public var body: Bool?
        /// Facing direction in degrees (0 = +x, 90 = +y) when not moving; moving nodes face their way.
        public var heading: Double?
        /// Written into the node's key list (1-8) for v1 risk engines.
        public var transmissionRiskLevel: Int?

        public init(name: String, role: String? = nil, position: [Double]? = nil, waypoints: [Waypoint]? = nil,
                    enter: Double? = nil, leave: Double? = nil, txPower: Int? = nil, rssiCorrection: Double? = nil,
                    calibrationConfidence: Int? = nil, body: Bool? = nil, heading: Double? = nil, transmissionRiskLevel: Int? = nil) {
            self.name = name; self.role = role; self.position = position; self.waypoints = waypoints
            self.enter = enter; self.leave = leave; self.txPower = txPower; self.rssiCorrection = rssiCorrection
            self.calibrationConfidence = calibrationConfidence; self.body = body; self.heading = heading
            self.transmissionRiskLevel = transmissionRiskLevel
        }
    }

    public init(name: String? = nil, site: String? = nil, seed: UInt64? = nil, start: String? = nil, durationSeconds: Double,
                channel: ChannelSpec? = nil, bodyBlockingDb: Double? = nil, heterogeneity: Heterogeneity? = nil,
                packetLoss: Double? = nil, maxAttenuationDb: Double? = nil, nodes: [NodeSpec]) {
        self.name = name; self.site = site; self.seed = seed; self.start = start; self.durationSeconds = durationSeconds
        self.channel = channel; self.bodyBlockingDb = bodyBlockingDb; self.heterogeneity = heterogeneity
        self.packetLoss = packetLoss; self.maxAttenuationDb = maxAttenuationDb; self.nodes = nodes
    }

    public static func read(_ url: URL) throws -> Scenario {
        let data = try Data(contentsOf: url)
        do { return try JSONDecoder().decode(Scenario.self, from: data) } catch let e as DecodingError {
            throw ScenarioError.invalid(file: url.path, reason: Self.describe(e))
        }
    }

    static func describe(_ e: DecodingError) -> String {
        func path(_ c: [CodingKey]) -> String { c.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined() }
        switch e {
        case .keyNotFound(let k, let c): return "missing field '\(k.stringValue)' at \(path(c.codingPath).isEmpty ? "top level" : path(c.codingPath))"
        case .typeMismatch(let t, let c): return "\(path(c.codingPath)): expected \(t)"
        case .valueNotFound(let t, let c): return "\(path(c.codingPath)): expected \(t), found null"
        case .dataCorrupted(let c): return "\(path(c.codingPath)): \(c.debugDescription)"
        @unknown default: return "\(e)"
        }
    }
}

public enum ScenarioError: Error, Equatable, CustomStringConvertible {
    case invalid(file: String, reason: String)
    case badValue(field: String, expected: String, actual: String)
    public var description: String {
        switch self {
        case .invalid(let f, let r): return "\(f): not a valid scenario: \(r)"
        case .badValue(let f, let e, let a): return "scenario: \(f) must be \(e), got \(a)"
        }
    }
}

/// The log-distance channel A(d) = A(1 m) + slope log10(d) + X, X ~ N(0, sigma), with presets
/// from published measurements (the sources docs/trial.md's "Channel presets" table names):
/// - indoor-crowd: DP-3T EPFL crowd experiment, A(1 m) about 62 dB, slope about 12 dB/decade,
///   sigma 7.5 dB.
/// - open-air: line of sight, slope 12-21 dB/decade and sigma 4-6 dB published; the preset
///   takes the middle (16.5, 5). A(1 m) 62 dB (the EPFL value; no open-air A(1 m) is given).
/// - vehicle: inside a metal bus or tram (Dublin measurements), slope 2-4 dB/decade (3 taken),
///   sigma about 6 dB, occupancy moving attenuation by about 10 dB; A(1 m) 62 dB as above.
public struct ChannelModel: Codable, Sendable, Equatable {
    public var attenuationAt1m: Double
    public var slopePerDecade: Double
    public var sigma: Double
    public var occupancyShiftDb: Double

    public init(attenuationAt1m: Double, slopePerDecade: Double, sigma: Double, occupancyShiftDb: Double = 0) {
        self.attenuationAt1m = attenuationAt1m; self.slopePerDecade = slopePerDecade; self.sigma = sigma
        self.occupancyShiftDb = occupancyShiftDb
    }

    public static let presets: [String: ChannelModel] = [
        "indoor-crowd": ChannelModel(attenuationAt1m: 62, slopePerDecade: 12, sigma: 7.5),
        "open-air": ChannelModel(attenuationAt1m: 62, slopePerDecade: 16.5, sigma: 5),
        "vehicle": ChannelModel(attenuationAt1m: 62, slopePerDecade: 3, sigma: 6, occupancyShiftDb: 10),
    ]

    public init(spec: Scenario.ChannelSpec?) throws {
        let name = spec?.preset ?? "indoor-crowd"
        guard var m = Self.presets[name] else {
            throw ScenarioError.badValue(field: "channel.preset", expected: Self.presets.keys.sorted().joined(separator: ", "), actual: name)
        }
        if let v = spec?.attenuationAt1m { m.attenuationAt1m = v }
        if let v = spec?.slopePerDecade { m.slopePerDecade = v }
        if let v = spec?.sigma {
            guard v >= 0, v.isFinite else { throw ScenarioError.badValue(field: "channel.sigma", expected: ">= 0", actual: "\(v)") }
            m.sigma = v
        }
        if let v = spec?.occupancyShiftDb { m.occupancyShiftDb = v }
        self = m
    }

    /// Mean attenuation at `distance` metres (closer than 10 cm counts as 10 cm).
    public func meanAttenuation(at distance: Double) -> Double {
        attenuationAt1m + slopePerDecade * log10(max(distance, 0.1))
    }
}
