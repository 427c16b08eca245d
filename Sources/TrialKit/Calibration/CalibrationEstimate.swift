import Foundation
import PlatformSupport
import TrialFormats

/// Per-device calibration estimated from a trial's own readings at known distances: how much
/// attenuation each device adds when it receives and when it transmits, beyond the site's
/// channel, and the RSSI correction and TX power that would remove it.
///
/// The model, fitted by least squares over every reading:
///
///     attenuation = a[site] + s[site] * log10(distance) + R[receiver] + T[transmitter] + e
///
/// Each site has its own channel (a train is not an office); a device is the board (gaend's own
/// trials) or the phone model (DP-3T's, `receiver_model`/`transmitter_model`). Only differences
/// between devices are identifiable (a shift of every R is a shift of every a), so the offsets
/// are relative: to the mean device (R and T each sum to zero) or to a reference device (its R
/// and T are 0, as Google's calibration measured every phone against a reference phone).
/// Readings within a pair are correlated (the same bodies, walls and antennas for minutes),
/// so the standard errors are clustered by pair (site, receiver, transmitter): the sandwich
/// estimator with the small-sample factor C / (C - 1).
///
/// Readings are lost at long range when they are weaker than the receiver can hear, and more
/// of a weak device's than of a strong one's; that censoring pulls the offsets towards zero.
/// `maximumDistance` keeps the near readings, where little is lost.
public struct CalibrationEstimate: Sendable, Equatable {
    public enum Grouping: String, Sendable, CaseIterable {
        /// Each board (the `receiver`/`transmitter` columns).
        case board
        /// Each phone model (`receiver_model`/`transmitter_model`, as `trial import dp3t` writes).
        case model
    }

    public struct Options: Sendable {
        public var grouping: Grouping = .board
        /// The device whose offsets are 0; nil: the mean device.
        public var reference: String?
        /// Only these sites (empty: every site).
        public var sites: Set<String> = []
        /// Only readings at most this far (metres).
        public var maximumDistance: Double?
        /// A device with fewer readings in a role gets confidence 0 ("too few readings").
        public var minimumRows = 100
        public init() {}
    }

    public struct Device: Sendable, Equatable {
        public var name: String
        public var receiverRows: Int
        public var transmitterRows: Int
        /// dB of attenuation the device adds when it receives (positive: it hears weaker than
        /// the reference); nil when it never received.
        public var receiverOffset: Double?
        public var receiverStandardError: Double?
        /// dB of attenuation the device adds when it transmits (positive: its packets arrive
        /// weaker than its advertised TX power says); nil when it never transmitted.
        public var transmitterOffset: Double?
        public var transmitterStandardError: Double?
        /// What the rows say the device used (the most common value when it changed).
        public var currentRssiCorrection: Int?
        public var currentTxPower: Int?
        /// current + receiver offset, and current - transmitter offset, to whole dB.
        public var proposedRssiCorrection: Int?
        public var proposedTxPower: Int?
        /// The framework's levels 0 (lowest) ... 3 (high), from the larger standard error.
        public var confidence: Int
        public var notes: [String]
    }

    public struct Channel: Sendable, Equatable {
        public var site: String
        public var rows: Int
        /// The site's channel for the mean (or reference) device.
        public var attenuationAt1m: Double
        public var slopePerDecade: Double
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public var grouping: Grouping
    public var reference: String?
    public var devices: [Device]
    public var channels: [Channel]
    public var rows: Int
    /// Rows left out: another site, beyond the distance, without a distance.
    public var rowsSkipped: Int
    public var clusters: Int
    /// Residual standard deviation (dB).
    public var sigma: Double

    /// Confidence from a standard error: gaenctl's own rule, stated in docs/trial.md.
    public static func confidence(standardError se: Double) -> Int {
        se <= 0.5 ? 3 : se <= 1 ? 2 : se <= 2 ? 1 : 0
    }
}

// MARK: - Reading the rows

extension CalibrationEstimate {
    /// One reading as the fit needs it.
    struct Row {
        var site: String
        var receiver: String
        var transmitter: String
        var distance: Double
        var attenuation: Double
        var rssiCorrection: Int?
        var txPower: Int?
    }

