import ENProtocol
import Foundation

/// The node's calibration as gaend reads it from its JSON config (docs/trial.md):
/// `{"calibration": {"txPower": -20, "rssiCorrection": 5.5, "calibrationConfidence": 3}}`.
/// txPower goes into the AEM; rssiCorrection is added to every received RSSI
/// (attenuation = TX power from the AEM - (RSSI + rssiCorrection)); calibrationConfidence (0-3)
/// goes into metadata v1.1.
public struct CalibrationSettings: Codable, Sendable, Equatable {
    public var txPower: Int?
    public var rssiCorrection: Double
    public var calibrationConfidence: Int

    public init(txPower: Int?, rssiCorrection: Double, calibrationConfidence: Int) {
        self.txPower = txPower; self.rssiCorrection = rssiCorrection; self.calibrationConfidence = calibrationConfidence
    }
}

public enum CalibrationError: Error, Equatable, CustomStringConvertible {
    case noOrientations
    case tooFewSamples(orientation: String, needed: Int, actual: Int)
    case noReference(reason: String)
    case configNotAnObject(file: String)
    case badConfig(file: String, reason: String)

    public var description: String {
        switch self {
        case .noOrientations: return "calibration needs at least one orientation"
        case .tooFewSamples(let o, let n, let a):
            return "orientation '\(o)': \(a) RSSI samples of the reference transmitter, need at least \(n)"
        case .noReference(let r): return "no reference level: \(r)"
        case .configNotAnObject(let f): return "\(f): the config must be a JSON object"
        case .badConfig(let f, let r): return "\(f): \(r)"
        }
    }
}

/// Where the RSSI of the reference transmitter comes from, one orientation at a time: a
/// recorded sightings file (offline) or, later, the radio.
public protocol CalibrationSource {
    /// RSSI readings (dBm, as the controller reports them) of the reference transmitter while
    /// it was held in orientation `index` (`name`).
    mutating func measure(orientation name: String, index: Int, of count: Int) throws -> [Int]
}

/// A sightings CSV of the reference transmitter at 1 m. The recording is cut into orientations
/// by markers (each marker starts the orientation its label names, in order) or, without
/// markers, into equal consecutive time spans, one per orientation, as the guided procedure
/// records them. Only reports are used (empty-scan rows skipped); `rpis`, when given, keeps
/// only the reference's own RPIs (derived from its keys).
public struct SightingsCalibrationSource: CalibrationSource {
    let reports: [SightingRow]
    let markers: [Marker]

    public init(sightings: [SightingRow], markers: [Marker] = [], rpis: Set<RollingProximityIdentifier>? = nil) {
        reports = sightings.filter { s in s.rssi != nil && (rpis == nil || s.rpi.map { rpis!.contains($0) } == true) }
            .sorted { $0.time < $1.time }
        self.markers = markers.sorted { $0.time < $1.time }
    }

    public mutating func measure(orientation name: String, index: Int, of count: Int) throws -> [Int] {
        guard let first = reports.first, let last = reports.last else { return [] }
        let from: Double, to: Double
        if !markers.isEmpty {
            guard index < markers.count else { return [] }
            from = markers[index].time
            to = index + 1 < markers.count ? markers[index + 1].time : .infinity
        } else {
            let span = (last.time - first.time) / Double(count)
            from = first.time + span * Double(index)
            to = index == count - 1 ? .infinity : from + span
        }
        return reports.filter { $0.time >= from && $0.time < to }.compactMap(\.rssi)
    }
}

/// The guided calibration: measure the reference transmitter at 1 m in several orientations;
/// the RSSI correction makes the median reading equal the level a calibrated receiver reports.
public struct CalibrationProcedure {
    public var orientations: [String]
    /// The RSSI a calibrated receiver reports for the reference at 1 m (dBm): the reference's
    /// TX power minus its attenuation at 1 m.
    public var expectedRSSI: Double
    public var minimumSamples: Int
    /// Orientation medians further apart than this lower the confidence to medium.
    public var maximumSpreadDb: Double

