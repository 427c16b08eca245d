import ENProtocol
import Foundation
import TrialFormats

/// Runs a scenario on a virtual clock: every node runs the node's own schedule policy
/// (ENProtocol `NodeSchedule`: rotation every 10-20 min, a 4 s scan every 210-300 s), the real
/// key schedule (a TEK per UTC day, the RPI of the rotation's interval, the AEM of the node's
/// metadata), and a log-distance channel between positions. The output has the formats a real
/// board exports, plus ground truth (see `SimulationResult.write`).
///
/// Modelling choices (docs/trial.md): positions are taken at a scan's midpoint; each
/// advertising event in a scan window is received with probability 1 - packetLoss, with its
/// own shadowing draw X ~ N(0, sigma); the advertiser's phase is drawn afresh per scan.
public struct Simulator {
    public let scenario: Scenario
    public let seed: UInt64
    public let randomKeys: Bool
    public let channel: ChannelModel
    public let startUnix: Double

    let nodes: [SimNode]
    let packetLoss: Double
    let maxAttenuation: Double
    let bodyBlockingDb: Double
    let advertisingInterval: ClosedRange<Double>
    let rotation: RotationPolicy
    let scanPolicy: ScanPolicy
    let markerResolution: Double

    public static let defaultStart = "2026-11-20T08:00:00Z"

    /// `seed` overrides the scenario's; with neither, a seed is drawn from the CSPRNG (and
    /// reported). TEKs come from the seed unless `randomKeys` (then from the CSPRNG).
    public init(scenario: Scenario, seed: UInt64? = nil, randomKeys: Bool = false) throws {
        self.scenario = scenario
        var rng = SecureRandom()
        let chosen = try seed ?? scenario.seed ?? rng.bytes(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        self.seed = chosen
        self.randomKeys = randomKeys
        channel = try ChannelModel(spec: scenario.channel)
        let startText = scenario.start ?? Self.defaultStart
        guard let start = ISO8601DateFormatter().date(from: startText) else {
            throw ScenarioError.badValue(field: "start", expected: "an ISO 8601 UTC time such as \(Self.defaultStart)", actual: startText)
        }
        startUnix = start.timeIntervalSince1970
        guard scenario.durationSeconds > 0, scenario.durationSeconds <= 30 * 86_400 else {
            throw ScenarioError.badValue(field: "durationSeconds", expected: "0 < seconds <= 30 days", actual: "\(scenario.durationSeconds)")
        }
        packetLoss = scenario.packetLoss ?? 0.1
        guard (0..<1).contains(packetLoss) else { throw ScenarioError.badValue(field: "packetLoss", expected: "0 <= p < 1", actual: "\(packetLoss)") }
        maxAttenuation = scenario.maxAttenuationDb ?? 100
        bodyBlockingDb = scenario.bodyBlockingDb ?? 0
        let adv = scenario.advertisingIntervalMs ?? [200, 270]
        guard adv.count == 2, adv[0] >= 20, adv[1] >= adv[0] else {
            throw ScenarioError.badValue(field: "advertisingIntervalMs", expected: "[min, max] with 20 <= min <= max", actual: "\(adv)")
        }
        advertisingInterval = (adv[0] / 1000)...(adv[1] / 1000)
        if let r = scenario.rotationSeconds {
            guard r.count == 2 else { throw ScenarioError.badValue(field: "rotationSeconds", expected: "[min, max]", actual: "\(r)") }
            rotation = try RotationPolicy(minimumSeconds: r[0], maximumSeconds: r[1])
        } else { rotation = RotationPolicy() }
        let scanDuration = scenario.scan?.durationSeconds ?? ScanPolicy.defaultDuration
        switch scenario.scan?.periodSeconds {
        case nil: scanPolicy = try ScanPolicy(duration: scanDuration, cadence: .randomPeriod(ScanPolicy.defaultPeriod))
        case let p? where p.count == 1: scanPolicy = try ScanPolicy(duration: scanDuration, cadence: .fixedPeriod(p[0]))
        case let p? where p.count == 2 && p[1] >= p[0]: scanPolicy = try ScanPolicy(duration: scanDuration, cadence: .randomPeriod(p[0]...p[1]))
        case let p?: throw ScenarioError.badValue(field: "scan.periodSeconds", expected: "[period] or [min, max]", actual: "\(p)")
        }
        markerResolution = scenario.markerResolutionM ?? 0.1
        var noise = SeededRandom(seed: chosen ^ 0x5EED_0F_DE_71CE)
        let txSigma = scenario.heterogeneity?.txSigma ?? 0, rxSigma = scenario.heterogeneity?.rxSigma ?? 0
        var seen = Set<String>()
        var nodes: [SimNode] = []
        for (i, spec) in scenario.nodes.enumerated() {
            guard !spec.name.isEmpty, spec.name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                throw ScenarioError.badValue(field: "nodes[\(i)].name", expected: "letters, digits, '-', '_' or '.'", actual: "'\(spec.name)'")
            }
            guard seen.insert(spec.name).inserted else {
                throw ScenarioError.badValue(field: "nodes[\(i)].name", expected: "unique", actual: spec.name)
            }
            nodes.append(try SimNode(spec: spec, index: i, duration: scenario.durationSeconds,
                                     txOffset: Self.gaussian(&noise) * txSigma, rxOffset: Self.gaussian(&noise) * rxSigma))
        }
        guard !nodes.isEmpty else { throw ScenarioError.badValue(field: "nodes", expected: "at least one node", actual: "none") }
        self.nodes = nodes
    }