    /// Every usable row of the attenuation files (a report's attenuation.csv, `trial import
    /// dp3t`'s output; `.csv.gz` inflated), in order. Returns the rows skipped.
    static func forEachRow(_ urls: [URL], options: Options, _ body: (Row) throws -> Void) throws -> Int {
        var skipped = 0
        // Model names as the calibration table compares them (case, spaces, a dual-SIM suffix):
        // `SM-G960F/DS` is `SM-G960F`, shown as first written.
        var models: [String: String] = [:]
        func device(_ name: String) -> String {
            guard options.grouping == .model else { return name }
            let key = CalibrationTable.normalise(name)
            if let shown = models[key] { return shown }
            models[key] = name
            return name
        }
        for url in urls {
            let csv = try CSVReader(contentsOf: url)
            let rxName = options.grouping == .model ? "receiver_model" : "receiver"
            let txName = options.grouping == .model ? "transmitter_model" : "transmitter"
            let rx = try csv.requireColumn(rxName), tx = try csv.requireColumn(txName)
            let distance = try csv.requireColumn("distance"), attenuation = try csv.requireColumn("attenuation")
            let site = csv.column("site") ?? csv.column("scenario")
            let correction = csv.column("rssi_correction"), txPower = csv.column("tx_power")
            let table = csv.column("calibration_table")
            try csv.forEachRow { row in
                // Under DP-3T's convention the row's TX is the receiver's and its correction the
                // transmitter's: the current values would be read for the wrong device.
                if let table, row.string(table).contains("DP-3T convention") {
                    throw Invalid("\(csv.file):\(row.line): rows imported with --calibration-convention dp3t; import them with the framework's convention (the default) to estimate a calibration")
                }
                let s = site.map { row.string($0) } ?? ""
                guard let d = try row.double(distance, column: "distance") else { skipped += 1; return }
                guard d >= 0 else { throw Invalid("\(csv.file):\(row.line): distance: expected metres >= 0, got \(d)") }
                if !options.sites.isEmpty, !options.sites.contains(s) { skipped += 1; return }
                if let m = options.maximumDistance, d > m { skipped += 1; return }
                let a = try row.requireDouble(attenuation, column: "attenuation")
                let r = device(row.string(rx)), t = device(row.string(tx))
                guard !r.isEmpty, !t.isEmpty else {
                    throw Invalid("\(csv.file):\(row.line): empty \(r.isEmpty ? rxName : txName)")
                }
                try body(Row(site: s, receiver: r, transmitter: t, distance: d, attenuation: a,
                             rssiCorrection: try correction.flatMap { try row.int($0, column: "rssi_correction") },
                             txPower: try txPower.flatMap { try row.int($0, column: "tx_power") }))
            }
        }
        return skipped
    }
}

// MARK: - The fit

extension CalibrationEstimate {
    /// Reads the files three times (names, normal equations, residuals per pair): memory is
    /// the devices and pairs, not the rows.
    public static func estimate(_ urls: [URL], options: Options = Options()) throws -> CalibrationEstimate {
        // Pass 1: the sites, devices, pairs and the calibration the rows carry.
        var sites: [String: Int] = [:], receivers: [String: Int] = [:], transmitters: [String: Int] = [:]
        var siteNames: [String] = [], rxNames: [String] = [], txNames: [String] = []
        var siteRows: [Int] = [], rxRows: [Int] = [], txRows: [Int] = []
        var siteDistances: [Set<Double>] = []
        var corrections: [[Int: Int]] = [], txPowers: [[Int: Int]] = []
        var pairs: [String: Int] = [:]
        var components = UnionFind()
        func index(_ name: String, _ map: inout [String: Int], _ names: inout [String]) -> Int {
            if let i = map[name] { return i }
            map[name] = names.count; names.append(name); return names.count - 1
        }
        var rows = 0
        let skipped = try forEachRow(urls, options: options) { row in
            let s = index(row.site, &sites, &siteNames), r = index(row.receiver, &receivers, &rxNames), t = index(row.transmitter, &transmitters, &txNames)
            if s == siteRows.count { siteRows.append(0); siteDistances.append([]) }
            if r == rxRows.count { rxRows.append(0); corrections.append([:]) }
            if t == txRows.count { txRows.append(0); txPowers.append([:]) }
            siteRows[s] += 1; rxRows[r] += 1; txRows[t] += 1
            if siteDistances[s].count < 2 { siteDistances[s].insert(row.distance) }
            if let c = row.rssiCorrection { corrections[r][c, default: 0] += 1 }
            if let p = row.txPower { txPowers[t][p, default: 0] += 1 }
            let key = "\(row.site)\u{0}\(row.receiver)\u{0}\(row.transmitter)"
            if pairs[key] == nil { pairs[key] = pairs.count }
            components.union("r:" + row.receiver, "t:" + row.transmitter)
            rows += 1
        }
        guard rows > 0 else { throw Invalid("no readings with a distance\(options.sites.isEmpty ? "" : " at the sites given")\(options.maximumDistance == nil ? "" : " within the distance given")") }
        for (s, d) in siteDistances.enumerated() where d.count < 2 {
            throw Invalid("site \(TextSafety.quoted(siteNames[s])): every reading at one distance, so its channel's slope cannot be fitted and the devices cannot be told from it")
        }
        // A receiver's offset is told from a transmitter's only through the pairs linking them:
        // where the receivers and transmitters fall into groups that never heard one another,
        // each group's offsets float against the others' (a shift up in one group's receivers and
        // down in its transmitters changes no reading).
        let groups = components.groups()
        if groups.count > 1 {
            let described = groups.prefix(4).map { g in "{" + g.sorted().prefix(6).map { name in
                "\(name.hasPrefix("r:") ? "receiver" : "transmitter") \(TextSafety.escaped(String(name.dropFirst(2))))"
            }.joined(separator: ", ") + (g.count > 6 ? ", ..." : "") + "}" }
            throw Invalid("the receivers and transmitters fall into \(groups.count) groups that never heard one another (\(described.joined(separator: "; "))\(groups.count > 4 ? "; ..." : "")): their offsets cannot be compared; estimate each group alone (--site) or add readings that link them")
        }
        if let reference = options.reference {
            guard receivers[reference] != nil, transmitters[reference] != nil else {
                throw Invalid("reference \(TextSafety.quoted(reference)) must have received and transmitted; known \(options.grouping.rawValue)s: \(Set(rxNames + txNames).sorted().map { TextSafety.escaped($0) }.joined(separator: ", "))")
            }
        }

        // Parameters: per site its intercept and slope, then each receiver's R, then each transmitter's T.
        let S = siteNames.count, nR = rxNames.count, nT = txNames.count
        let p = 2 * S + nR + nT
        func rIndex(_ r: Int) -> Int { 2 * S + r }
        func tIndex(_ t: Int) -> Int { 2 * S + nR + t }
        func design(_ row: Row) -> ([Int], [Double]) {
            let s = sites[row.site]!
            return ([2 * s, 2 * s + 1, rIndex(receivers[row.receiver]!), tIndex(transmitters[row.transmitter]!)],
                    [1, log10(max(row.distance, 0.1)), 1, 1])
        }

        // Pass 2: the normal equations.
        var xtx = [Double](repeating: 0, count: p * p), xty = [Double](repeating: 0, count: p)
        _ = try forEachRow(urls, options: options) { row in
            let (idx, x) = design(row)
            for a in 0..<4 {
                xty[idx[a]] += x[a] * row.attenuation
                for b in 0..<4 { xtx[idx[a] * p + idx[b]] += x[a] * x[b] }
            }
        }
        // Two constraints pick one solution among those that fit equally well (R shifted
        // against a, T against a): the penalty reaches 0 without changing any residual, so
        // M^-1 X'y is exactly the constrained least-squares solution whatever its weight.
        var constraints: [[Double]] = [[Double](repeating: 0, count: p), [Double](repeating: 0, count: p)]
        if let reference = options.reference {
            constraints[0][rIndex(receivers[reference]!)] = 1
            constraints[1][tIndex(transmitters[reference]!)] = 1
        } else {
            for r in 0..<nR { constraints[0][rIndex(r)] = 1 }
            for t in 0..<nT { constraints[1][tIndex(t)] = 1 }
        }
        let weight = (0..<p).map { xtx[$0 * p + $0] }.max() ?? 1
        var m = xtx
        for c in constraints {
            for i in 0..<p where c[i] != 0 { for j in 0..<p where c[j] != 0 { m[i * p + j] += weight * c[i] * c[j] } }
        }
        let factor: Cholesky
        switch Cholesky.factor(m, p) {
        case .success(let f): factor = f
        case .failure(let undetermined):
            let j = undetermined.index
            let what = j < 2 * S ? "site \(TextSafety.quoted(siteNames[j / 2]))'s \(j % 2 == 0 ? "channel" : "slope")"
                : j < 2 * S + nR ? "receiver \(TextSafety.quoted(rxNames[j - 2 * S]))" : "transmitter \(TextSafety.quoted(txNames[j - 2 * S - nR]))"
            throw Invalid("the readings do not determine the offsets: \(what) cannot be told apart from the others (a site whose devices appear nowhere else, or a device heard by too few others); estimate the sites alone (--site) or add readings that link them")
        }
        let beta = factor.solve(xty)
        let g = factor.inverse()

        // Pass 3: residuals, summed per pair into the sandwich's score vectors. A pair's rows
        // share their site, receiver and transmitter, so its score has four entries: the sum of
        // its residuals (intercept, R and T) and of log-distance times residual (slope).
        var pairIndex: [(site: Int, receiver: Int, transmitter: Int)] = Array(repeating: (0, 0, 0), count: pairs.count)
        var residualSum = [Double](repeating: 0, count: pairs.count), slopeSum = [Double](repeating: 0, count: pairs.count)
        var rss = 0.0
        _ = try forEachRow(urls, options: options) { row in
            let (idx, x) = design(row)
            var fitted = 0.0
            for a in 0..<4 { fitted += x[a] * beta[idx[a]] }
            let e = row.attenuation - fitted
            rss += e * e
            let c = pairs["\(row.site)\u{0}\(row.receiver)\u{0}\(row.transmitter)"]!
            pairIndex[c] = (idx[0] / 2, idx[2], idx[3])
            residualSum[c] += e
            slopeSum[c] += x[1] * e
        }
        let clusters = pairs.count
        let smallSample = clusters > 1 ? Double(clusters) / Double(clusters - 1) : 1
        // Var(beta_j) = sum over pairs of (G score)_j^2; only the device parameters are needed.
        var variance = [Double](repeating: 0, count: p)
        for c in 0..<clusters {
            let (site, r, t) = pairIndex[c]
            for j in (2 * S)..<p {
                let row = j * p
                let u = (g[row + 2 * site] + g[row + r] + g[row + t]) * residualSum[c] + g[row + 2 * site + 1] * slopeSum[c]
                variance[j] += u * u
            }
        }
        let dof = max(rows - (p - 2), 1)
        let sigma = (rss / Double(dof)).squareRoot()

        func mode(_ counts: [Int: Int]) -> (value: Int?, note: String?) {
            guard let best = counts.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }) else { return (nil, nil) }
            guard counts.count > 1 else { return (best.key, nil) }
            let others = counts.filter { $0.key != best.key }.sorted { $0.key < $1.key }.map { "\($0.key) in \($0.value) rows" }
            return (best.key, "varied: \(best.key) in \(best.value) rows, " + others.joined(separator: ", "))
        }
        /// A device's estimate in one role (parameter `j`: its receiver or transmitter offset): the
        /// offset, its standard error, the setting its rows used and the one proposed, the used one
        /// moved by the whole-dB offset (`sign` +1: the RSSI correction adds it, -1: the TX power
        /// takes it away). A setting that varied is noted.
        func role(_ j: Int, setting: String, used: [Int: Int], sign: Int,
                  notes: inout [String]) -> (offset: Double, standardError: Double, current: Int?, proposed: Int?) {
            let (current, note) = mode(used)
            if let note { notes.append("\(setting) \(note)") }
            return (beta[j], (variance[j] * smallSample).squareRoot(), current, current.map { $0 + sign * Int(beta[j].rounded()) })
        }
        var devices: [Device] = []
        for name in Set(rxNames + txNames).sorted(by: NaturalOrder.less) {
            var d = Device(name: name, receiverRows: 0, transmitterRows: 0, confidence: 0, notes: [])
            var errors: [Double] = []
            if let r = receivers[name] {
                let e = role(rIndex(r), setting: "rssi_correction", used: corrections[r], sign: 1, notes: &d.notes)
                d.receiverRows = rxRows[r]
                d.receiverOffset = e.offset; d.receiverStandardError = e.standardError; errors.append(e.standardError)
                d.currentRssiCorrection = e.current; d.proposedRssiCorrection = e.proposed
            }
            if let t = transmitters[name] {
                let e = role(tIndex(t), setting: "tx_power", used: txPowers[t], sign: -1, notes: &d.notes)
                d.transmitterRows = txRows[t]
                d.transmitterOffset = e.offset; d.transmitterStandardError = e.standardError; errors.append(e.standardError)
                d.currentTxPower = e.current; d.proposedTxPower = e.proposed
            }
            d.confidence = Self.confidence(standardError: errors.max() ?? .infinity)
            let fewest = [receivers[name] == nil ? nil : d.receiverRows, transmitters[name] == nil ? nil : d.transmitterRows].compactMap { $0 }.min() ?? 0
            if fewest < options.minimumRows {
                d.confidence = 0
                d.notes.append("too few readings (\(fewest) < \(options.minimumRows))")
            }
            if name == options.reference { d.notes.append("reference") }
            devices.append(d)
        }
        let channels = (0..<S).map { s in
            Channel(site: siteNames[s], rows: siteRows[s], attenuationAt1m: beta[2 * s], slopePerDecade: beta[2 * s + 1])
        }
        return CalibrationEstimate(grouping: options.grouping, reference: options.reference, devices: devices, channels: channels,
                                   rows: rows, rowsSkipped: skipped, clusters: clusters, sigma: sigma)
    }
}