    public static let defaultOrientations = ["front", "back", "left", "right"]

    public init(orientations: [String] = Self.defaultOrientations, expectedRSSI: Double,
                minimumSamples: Int = 10, maximumSpreadDb: Double = 10) {
        self.orientations = orientations; self.expectedRSSI = expectedRSSI
        self.minimumSamples = minimumSamples; self.maximumSpreadDb = maximumSpreadDb
    }

    public struct OrientationResult: Codable, Sendable, Equatable {
        public var orientation: String
        public var samples: Int
        public var medianRSSI: Double
    }

    public struct Result: Codable, Sendable, Equatable {
        public var orientations: [OrientationResult]
        public var samples: Int
        /// Median of every reading, all orientations pooled.
        public var medianRSSI: Double
        public var expectedRSSI: Double
        public var rssiCorrection: Double
        /// Largest difference between orientation medians.
        public var spreadDb: Double
        public var calibrationConfidence: CalibrationConfidence
    }

    /// Runs the procedure; `prompt` is told what to do before each orientation (the command
    /// waits for the user there when interactive).
    public func run(source: inout some CalibrationSource, prompt: (String, Int) throws -> Void = { _, _ in }) throws -> Result {
        guard !orientations.isEmpty else { throw CalibrationError.noOrientations }
        var per: [OrientationResult] = []
        var all: [Double] = []
        for (i, name) in orientations.enumerated() {
            try prompt(name, i)
            let rssi = try source.measure(orientation: name, index: i, of: orientations.count)
            guard rssi.count >= minimumSamples else {
                throw CalibrationError.tooFewSamples(orientation: name, needed: minimumSamples, actual: rssi.count)
            }
            let values = rssi.map(Double.init)
            per.append(OrientationResult(orientation: name, samples: values.count, medianRSSI: Statistics.median(values)))
            all += values
        }
        let median = Statistics.median(all)
        let medians = per.map(\.medianRSSI)
        let spread = (medians.max() ?? 0) - (medians.min() ?? 0)
        // Measured on this board over several orientations: high; one orientation or a large
        // spread between them: medium (the framework's levels, 0 lowest ... 3 highest).
        let confidence: CalibrationConfidence = orientations.count >= 3 && spread <= maximumSpreadDb ? .high : .medium
        return Result(orientations: per, samples: all.count, medianRSSI: median, expectedRSSI: expectedRSSI,
                      rssiCorrection: expectedRSSI - median, spreadDb: spread, calibrationConfidence: confidence)
    }
}

/// Reads and updates the `calibration` object of a JSON config file, keeping everything else.
public enum CalibrationConfigFile {
    public static func read(_ url: URL) throws -> CalibrationSettings? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let object = try load(url)
        guard let cal = object["calibration"] else { return nil }
        do {
            let data = try JSONSerialization.data(withJSONObject: cal)
            return try JSONDecoder().decode(CalibrationSettings.self, from: data)
        } catch {
            throw CalibrationError.badConfig(file: url.path, reason: "'calibration' is not {txPower, rssiCorrection, calibrationConfidence}: \(error)")
        }
    }

    static func load(_ url: URL) throws -> [String: Any] {
        let data = try Data(contentsOf: url)
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: data) } catch {
            throw CalibrationError.badConfig(file: url.path, reason: "not JSON: \(error.localizedDescription)")
        }
        guard let object = parsed as? [String: Any] else { throw CalibrationError.configNotAnObject(file: url.path) }
        return object
    }

    /// Writes `settings` as the `calibration` object; other keys of the file are kept.
    public static func write(_ settings: CalibrationSettings, to url: URL) throws {
        var object = FileManager.default.fileExists(atPath: url.path) ? try load(url) : [:]
        var cal: [String: Any] = ["rssiCorrection": settings.rssiCorrection, "calibrationConfidence": settings.calibrationConfidence]
        if let tx = settings.txPower { cal["txPower"] = tx }
        object["calibration"] = cal
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        try (data + Data("\n".utf8)).write(to: url, options: .atomic)
    }
}
