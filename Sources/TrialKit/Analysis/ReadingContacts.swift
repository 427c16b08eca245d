import ENProtocol
import Foundation
import RiskEngines
import TrialFormats

/// Contacts from time series (`gaenctl trial contacts`): readings of pairs over time (what
/// `trial import dp3t` and `trial import rssi` write, or a board's collected sightings joined
/// with the keys) turned into the exposure windows the framework would have formed, each pair
/// one contact, with its true distance over time, so that a rule is replayed per contact against
/// a criterion such as "at least 15 minutes within 1.5 m".
///
/// The windows are formed by the node's own implementation of the framework's rules
/// (`ExposureWindows.compute`, ENProtocol): the readings become sightings of a synthetic scan
/// schedule and matches of a synthetic key per transmitter and UTC day, with an RPI per
/// transmitter and 10-minute interval as a phone's rotates. So the framework's grouping applies
/// unchanged: one scan instance per scan and RPI (typical attenuation the mean rounded half up,
/// minimum the least), secondsSinceLastScan the gap to the receiver's previous scan (at most
/// 300 s), windows of at most 30 minutes, the window's day its first sighting's.
public enum ReadingContacts {
    /// How the receiver's scans are laid over the readings.
    public struct Settings: Sendable {
        /// Seconds from one scan's start to the next (the framework scans every 3.5-5 minutes;
        /// 300 is its cap on secondsSinceLastScan).
        public var scanInterval: Double = 300
        /// How long each scan listens; nil: the whole interval (every reading counts, for
        /// datasets sampled more sparsely than a 4 s window would catch).
        public var scanSeconds: Double? = 4
        public var transmissionRiskLevel: Int? = nil
        /// Cluster for the bootstrap: the scenario (readings of one experiment share its room,
        /// bodies and phones) or the pair alone.
        public var clusterByScenario = true
        public init() {}
    }

    public struct Reading: Sendable, Equatable {
        public var time: Double
        public var receiver: String
        public var transmitter: String
        public var distance: Double
        public var attenuation: Double
        public var scenario: String
        public init(time: Double, receiver: String, transmitter: String, distance: Double, attenuation: Double, scenario: String = "") {
            self.time = time; self.receiver = receiver; self.transmitter = transmitter; self.distance = distance
            self.attenuation = attenuation; self.scenario = scenario
        }
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Readings files: `time,receiver,transmitter,distance,attenuation` and optionally
    /// `scenario` (else `site`), as the importers write them. Times as the importers write them
    /// (Unix seconds, or ISO 8601 with a zone).
    public static func read(_ urls: [URL]) throws -> [Reading] {
        var out: [Reading] = []
        for url in urls {
            let csv = try CSVReader(contentsOf: url)
            let file = url.path
            let time = try csv.requireColumn("time"), rx = try csv.requireColumn("receiver"), tx = try csv.requireColumn("transmitter")
            let distance = try csv.requireColumn("distance"), attenuation = try csv.requireColumn("attenuation")
            let scenario = csv.column("scenario") ?? csv.column("site")
            var line = 1
            try csv.forEachRow { row in
                line += 1
                let t = row.string(time)
                let seconds: Double
                if let v = Double(t), v.isFinite { seconds = v } else {
                    do { seconds = try TimeInput.parse(t) } catch { throw Invalid(description: "\(file):\(line): time: \(error)") }
                }
                guard let d = try row.double(distance, column: "distance"), d >= 0 else {
                    throw Invalid(description: "\(file):\(line): distance: expected metres >= 0")
                }
                guard let a = try row.double(attenuation, column: "attenuation") else {
                    throw Invalid(description: "\(file):\(line): attenuation: empty")
                }
                out.append(Reading(time: seconds, receiver: row.string(rx), transmitter: row.string(tx), distance: d, attenuation: a,
                                   scenario: scenario.map { row.string($0) } ?? ""))
            }
        }
        return out
    }