// MARK: - Output

extension CalibrationEstimate {
    /// The proposed table in the layout of Google's August 2020 calibration table (`oem,device,
    /// model,rssi correction,tx,calibration confidence`), which `trial import dp3t --calibration`
    /// reads: one row per device with both a proposed correction and a proposed TX power.
    public func calibrationTableCSV(oem: String) -> String {
        var csv = CSVWriter(header: ["oem", "device", " model", "rssi correction", "tx", "calibration confidence"])
        for d in devices {
            guard let c = d.proposedRssiCorrection, let t = d.proposedTxPower else { continue }
            csv.appendRow([oem, d.name, d.name, String(c), String(t), String(d.confidence)])
        }
        return csv.text
    }

    /// Every device with its offsets, standard errors, current and proposed values.
    public func offsetsCSV() -> String {
        var csv = CSVWriter(header: ["device", "receiver_rows", "transmitter_rows", "receiver_offset_db", "receiver_se_db",
                                     "transmitter_offset_db", "transmitter_se_db", "current_rssi_correction", "proposed_rssi_correction",
                                     "current_tx_power", "proposed_tx_power", "calibration_confidence", "note"])
        func f(_ v: Double?) -> String { v.map { Format.fixed($0, 2) } ?? "" }
        func i(_ v: Int?) -> String { v.map(String.init) ?? "" }
        for d in devices {
            csv.appendRow([d.name, String(d.receiverRows), String(d.transmitterRows), f(d.receiverOffset), f(d.receiverStandardError),
                           f(d.transmitterOffset), f(d.transmitterStandardError), i(d.currentRssiCorrection), i(d.proposedRssiCorrection),
                           i(d.currentTxPower), i(d.proposedTxPower), String(d.confidence), d.notes.joined(separator: "; ")])
        }
        return csv.text
    }