    // MARK: random numbers (fast paths on SplitMix64 for the channel; the schedule uses the protocol)

    /// A non-resolvable private address (top two bits 00) made from the RPI's first six bytes, so
    /// it changes exactly when the RPI does, without drawing from the scenario's random stream.
    static func address(_ rpi: RollingProximityIdentifier) -> String {
        var b = [UInt8](rpi.bytes.prefix(6))
        b[0] &= 0x3F
        if b.allSatisfy({ $0 == 0 }) { b[5] = 1 }
        return b.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    static func uniform(_ r: inout SeededRandom) -> Double { Double(r.next() >> 11) * 0x1p-53 }

    static func gaussian(_ r: inout SeededRandom) -> Double {
        // Box-Muller; one of the pair is enough here.
        let u1 = max(uniform(&r), 0x1p-60), u2 = uniform(&r)
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    // MARK: running

    struct Slot {
        var time: Double // relative seconds of the rotation
        /// The RPI and AEM in hex, as the rows spell them (bytes: every row of the slot copies them).
        var rpiHex: [UInt8]
        var aemHex: [UInt8]
        /// The advertising address of the slot: it changes with the RPI, as a phone's does.
        var address: [UInt8]
    }

    struct NodeTimeline {
        var slots: [Slot] = []
        var scans: [(start: Double, end: Double)] = []
        var keys: [DiagnosisKey] = []

        func slot(at t: Double) -> Int? {
            var lo = 0, hi = slots.count
            while lo < hi { let m = (lo + hi) / 2; if slots[m].time <= t { lo = m + 1 } else { hi = m } }
            return lo == 0 ? nil : lo - 1
        }
    }

    /// Runs the node schedule for one node from a random boot time before the start.
    func timeline(for node: SimNode) throws -> NodeTimeline {
        var rng = SeededRandom(seed: seed &+ UInt64(node.index + 1) &* 0x9E37_79B9_7F4A_7C15)
        var secure = SecureRandom()
        var keyRng = SeededRandom(seed: seed ^ (UInt64(node.index + 1) &* 0xD1B5_4A32_D192_ED03))
        let keySchedule = try GAENKeySchedule()
        let boot = Self.uniform(&rng) * rotation.maximumSeconds * 1.5
        let duration = scenario.durationSeconds
        var schedule = NodeSchedule(rotation: rotation, scan: scanPolicy)
        var out = NodeTimeline()
        var teks: [UTCDay: (TemporaryExposureKey, AssociatedEncryptedMetadataKey)] = [:]
        let metadata: BluetoothMetadata = node.calibrationConfidence.map { .v1_1(txPower: node.txPower, calibrationConfidence: $0) }
            ?? .v1_0(txPower: node.txPower)
        var mono = 0.0
        while true {
            let t = mono - boot
            if t > duration { break }
            let reading = ClockReading(wall: startUnix + t, monotonic: mono)
            for action in try schedule.advance(to: reading, random: &rng) {
                switch action {
                case .rotate(let slot) where node.advertises:
                    let key: (TemporaryExposureKey, AssociatedEncryptedMetadataKey)
                    if let k = teks[slot.day] { key = k } else {
                        let tek = randomKeys ? try TemporaryExposureKey.generate(using: &secure)
                                             : try TemporaryExposureKey.generate(using: &keyRng)
                        key = (tek, keySchedule.associatedEncryptedMetadataKey(for: tek))
                        teks[slot.day] = key
                        out.keys.append(DiagnosisKey(key: tek, rollingStartIntervalNumber: slot.day.firstInterval,
                                                     transmissionRiskLevel: node.transmissionRiskLevel.map(Int32.init),
                                                     reportType: .confirmedTest))
                    }
                    let rpi = try keySchedule.rollingProximityIdentifier(for: key.0, interval: slot.interval)
                    let aem = try GAENKeySchedule.associatedEncryptedMetadata(metadata, rpi: rpi, aemk: key.1)
                    // Only the slot in force at the start matters of those before it.
                    if t <= 0, !out.slots.isEmpty, out.slots.last!.time <= 0 { out.slots.removeLast() }
                    out.slots.append(Slot(time: t, rpiHex: Array(rpi.hexString.utf8), aemHex: Array(aem.hexString.utf8),
                                          address: Array(Self.address(rpi).utf8)))
                case .finishScan(let scan) where node.scans:
                    let s = scan.startWall - startUnix, e = scan.endWall - startUnix
                    if s >= 0, e <= duration { out.scans.append((s, e)) }
                default: break
                }
            }
            mono = schedule.nextDeadline
        }
        return out
    }

    public func run() throws -> SimulationResult { try run(output: nil) }

    /// With `output`, every sightings row and ground-truth distance row goes to it as it is made
    /// and none is kept: memory stays flat in boards x days (the result then holds no sightings
    /// files and no distances; the streamed files are the output's).
    public func run(output: SimulationOutput?) throws -> SimulationResult {
        let timelines = try nodes.map { try timeline(for: $0) }
        var rng = SeededRandom(seed: seed ^ 0xC4A7_7E1F)
        let site = scenario.site
        var result = SimulationResult(seed: seed, startUnix: startUnix, channel: channel)
        var distanceRows = CSVWriter(header: ["scan_start", "receiver", "transmitter", "distance", "expected_attenuation", "site"])
        let siteField = "," + CSVWriter.escape(site ?? "")
        result.name = scenario.name
        result.site = site
        let advertisers = nodes.filter(\.advertises)
        let total = Double(max(nodes.count - 1, 1))
        // Each row is built as bytes in one reused buffer (ByteFormat gives Format's text).
        var line: [UInt8] = []
        line.reserveCapacity(256)
        let comma = UInt8(ascii: ","), newline = UInt8(ascii: "\n")
        for (ri, rx) in nodes.enumerated() where rx.scans {
            try output?.receiver(rx.name)
            var writer = SightingsExport.Writer()
            func emit(_ time: Double) throws {
                if let output { line.append(newline); try output.sighting(node: rx.name, line: line, time: time) }
                else { writer.appendRawLine(String(decoding: line, as: UTF8.self)) }
            }
            let tail = Array(("," + String(rx.rssiCorrection) + "," + rx.name + "," + CSVWriter.escape(site ?? "")).utf8)
            let rxName = Array(rx.name.utf8), siteBytes = Array(siteField.utf8)
            var events: [(t: Double, tx: Int, slot: Int, rssi: Int)] = []
            for scan in timelines[ri].scans where rx.isPresent(at: scan.start) {
                let mid = (scan.start + scan.end) / 2
                var scanText: [UInt8] = [comma]
                ByteFormat.appendTime(startUnix + scan.start, to: &scanText)
                scanText.append(comma)
                ByteFormat.appendTime(startUnix + scan.end, to: &scanText)
                let occupancy = channel.occupancyShiftDb == 0 ? 0
                    : channel.occupancyShiftDb * Double(nodes.filter { $0.isPresent(at: scan.start) }.count - 1) / total
                let prx = rx.position(at: mid)
                events.removeAll(keepingCapacity: true)
                for tx in advertisers where tx.index != rx.index && tx.isPresent(at: scan.start) {
                    let tl = timelines[tx.index]
                    guard tl.slot(at: scan.start) != nil else { continue }
                    let ptx = tx.position(at: mid)
                    let d = ((prx.x - ptx.x) * (prx.x - ptx.x) + (prx.y - ptx.y) * (prx.y - ptx.y)).squareRoot()
                    var mean = channel.meanAttenuation(at: d) + occupancy + rx.rxOffset + tx.txOffset
                    if bodyBlockingDb > 0 {
                        if rx.blocks(from: ptx, at: mid) { mean += bodyBlockingDb }
                        if tx.blocks(from: prx, at: mid) { mean += bodyBlockingDb }
                    }
                    line.removeAll(keepingCapacity: true)
                    ByteFormat.appendTime(startUnix + scan.start, to: &line)
                    line.append(comma); line += rxName; line.append(comma); line += tx.nameBytes; line.append(comma)
                    ByteFormat.appendFixed(d, 2, to: &line); line.append(comma)
                    ByteFormat.appendFixed(mean, 2, to: &line); line += siteBytes
                    if let output { line.append(newline); try output.distance(line) }
                    else { distanceRows.appendRaw(String(decoding: line, as: UTF8.self)) }
                    let interval = Self.uniform(&rng) * (advertisingInterval.upperBound - advertisingInterval.lowerBound) + advertisingInterval.lowerBound
                    var t = scan.start + Self.uniform(&rng) * interval
                    while t < scan.end {
                        if Self.uniform(&rng) >= packetLoss {
                            let att = mean + channel.sigma * Self.gaussian(&rng)
                            // Nobody hears a node that has left (or not yet arrived), even mid-scan.
                            if att <= maxAttenuation, tx.isPresent(at: t), rx.isPresent(at: t), let slot = tl.slot(at: t) {
                                let rssi = Int((Double(tx.txPower) - att - Double(rx.rssiCorrection)).rounded())
                                events.append((t, tx.index, slot, rssi))
                            }
                        }
                        // BLE adds a random advDelay of 0-10 ms to every advertising event.
                        t += interval + Self.uniform(&rng) * 0.01
                    }
                }
                if events.isEmpty {
                    line.removeAll(keepingCapacity: true)
                    ByteFormat.appendTime(startUnix + scan.start, to: &line)
                    line += [comma, comma, comma]; line += scanText; line += tail; line.append(comma)
                    try emit(startUnix + scan.start)
                    result.emptyScans += 1
                    continue
                }
                events.sort { $0.t < $1.t }
                for e in events {
                    let slot = timelines[e.tx].slots[e.slot]
                    line.removeAll(keepingCapacity: true)
                    ByteFormat.appendTime(startUnix + e.t, to: &line)
                    line.append(comma); line += slot.rpiHex; line.append(comma); line += slot.aemHex; line.append(comma)
                    ByteFormat.appendInt(Int64(e.rssi), to: &line)
                    line += scanText; line += tail; line.append(comma); line += slot.address
                    try emit(startUnix + e.t)
                }
                result.sightings += events.count
            }
            result.scans += timelines[ri].scans.count
            if output == nil { result.sightingsFiles.append((rx.name, writer)) } else { result.streamedReceivers.append(rx.name) }
        }
        for tx in advertisers { result.keyLists.append((tx.name, timelines[tx.index].keys)) }
        result.distances = distanceRows
        result.markers = groundTruthMarkers()
        var nodesCSV = CSVWriter(header: ["node", "role", "tx_power", "rssi_correction", "calibration_confidence", "tx_offset_db", "rx_offset_db", "site"])
        for n in nodes {
            nodesCSV.appendRow([n.name, n.advertises && n.scans ? "both" : (n.advertises ? "advertiser" : "scanner"), String(n.txPower),
                                String(n.rssiCorrection), n.calibrationConfidence.map { String($0.rawValue) } ?? "",
                                Format.fixed(n.txOffset, 2), Format.fixed(n.rxOffset, 2), site ?? ""])
        }
        result.nodes = nodesCSV
        return result
    }

    /// Markers per receiver/transmitter pair, labelled `pair:<rx>/<tx>`: one at the start, then
    /// whenever the distance has moved by `markerResolution` (checked every second while either
    /// node moves) or the pair's presence changes (distance empty while either is absent).
    func groundTruthMarkers() -> [Marker] {
        var markers: [Marker] = []
        let duration = scenario.durationSeconds
        for rx in nodes where rx.scans {
            for tx in nodes where tx.advertises && tx.index != rx.index {
                let label = Marker.pairLabel(receiver: rx.name, transmitter: tx.name)
                var breaks = Set<Double>([0, duration, rx.enter, rx.leave, tx.enter, tx.leave])
                for w in rx.waypoints + tx.waypoints { breaks.insert(w.t) }
                let sorted = breaks.filter { $0 >= 0 && $0 <= duration }.sorted()
                var last: Double?? = .none // .none: nothing emitted yet; .some(nil): absent
                func emit(_ t: Double) {
                    let present = rx.isPresent(at: t) && tx.isPresent(at: t)
                    let d: Double? = present ? ((rx.distance(to: tx, at: t) * 100).rounded() / 100) : nil
                    switch last {
                    case .none: break
                    case .some(let prev):
                        if let p = prev, let d, abs(d - p) < markerResolution { return }
                        if prev == nil, d == nil { return }
                    }
                    markers.append(Marker(time: startUnix + t, label: label, distance: d, note: present ? "" : "absent"))
                    last = .some(d)
                }
                for (k, a) in sorted.enumerated() where a < duration {
                    emit(a)
                    let b = k + 1 < sorted.count ? sorted[k + 1] : duration
                    if rx.isMoving(in: a, b) || tx.isMoving(in: a, b) {
                        var t = a + 1
                        while t < b { emit(t); t += 1 }
                    }
                }
            }
        }
        markers.sort { ($0.time, $0.label) < ($1.time, $1.label) }
        return markers
    }
}

/// A scenario node, resolved: defaults applied, waypoints sorted, times in seconds from start.
struct SimNode {
    let index: Int
    let name: String
    /// The name as rows spell it.
    let nameBytes: [UInt8]
    let advertises: Bool
    let scans: Bool
    let waypoints: [Scenario.Waypoint]
    let enter: Double
    let leave: Double
    let txPower: Int8
    let rssiCorrection: Int
    let calibrationConfidence: CalibrationConfidence?
    let body: Bool
    let heading: Double
    let transmissionRiskLevel: Int?
    let txOffset: Double
    let rxOffset: Double

    init(spec: Scenario.NodeSpec, index: Int, duration: Double, txOffset: Double, rxOffset: Double) throws {
        self.index = index
        name = spec.name
        nameBytes = Array(spec.name.utf8)
        switch spec.role ?? "both" {
        case "both": advertises = true; scans = true
        case "advertiser": advertises = true; scans = false
        case "scanner": advertises = false; scans = true
        case let r: throw ScenarioError.badValue(field: "nodes[\(index)].role", expected: "both, advertiser or scanner", actual: r)
        }
        var wps = spec.waypoints ?? []
        if let p = spec.position {
            guard p.count == 2 else { throw ScenarioError.badValue(field: "nodes[\(index)].position", expected: "[x, y]", actual: "\(p)") }
            wps.insert(Scenario.Waypoint(t: 0, x: p[0], y: p[1]), at: 0)
        }
        guard !wps.isEmpty else {
            throw ScenarioError.badValue(field: "nodes[\(index)]", expected: "a position or waypoints", actual: "neither")
        }
        waypoints = wps.sorted { $0.t < $1.t }
        enter = spec.enter ?? 0
        leave = spec.leave ?? duration
        let tx = spec.txPower ?? -20
        guard BluetoothMetadata.plausibleTxPower.contains(tx) else {
            throw ScenarioError.badValue(field: "nodes[\(index)].txPower", expected: "\(BluetoothMetadata.plausibleTxPower) dBm", actual: "\(tx)")
        }
        txPower = Int8(tx)
        // Whole dB, as gaend's setting and the export's column are.
        let correction = spec.rssiCorrection ?? 0
        guard correction == correction.rounded(), (-100...100).contains(correction) else {
            throw ScenarioError.badValue(field: "nodes[\(index)].rssiCorrection", expected: "a whole number of dB in -100...100", actual: "\(correction)")
        }
        rssiCorrection = Int(correction)
        if let c = spec.calibrationConfidence {
            guard let v = CalibrationConfidence(rawValue: c) else {
                throw ScenarioError.badValue(field: "nodes[\(index)].calibrationConfidence", expected: "0...3", actual: "\(c)")
            }
            calibrationConfidence = v
        } else { calibrationConfidence = nil }
        body = spec.body ?? false
        heading = (spec.heading ?? 0) * .pi / 180
        transmissionRiskLevel = spec.transmissionRiskLevel
        self.txOffset = txOffset
        self.rxOffset = rxOffset
    }

    func isPresent(at t: Double) -> Bool { t >= enter && t < leave }

    func position(at t: Double) -> (x: Double, y: Double) {
        let w = waypoints
        if t <= w[0].t || w.count == 1 { return (w[0].x, w[0].y) }
        if t >= w[w.count - 1].t { return (w[w.count - 1].x, w[w.count - 1].y) }
        var lo = 0, hi = w.count - 1
        while hi - lo > 1 { let m = (lo + hi) / 2; if w[m].t <= t { lo = m } else { hi = m } }
        let a = w[lo], b = w[hi]
        let f = b.t > a.t ? (t - a.t) / (b.t - a.t) : 1
        return (a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f)
    }

    func distance(to other: SimNode, at t: Double) -> Double {
        let p = position(at: t), q = other.position(at: t)
        return ((p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y)).squareRoot()
    }

    /// Whether the node moves anywhere in (a, b).
    func isMoving(in a: Double, _ b: Double) -> Bool {
        for k in 1..<max(waypoints.count, 1) {
            let p = waypoints[k - 1], q = waypoints[k]
            if q.t > a, p.t < b, p.x != q.x || p.y != q.y { return true }
        }
        return false
    }

    /// The facing direction: the direction of motion while moving, else the configured heading.
    func facing(at t: Double) -> Double {
        let p = position(at: t - 0.5), q = position(at: t + 0.5)
        if abs(q.x - p.x) + abs(q.y - p.y) > 1e-6 { return atan2(q.y - p.y, q.x - p.x) }
        return heading
    }

    /// True when this node carries a body and `point` lies behind it.
    func blocks(from point: (x: Double, y: Double), at t: Double) -> Bool {
        guard body else { return false }
        let p = position(at: t), h = facing(at: t)
        return (point.x - p.x) * cos(h) + (point.y - p.y) * sin(h) < 0
    }
}

/// What a simulation produced, ready to be written in the formats real boards export.
public struct SimulationResult {
    public var seed: UInt64
    public var startUnix: Double
    public var channel: ChannelModel
    /// The scenario's name and site label (the site is carried into every file written).
    public var name: String?
    public var site: String?
    public var sightingsFiles: [(node: String, writer: SightingsExport.Writer)] = []
    public var keyLists: [(node: String, keys: [DiagnosisKey])] = []
    public var markers: [Marker] = []
    public var distances = CSVWriter(header: [])
    public var nodes = CSVWriter(header: [])
    public var scans = 0
    public var emptyScans = 0
    public var sightings = 0
    /// Receivers whose sightings went to a SimulationOutput (not held here).
    public var streamedReceivers: [String] = []

    init(seed: UInt64, startUnix: Double, channel: ChannelModel) {
        self.seed = seed; self.startUnix = startUnix; self.channel = channel
    }

    public struct Summary: Codable, Sendable {
        public var name: String?
        public var site: String?
        public var seed: String
        public var start: Double
        public var channel: ChannelModel
        public var scans: Int
        public var emptyScans: Int
        public var sightings: Int
        public var markers: Int
        public var receivers: [String]
        public var transmitters: [String]
    }

    public var summary: Summary {
        Summary(name: name, site: site, seed: String(seed), start: startUnix, channel: channel, scans: scans, emptyScans: emptyScans, sightings: sightings,
                markers: markers.count, receivers: sightingsFiles.map(\.node) + streamedReceivers, transmitters: keyLists.map(\.node))
    }

    /// Writes `dir/`: sightings/<node>.csv (the research export format), keys/<node>.json (the
    /// JSON key list), groundtruth/markers.csv (every pair), groundtruth/pairs/<rx>__<tx>.csv
    /// (one pair each), groundtruth/distances.csv (true distance per scan and transmitter),
    /// groundtruth/nodes.csv (per-node settings and drawn calibration errors), summary.json.
    /// With `daily`, the sightings go to sightings/board=<node>/day=<YYYY-MM-DD>/sightings.csv
    /// instead (DailyLayout: one file per board per UTC day of the row's time, as `gaenctl
    /// sightings export --split daily` writes them).
    /// With `jsonLines`, the sightings are JSON lines (`.jsonl`) instead of CSV.
    public func write(to dir: URL, daily: Bool = false, jsonLines: Bool = false) throws {
        let fm = FileManager.default
        for sub in ["sightings", "keys", "groundtruth/pairs"] {
            try fm.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let ext = jsonLines ? "jsonl" : "csv"
        // The rows in the requested form, each with its time (CSV rows start with it, unquoted).
        func rows(_ w: SightingsExport.Writer) throws -> [(line: String, time: Double)] {
            if jsonLines {
                let writer = SightingsFileWriter(format: .jsonl)
                return try SightingsFile.records(Data(w.csv.text.utf8)).map { (writer.row($0), $0.time) }
            }
            return w.csv.text.split(separator: "\n", omittingEmptySubsequences: true).dropFirst().compactMap { line in
                guard let comma = line.firstIndex(of: ","), let t = Double(line[..<comma]) else { return nil }
                return (line + "\n", t)
            }
        }
        if !streamedReceivers.isEmpty {
            // The sightings and distances were streamed (StreamingSimulationOutput) and are in place.
        } else if daily {
            let files = DailyFiles(root: dir.appendingPathComponent("sightings"), fileName: "sightings.\(ext)",
                                   header: jsonLines ? "" : SightingsExport.header.joined(separator: ",") + "\n")
            for (node, w) in sightingsFiles {
                for r in try rows(w) { try files.append(r.line, board: node, time: r.time) }
            }
            try files.commit()
        } else if jsonLines {
            for (node, w) in sightingsFiles {
                try OutputFile.write(Data(try rows(w).map(\.line).joined().utf8), to: dir.appendingPathComponent("sightings/\(node).jsonl"))
            }
        } else {
            for (node, w) in sightingsFiles { try w.write(to: dir.appendingPathComponent("sightings/\(node).csv")) }
        }
        for (node, keys) in keyLists {
            try OutputFile.write(KeyListFile.encode(keys), to: dir.appendingPathComponent("keys/\(node).json"))
        }
        try MarkersFile.csv(markers, site: site).write(to: dir.appendingPathComponent("groundtruth/markers.csv"))
        var perPair: [String: [Marker]] = [:]
        for m in markers { if let p = m.pair { perPair["\(p.receiver)__\(p.transmitter)", default: []].append(m) } }
        for (name, ms) in perPair { try MarkersFile.csv(ms, site: site).write(to: dir.appendingPathComponent("groundtruth/pairs/\(name).csv")) }
        if streamedReceivers.isEmpty { try distances.write(to: dir.appendingPathComponent("groundtruth/distances.csv")) }
        try nodes.write(to: dir.appendingPathComponent("groundtruth/nodes.csv"))
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(enc.encode(summary), to: dir.appendingPathComponent("summary.json"))
    }
}

/// Where a streaming simulation puts its rows (Simulator.run(output:)).
public protocol SimulationOutput: AnyObject {
    /// A receiver's rows begin (it may have none: a node never present).
    func receiver(_ node: String) throws
    /// One sightings row of `node` (CSV, the export's columns, with its newline) at `time`.
    func sighting(node: String, line: [UInt8], time: Double) throws
    /// One row of groundtruth/distances.csv (with its newline).
    func distance(_ line: [UInt8]) throws
}

/// Writes a streaming simulation's rows into the output directory as they come, in the layout
/// SimulationResult.write uses: sightings/<node>.csv, or the daily layout; and
/// groundtruth/distances.csv. CSV only (JSON lines are converted from the held rows). Each file
/// is written through a 1 MB buffer and renamed into place by `commit`; `discard` drops them.
public final class StreamingSimulationOutput: SimulationOutput {
    let dir: URL
    let daily: DailyFiles?
    var perNode: [String: (file: AtomicOutputFile, buffer: [UInt8])] = [:]
    var distances: (file: AtomicOutputFile, buffer: [UInt8])?

    public init(dir: URL, daily: Bool) throws {
        self.dir = dir
        for sub in ["sightings", "groundtruth"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        self.daily = daily ? DailyFiles(root: dir.appendingPathComponent("sightings"), fileName: "sightings.csv",
                                        header: SightingsExport.header.joined(separator: ",") + "\n") : nil
        let d = try AtomicOutputFile(path: dir.appendingPathComponent("groundtruth/distances.csv").path, durable: false)
        distances = (d, Array("scan_start,receiver,transmitter,distance,expected_attenuation,site\n".utf8))
    }

    /// One file per receiver, even without rows (the header alone), as the held result writes
    /// them; the daily layout has files only for days with rows.
    public func receiver(_ node: String) throws {
        guard daily == nil, perNode[node] == nil else { return }
        let f = try AtomicOutputFile(path: dir.appendingPathComponent("sightings/\(node).csv").path, durable: false)
        perNode[node] = (f, Array((SightingsExport.header.joined(separator: ",") + "\n").utf8))
    }

    public func sighting(node: String, line: [UInt8], time: Double) throws {
        if let daily { try daily.append(bytes: line, board: node, time: time); return }
        if perNode[node] == nil { try receiver(node) }
        perNode[node]!.buffer += line
        if perNode[node]!.buffer.count >= 1 << 20 {
            try perNode[node]!.file.write(perNode[node]!.buffer)
            perNode[node]!.buffer.removeAll(keepingCapacity: true)
        }
    }

    public func distance(_ line: [UInt8]) throws {
        distances!.buffer += line
        if distances!.buffer.count >= 1 << 20 {
            try distances!.file.write(distances!.buffer)
            distances!.buffer.removeAll(keepingCapacity: true)
        }
    }

    public func commit() throws {
        try daily?.commit()
        for node in perNode.keys.sorted() {
            let o = perNode[node]!
            if !o.buffer.isEmpty { try o.file.write(o.buffer) }
            try o.file.commit()
        }
        perNode = [:]
        if let d = distances {
            if !d.buffer.isEmpty { try d.file.write(d.buffer) }
            try d.file.commit()
            distances = nil
        }
    }

    public func discard() {
        daily?.discard()
        for o in perNode.values { o.file.discard() }
        perNode = [:]
        distances?.file.discard()
        distances = nil
    }

    deinit { discard() }
}