    /// One contact per (scenario, receiver, transmitter), in that order.
    public static func contacts(_ readings: [Reading], settings: Settings = Settings()) throws -> [Contact] {
        guard settings.scanInterval.isFinite, settings.scanInterval >= 1, settings.scanInterval <= 3_600 else {
            throw Invalid(description: "the scan interval must be 1...3600 s")
        }
        if let s = settings.scanSeconds {
            guard s.isFinite, s > 0, s <= settings.scanInterval else { throw Invalid(description: "a scan must last more than 0 s and at most the interval") }
        }
        struct PairKey: Hashable, Comparable {
            var scenario: String, receiver: String, transmitter: String
            static func < (a: PairKey, b: PairKey) -> Bool { (a.scenario, a.receiver, a.transmitter) < (b.scenario, b.receiver, b.transmitter) }
        }
        struct ReceiverKey: Hashable { var scenario: String, receiver: String }
        var pairs: [PairKey: [Reading]] = [:]
        var span: [ReceiverKey: (first: Double, last: Double)] = [:]
        for r in readings {
            pairs[PairKey(scenario: r.scenario, receiver: r.receiver, transmitter: r.transmitter), default: []].append(r)
            let k = ReceiverKey(scenario: r.scenario, receiver: r.receiver)
            let s = span[k] ?? (r.time, r.time)
            span[k] = (min(s.first, r.time), max(s.last, r.time))
        }
        var out: [Contact] = []
        for key in pairs.keys.sorted() {
            let list = pairs[key]!.sorted { $0.time < $1.time }
            // The receiver's scans over all it heard (a scan that heard nothing still counts for
            // the next one's secondsSinceLastScan), on a grid anchored at the epoch.
            let (first, last) = span[ReceiverKey(scenario: key.scenario, receiver: key.receiver)]!
            let gridStart = (first / settings.scanInterval).rounded(.down) * settings.scanInterval
            let count = Int(((last - gridStart) / settings.scanInterval).rounded(.down)) + 1
            let length = settings.scanSeconds ?? settings.scanInterval
            let scans = (0..<count).map { i in
                Scan(start: gridStart + Double(i) * settings.scanInterval, end: gridStart + Double(i) * settings.scanInterval + length, node: key.receiver)
            }
            var matches: [Match] = []
            for r in list {
                let i = Int(((r.time - gridStart) / settings.scanInterval).rounded(.down))
                guard i >= 0, i < scans.count, r.time <= scans[i].end else { continue } // between scans: not heard
                // Attenuation carried as TX power 0 and RSSI = -attenuation (whole dB, half up), so
                // the framework's TX power - (RSSI + correction) gives it back.
                let att = Int((r.attenuation + 0.5).rounded(.down))
                guard att >= 0, att <= 127 else { continue }
                let interval = ENIntervalNumber(unixSeconds: r.time)
                let rpi = SHA256.hash(Data("rpi/\(key.scenario)/\(key.transmitter)/\(interval.rawValue)".utf8))
                let sighting = Sighting(time: r.time, rpiLow: rpi.prefix(8).reduce(0) { $0 << 8 | UInt64($1) },
                                        rpiHigh: rpi.dropFirst(8).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, aemBits: 0,
                                        rssi: Int8(-att), rssiCorrection: 0, scanIndex: Int32(i))
                let day = interval.utcDay
                let tek = try TemporaryExposureKey(bytes: SHA256.hash(Data("tek/\(key.scenario)/\(key.transmitter)/\(day.rawValue)".utf8)).prefix(16))
                var dk = DiagnosisKey(key: tek, rollingStartIntervalNumber: day.firstInterval)
                dk.transmissionRiskLevel = settings.transmissionRiskLevel.map(Int32.init)
                matches.append(Match(sighting: sighting, key: dk, interval: interval, metadata: .v1_0(txPower: 0)))
            }
            let windows = try ExposureWindows.compute(matches: matches, scans: scans).windows
            let entries = windows.enumerated().map { WindowsFileEntry(index: $0, $1) }
            let label = (key.scenario.isEmpty ? "" : key.scenario + " ") + "\(key.receiver) hears \(key.transmitter)"
            out.append(Contact(label: label, distance: list.map(\.distance).min() ?? 0, windows: entries,
                               cluster: settings.clusterByScenario && !key.scenario.isEmpty ? key.scenario : label,
                               distanceOverTime: truth(list, gapCap: settings.scanInterval)))
        }
        return out
    }

    /// The pair's true distance over time: each reading's distance holds until the next reading,
    /// for at most `gapCap` seconds (a longer silence is time the pair's distance is unknown);
    /// the last one for the pair's median gap between readings.
    static func truth(_ sorted: [Reading], gapCap: Double) -> [DistanceSpan] {
        var spans: [DistanceSpan] = []
        let gaps = zip(sorted, sorted.dropFirst()).map { $1.time - $0.time }.filter { $0 > 0 }.sorted()
        let typicalGap = min(gapCap, gaps.isEmpty ? 1 : gaps[gaps.count / 2])
        for (i, r) in sorted.enumerated() {
            let end = i + 1 < sorted.count ? min(sorted[i + 1].time, r.time + gapCap) : r.time + typicalGap
            guard end > r.time else { continue }
            if var last = spans.last, last.distance == r.distance, last.to == r.time {
                last.to = end
                spans[spans.count - 1] = last
            } else {
                spans.append(DistanceSpan(from: r.time, to: end, distance: r.distance))
            }
        }
        return spans
    }
}

/// A stretch of time at one true distance (Unix seconds, metres).
public struct DistanceSpan: Sendable, Equatable {
    public var from: Double
    public var to: Double
    public var distance: Double
    public init(from: Double, to: Double, distance: Double) { self.from = from; self.to = to; self.distance = distance }
}

extension Contact {
    /// Seconds the contact spent at most `metres` apart, from its distance over time; nil when
    /// it has none (a contact of one distance).
    public func secondsWithin(_ metres: Double) -> Double? {
        guard let spans = distanceOverTime else { return nil }
        return spans.filter { $0.distance <= metres }.reduce(0) { $0 + ($1.to - $1.from) }
    }
}