    public func markdown(inputs: [String]) -> String {
        // Names come from the files: printed (gaenctl prints the markdown) with control
        // characters escaped, and a `|` cannot split a table cell.
        func cell(_ name: String) -> String { TextSafety.escaped(name).replacingOccurrences(of: "|", with: "\\|") }
        var md = "# Calibration estimated from the trial's readings\n\n"
        md += "\(rows) readings (\(rowsSkipped) left out) of \(clusters) pairs from \(inputs.count) file(s); one device per \(grouping.rawValue); "
        md += reference.map { "offsets relative to the reference \(TextSafety.quoted($0)).\n\n" } ?? "offsets relative to the mean device.\n\n"
        md += "Model: attenuation = a[site] + s[site] log10(d) + R[receiver] + T[transmitter]; residual sigma \(Format.fixed(sigma, 2)) dB. "
        md += "Standard errors clustered by pair. Proposed rssi correction = current + R; proposed TX power = current - T (whole dB).\n\n"
        md += "| site | readings | A(1 m) dB | slope dB/decade |\n| --- | ---: | ---: | ---: |\n"
        for c in channels { md += "| \(c.site.isEmpty ? "(none)" : cell(c.site)) | \(c.rows) | \(Format.fixed(c.attenuationAt1m, 1)) | \(Format.fixed(c.slopePerDecade, 1)) |\n" }
        md += "\n| device | R (dB) | T (dB) | rssi correction | tx | confidence | note |\n| --- | ---: | ---: | --- | --- | ---: | --- |\n"
        func pm(_ v: Double?, _ se: Double?) -> String { v.map { "\(Format.fixed($0, 1)) ± \(Format.fixed(se ?? .nan, 2))" } ?? "" }
        func change(_ a: Int?, _ b: Int?) -> String { a.map { "\($0) → \(b.map(String.init) ?? "")" } ?? "" }
        for d in devices {
            md += "| \(cell(d.name)) | \(pm(d.receiverOffset, d.receiverStandardError)) | \(pm(d.transmitterOffset, d.transmitterStandardError)) | "
            md += "\(change(d.currentRssiCorrection, d.proposedRssiCorrection)) | \(change(d.currentTxPower, d.proposedTxPower)) | \(d.confidence) | \(d.notes.joined(separator: "; ")) |\n"
        }
        return md
    }
}

