import ENProtocol
import Foundation
import TrialFormats

public enum CalibrationError: Error, Equatable, CustomStringConvertible {
    case noOrientations
    case tooFewSamples(orientation: String, needed: Int, actual: Int)
    case noReference(reason: String)

    public var description: String {
        switch self {
        case .noOrientations: return "calibration needs at least one orientation"
        case .tooFewSamples(let o, let n, let a):
            return "orientation '\(o)': \(a) RSSI samples of the reference transmitter, need at least \(n)"
        case .noReference(let r): return "no reference level: \(r)"
        }
    }
}

/// One reading of the reference transmitter: the RSSI as the controller reported it (before
/// the node's correction) and, when its keys are known, the TX power its AEM carries.
public struct CalibrationReading: Sendable, Equatable {
    public var time: Double
    public var rssi: Int
    public var txPower: Int?

    public init(time: Double, rssi: Int, txPower: Int? = nil) {
        self.time = time; self.rssi = rssi; self.txPower = txPower
    }
}

/// Where the readings of the reference transmitter come from, one orientation at a time: a
/// recorded sightings file (`SightingsCalibrationSource`) or the running node (gaenctl's live
/// source, Research1.ScanFinished).
public protocol CalibrationSource {
    /// Readings of the reference transmitter while it was held in orientation `index` (`name`).
    mutating func measure(orientation name: String, index: Int, of count: Int) async throws -> [CalibrationReading]
}

/// A recording of the reference transmitter at 1 m. The recording is cut into orientations by
/// markers (each marker starts the orientation its label names, in order) or, without
/// markers, into equal consecutive time spans, one per orientation, as the guided procedure
/// records them.
public struct SightingsCalibrationSource: CalibrationSource {
    let readings: [CalibrationReading]
    let markers: [Marker]

    public init(readings: [CalibrationReading], markers: [Marker] = []) {
        self.readings = readings.sorted { $0.time < $1.time }
        self.markers = markers.sorted { $0.time < $1.time }
    }

    /// Every report of a sightings export (empty-scan rows skipped; `rpis`, when given, keeps
    /// only those RPIs).
    public init(sightings: [SightingRow], markers: [Marker] = [], rpis: Set<RollingProximityIdentifier>? = nil) {
        let reports = sightings.filter { s in s.rssi != nil && (rpis == nil || s.rpi.map { rpis!.contains($0) } == true) }
        self.init(readings: reports.map { CalibrationReading(time: $0.time, rssi: $0.rssi!) }, markers: markers)
    }

    public mutating func measure(orientation name: String, index: Int, of count: Int) async throws -> [CalibrationReading] {
        guard let first = readings.first, let last = readings.last else { return [] }
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
        return readings.filter { $0.time >= from && $0.time < to }
    }
}

/// The guided calibration: measure the reference transmitter at 1 m in several orientations;
/// the RSSI correction makes the median reading equal the level a calibrated receiver reports.
public struct CalibrationProcedure {
    public var orientations: [String]
    public var minimumSamples: Int
    /// Orientation medians further apart than this lower the confidence to medium.
    public var maximumSpreadDb: Double

    public static let defaultOrientations = ["front", "back", "left", "right"]

    public init(orientations: [String] = Self.defaultOrientations, minimumSamples: Int = 10, maximumSpreadDb: Double = 10) {
        self.orientations = orientations
        self.minimumSamples = minimumSamples; self.maximumSpreadDb = maximumSpreadDb
    }

    /// What one orientation gave.
    public struct Orientation: Sendable, Equatable {
        public var name: String
        public var readings: [CalibrationReading]
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
        /// The RSSI a calibrated receiver reports for the reference at 1 m (dBm): the
        /// reference's TX power minus its attenuation at 1 m.
        public var expectedRSSI: Double
        /// expectedRSSI - medianRSSI, in dB (fractional; gaend takes whole dB).
        public var rssiCorrection: Double
        /// Largest difference between orientation medians.
        public var spreadDb: Double
        public var calibrationConfidence: CalibrationConfidence
    }

    /// Measures every orientation in turn; `prompt` is told what to do before each (the
    /// command waits for the user there when interactive). Each orientation needs
    /// `minimumSamples` readings.
    public func measure(source: inout some CalibrationSource, prompt: (String, Int) async throws -> Void = { _, _ in }) async throws -> [Orientation] {
        guard !orientations.isEmpty else { throw CalibrationError.noOrientations }
        var out: [Orientation] = []
        for (i, name) in orientations.enumerated() {
            try await prompt(name, i)
            let readings = try await source.measure(orientation: name, index: i, of: orientations.count)
            guard readings.count >= minimumSamples else {
                throw CalibrationError.tooFewSamples(orientation: name, needed: minimumSamples, actual: readings.count)
            }
            out.append(Orientation(name: name, readings: readings))
        }
        return out
    }

    /// The correction and confidence from measured orientations.
    public func result(_ measured: [Orientation], expectedRSSI: Double) throws -> Result {
        guard !measured.isEmpty else { throw CalibrationError.noOrientations }
        var per: [OrientationResult] = []
        var all: [Double] = []
        for o in measured {
            let values = o.readings.map { Double($0.rssi) }
            guard !values.isEmpty else { throw CalibrationError.tooFewSamples(orientation: o.name, needed: max(1, minimumSamples), actual: 0) }
            per.append(OrientationResult(orientation: o.name, samples: values.count, medianRSSI: Statistics.median(values)))
            all += values
        }
        let median = Statistics.median(all)
        let medians = per.map(\.medianRSSI)
        let spread = (medians.max() ?? 0) - (medians.min() ?? 0)
        // Measured on this board over several orientations: high; one orientation or a large
        // spread between them: medium (the framework's levels, 0 lowest ... 3 highest).
        let confidence: CalibrationConfidence = measured.count >= 3 && spread <= maximumSpreadDb ? .high : .medium
        return Result(orientations: per, samples: all.count, medianRSSI: median, expectedRSSI: expectedRSSI,
                      rssiCorrection: expectedRSSI - median, spreadDb: spread, calibrationConfidence: confidence)
    }

    /// `measure` then `result`, for a known expected RSSI.
    public func run(source: inout some CalibrationSource, expectedRSSI: Double,
                    prompt: (String, Int) async throws -> Void = { _, _ in }) async throws -> Result {
        try result(try await measure(source: &source, prompt: prompt), expectedRSSI: expectedRSSI)
    }
}