// MARK: - Small linear algebra

/// Components of a graph given by its edges (receivers and transmitters linked by their pairs).
struct UnionFind {
    private var parent: [String: String] = [:]
    mutating func find(_ x: String) -> String {
        var root = x
        while let p = parent[root], p != root { root = p }
        var y = x
        while let p = parent[y], p != root { parent[y] = root; y = p }
        if parent[x] == nil { parent[x] = x }
        return root
    }
    mutating func union(_ a: String, _ b: String) {
        let ra = find(a), rb = find(b)
        if ra != rb { parent[ra] = rb }
    }
    mutating func groups() -> [[String]] {
        var out: [String: [String]] = [:]
        for x in Array(parent.keys) { out[find(x), default: []].append(x) }
        return out.values.sorted { $0.count > $1.count || ($0.count == $1.count && $0.min()! < $1.min()!) }
    }
}

/// A symmetric positive definite matrix's Cholesky factor (row-major, lower). The systems here
/// have one row per site parameter and device (tens to a few hundred): dense is simplest.
struct Cholesky {
    let n: Int
    private let l: [Double]

    private init(n: Int, l: [Double]) { self.n = n; self.l = l }

    /// The parameter at which the matrix turned out not positive definite: one the data do not determine.
    struct Undetermined: Error { let index: Int }

    static func factor(_ a: [Double], _ n: Int) -> Result<Cholesky, Undetermined> {
        var l = [Double](repeating: 0, count: n * n)
        let scale = (0..<n).map { a[$0 * n + $0] }.max() ?? 1
        for i in 0..<n {
            for j in 0...i {
                var sum = a[i * n + j]
                for k in 0..<j { sum -= l[i * n + k] * l[j * n + k] }
                if i == j {
                    guard sum > scale * 1e-10 else { return .failure(Undetermined(index: i)) }
                    l[i * n + i] = sum.squareRoot()
                } else {
                    l[i * n + j] = sum / l[j * n + j]
                }
            }
        }
        return .success(Cholesky(n: n, l: l))
    }

    func solve(_ b: [Double]) -> [Double] {
        var y = b
        for i in 0..<n {
            var sum = y[i]
            for k in 0..<i { sum -= l[i * n + k] * y[k] }
            y[i] = sum / l[i * n + i]
        }
        for i in stride(from: n - 1, through: 0, by: -1) {
            var sum = y[i]
            for k in (i + 1)..<n { sum -= l[k * n + i] * y[k] }
            y[i] = sum / l[i * n + i]
        }
        return y
    }

    /// The inverse, row-major.
    func inverse() -> [Double] {
        var out = [Double](repeating: 0, count: n * n)
        var e = [Double](repeating: 0, count: n)
        for j in 0..<n {
            e[j] = 1
            let column = solve(e)
            e[j] = 0
            for i in 0..<n { out[i * n + j] = column[i] }
        }
        return out
    }
}
