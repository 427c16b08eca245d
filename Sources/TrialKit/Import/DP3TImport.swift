import Foundation
import TrialFormats

/// Google's Exposure Notifications calibration table: the CSV Google published for the
/// framework, one row per device. As published its header is long, e.g.
/// `manufacturer,device,model,rssi correction (android rssi + rssi correction = iphone rssi),
/// tx (as iphone would report for same power),has direct measurement(yes/no)`, and the wording
/// varies between releases, so columns are found by the start of their name (case, spaces and
/// punctuation ignored): the model (`model`, else `device`), `rssi correction...`, `tx...`, and
/// optionally `oem`/`manufacturer`, `calibration confidence`, `has direct measurement...`.
/// Rows without a direct measurement carry generic values (of the manufacturer or of all
/// devices): `Entry.measured` tells them apart, and the importers report how many rows used them.
public struct CalibrationTable: Sendable {
    public struct Entry: Sendable, Equatable {
        public var oem: String
        public var model: String
        public var rssiCorrection: Double
        public var tx: Double
        /// `has direct measurement`: true (yes), false (no: generic values), nil (the table has no such column).
        public var measured: Bool?
        /// `calibration confidence`: the framework's levels, 0 (lowest) ... 3 (high); nil without the column.
        public var confidence: Int?

        public init(oem: String, model: String, rssiCorrection: Double, tx: Double, measured: Bool? = nil, confidence: Int? = nil) {
            self.oem = oem; self.model = model; self.rssiCorrection = rssiCorrection; self.tx = tx; self.measured = measured
            self.confidence = confidence
        }
    }

    public private(set) var byModel: [String: Entry] = [:]
    /// Whether the table has a calibration confidence column.
    public private(set) var hasConfidenceColumn = false
    /// The table's own row for devices it does not list, when it has one (model or device `default`).
    public private(set) var defaultRow: Entry?
    /// Every row in table order (the fallbacks take medians over them).
    public private(set) var entries: [Entry] = []
    /// Where the table came from (its file) and the date it was published, when known (from the
    /// file name: `...2020-06-13...`, `...20200613...` or `...2020-06...`).
    public var source: String = ""
    public var date: String?
    /// Whether the table says which rows were measured.
    public private(set) var hasMeasuredColumn = false

    /// A model name as trial tables and the calibration table spell it, made comparable: case,
    /// spaces and a trailing dual-SIM `/DS` (or ` DS`, `_DS`) ignored.
    public static func normalise(_ model: String) -> String {
        var m = model.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["/DS", " DS", "_DS", "-DS"] where m.hasSuffix(suffix) { m.removeLast(suffix.count) }
        return m.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    static func key(_ header: String) -> String {
        header.lowercased().filter { ($0.isLetter || $0.isNumber) && $0.isASCII }
    }

    /// The date in a calibration file's name, YYYY-MM-DD (a month alone gives its first day).
    public static func date(inFileName name: String) -> String? {
        let chars = Array(name)
        func num(_ i: Int, _ n: Int) -> Int? {
            guard i >= 0, i + n <= chars.count, chars[i..<(i + n)].allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(String(chars[i..<(i + n)]))
        }
        var i = 0
        while i + 4 <= chars.count {
            if let y = num(i, 4), (2019...2099).contains(y), num(i - 1, 1) == nil {
                let sep = i + 4 < chars.count && (chars[i + 4] == "-" || chars[i + 4] == "_") ? 1 : 0
                if let m = num(i + 4 + sep, 2), (1...12).contains(m) {
                    let dayAt = i + 6 + 2 * sep
                    let d = (sep == 0 || (dayAt - 1 < chars.count && (chars[dayAt - 1] == "-" || chars[dayAt - 1] == "_"))) ? num(dayAt, 2) : nil
                    let day = d.flatMap { (1...31).contains($0) && num(dayAt + 2, 1) == nil ? $0 : nil }
                    if sep == 0 && day == nil { i += 1; continue }
                    func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
                    return "\(y)-\(two(m))-\(two(day ?? 1))"
                }
            }
            i += 1
        }
        return nil
    }

    public init(_ reader: CSVReader) throws {
        let keys = reader.header.map(Self.key)
        func find(_ prefixes: [String]) -> Int? {
            for p in prefixes { if let i = keys.firstIndex(where: { $0 == p }) { return i } }
            for p in prefixes { if let i = keys.firstIndex(where: { $0.hasPrefix(p) }) { return i } }
            return nil
        }
        func require(_ prefixes: [String], _ label: String) throws -> Int {
            guard let i = find(prefixes) else { throw CSVError.missingColumn(file: reader.file, column: label, header: reader.header) }
            return i
        }
        let cModel = try require(["model", "androidosbuildmodel", "devicemodel", "device"], "model")
        let cCorr = try require(["rssicorrection"], "rssi correction")
        let cTx = try require(["tx"], "tx")
        let cOem = find(["oem", "manufacturer", "brand"])
        let cMeasured = find(["hasdirectmeasurement", "directmeasurement", "measured"])
        let cConfidence = find(["calibrationconfidence", "confidence"])
        let cDevice = keys.firstIndex(of: "device")
        hasMeasuredColumn = cMeasured != nil
        hasConfidenceColumn = cConfidence != nil
        source = reader.file
        date = Self.date(inFileName: URL(fileURLWithPath: reader.file).lastPathComponent)
        try reader.forEachRow { row in
            let model = Self.normalise(row.string(cModel))
            guard !model.isEmpty, let corr = try row.double(cCorr, column: reader.header[cCorr]),
                  let tx = try row.double(cTx, column: reader.header[cTx]) else { return }
            var measured: Bool?
            if let cMeasured {
                switch row.string(cMeasured).trimmingCharacters(in: .whitespaces).lowercased() {
                case "yes", "y", "true", "1": measured = true
                case "no", "n", "false", "0", "": measured = false
                case let other:
                    throw CSVError.badValue(file: reader.file, line: row.line, column: reader.header[cMeasured], expected: "yes or no", actual: other)
                }
            }
            var confidence: Int?
            if let cConfidence {
                let text = row.string(cConfidence).trimmingCharacters(in: .whitespaces)
                guard let v = Int(text), (0...3).contains(v) else {
                    throw CSVError.badValue(file: reader.file, line: row.line, column: reader.header[cConfidence], expected: "a calibration confidence 0...3", actual: text)
                }
                confidence = v
            }
            let entry = Entry(oem: cOem.map { row.string($0) } ?? "", model: row.string(cModel), rssiCorrection: corr, tx: tx, measured: measured, confidence: confidence)
            if model == "DEFAULT" || cDevice.map({ Self.normalise(row.string($0)) == "DEFAULT" }) == true {
                if defaultRow == nil { defaultRow = entry }
                return
            }
            entries.append(entry)
            // The first entry of a model wins (the table lists a model once per manufacturer at most).
            if byModel[model] == nil { byModel[model] = entry }
        }
    }

    public func entry(_ model: String) -> Entry? { byModel[Self.normalise(model)] }

    /// The values for devices the table does not list: its own default row, else the median
    /// RSSI correction and median TX over every row, to whole dB as the framework applies them
    /// (stated as such).
    public var defaultEntry: (entry: Entry, how: String) {
        if let d = defaultRow { return (d, "the table's default row") }
        let corr = Statistics.median(entries.map(\.rssiCorrection)).rounded(), tx = Statistics.median(entries.map(\.tx)).rounded()
        return (Entry(oem: "", model: "default", rssiCorrection: corr, tx: tx, measured: false, confidence: 0),
                "the median of the table's \(entries.count) rows (it has no default row)")
    }

    /// The manufacturer of a model the table does not list: the one `given` names for it, else
    /// the table's manufacturer whose model names share the longest start with it (at least 3
    /// characters, `SM-` for Samsung), when exactly one does.
    public func manufacturer(of model: String, given: [String: String] = [:]) -> (oem: String, how: String)? {
        let m = Self.normalise(model)
        if let g = given.first(where: { Self.normalise($0.key) == m }) { return (g.value, "as given") }
        var best = 0
        var oems: Set<String> = []
        for e in entries where !e.oem.isEmpty {
            let k = zip(m, Self.normalise(e.model)).prefix { $0 == $1 }.count
            if k > best { best = k; oems = [e.oem.lowercased()] } else if k == best { oems.insert(e.oem.lowercased()) }
        }
        guard best >= 3, oems.count == 1, let oem = oems.first else { return nil }
        return (oem, "the table's \(oem) models start like it ('\(String(m.prefix(best)))')")
    }

    /// A manufacturer's values: the median RSSI correction and TX over its rows, to whole dB.
    public func manufacturerEntry(_ oem: String) -> Entry? {
        let rows = entries.filter { $0.oem.lowercased() == oem.lowercased() }
        guard !rows.isEmpty else { return nil }
        return Entry(oem: oem, model: "\(oem) (median of \(rows.count) rows)", rssiCorrection: Statistics.median(rows.map(\.rssiCorrection)).rounded(),
                     tx: Statistics.median(rows.map(\.tx)).rounded(), measured: false, confidence: 1)
    }

    /// "en-calibration-2020-12.csv (2020-12-01)": the table as output rows and figures name it.
    public var name: String {
        URL(fileURLWithPath: source).lastPathComponent + (date.map { " (\($0))" } ?? "")
    }

    public enum SelectionError: Error, CustomStringConvertible {
        case undated(file: String)
        case needDate(dates: [String])
        case noneBefore(date: String, dates: [String])
        case badDate(String)

        public var description: String {
            switch self {
            case .undated(let f): return "\(f): no date in the file name (YYYY-MM-DD); with several tables each needs one to be chosen by --calibration-date"
            case .needDate(let d): return "several calibration tables (\(d.joined(separator: ", "))): pick one with --calibration-date YYYY-MM-DD (the table in force that day)"
            case .noneBefore(let date, let d): return "no calibration table dated on or before \(date) (tables: \(d.joined(separator: ", ")))"
            case .badDate(let s): return "--calibration-date: expected YYYY-MM-DD, got '\(s)'"
            }
        }
    }

    /// The table in force on `date` (the newest dated on or before it); with one table and no
    /// date, that table.
    public static func select(_ tables: [CalibrationTable], date: String?) throws -> CalibrationTable {
        if let date {
            guard date.count == 10, (try? TimeInput.parse(date)) != nil else { throw SelectionError.badDate(date) }
        }
        if tables.count == 1, date == nil { return tables[0] }
        for t in tables where t.date == nil { throw SelectionError.undated(file: t.source) }
        let dated = tables.sorted { $0.date! < $1.date! }
        guard let date else { throw SelectionError.needDate(dates: dated.map { $0.date! }) }
        guard let pick = dated.last(where: { $0.date! <= date }) else { throw SelectionError.noneBefore(date: date, dates: dated.map { $0.date! }) }
        return pick
    }
}

extension CalibrationTable {
    /// What to use for a model the table does not list (or lists below the minimum confidence).
    public enum Fallback: String, Sendable, CaseIterable {
        /// Leave its rows out (and name the model).
        case none
        /// Its manufacturer's median values; rows of a model whose manufacturer is unknown are left out.
        case manufacturer
        /// The table's default (its default row, else its median).
        case `default`
        /// The manufacturer's, else the table's default.
        case manufacturerThenDefault = "manufacturer,default"
    }

    public struct Options: Sendable {
        public var fallback: Fallback = .none
        /// Rows below this confidence count as absent (then the fallback applies); needs the column.
        public var minimumConfidence: Int?
        /// Manufacturers of models the table does not list, as the user states them (MODEL -> OEM).
        public var manufacturers: [String: String] = [:]
        public init() {}
    }

    /// A model's values and where they came from.
    public struct Resolved: Sendable, Equatable {
        public var model: String
        public var entry: Entry
        /// nil: the model's own row; else "manufacturer samsung (...)" or "default (...)".
        public var fallback: String?
    }

    /// The model's values under `options`: its own row (at the minimum confidence or above),
    /// else the fallback's, else nil.
    public func resolve(_ model: String, options: Options) -> Resolved? {
        if let e = entry(model), e.confidence.map({ $0 >= (options.minimumConfidence ?? 0) }) ?? true { return Resolved(model: model, entry: e) }
        let below = entry(model) != nil
        let why = below ? "below confidence \(options.minimumConfidence ?? 0)" : "not in the table"
        if options.fallback == .manufacturer || options.fallback == .manufacturerThenDefault {
            let oem = entry(model).map { ($0.oem.lowercased(), "its row's") } ?? manufacturer(of: model, given: options.manufacturers)
            if let oem, !oem.oem.isEmpty, let e = manufacturerEntry(oem.oem) {
                return Resolved(model: model, entry: e, fallback: "manufacturer \(oem.oem) (\(why); manufacturer \(oem.how))")
            }
        }
        if options.fallback == .default || options.fallback == .manufacturerThenDefault {
            let d = defaultEntry
            return Resolved(model: model, entry: d.entry, fallback: "default (\(why); \(d.how))")
        }
        return nil
    }
}

/// Which calibration rows an import used: per model, measured or generic, and how many output
/// rows leaned on it (as receiver or as transmitter).
public struct CalibrationUse: Sendable, Equatable {
    public struct Model: Sendable, Equatable {
        public var model: String
        public var measured: Bool?
        public var asReceiver = 0
        public var asTransmitter = 0
        /// The fallback that gave its values (nil: its own row) and the row's confidence.
        public var fallback: String?
        public var confidence: Int?
    }

    public private(set) var models: [String: Model] = [:]
    /// Models the table could not calibrate (nor a fallback): rows left out, as receiver and as transmitter.
    public private(set) var missing: [String: Model] = [:]
    /// Output rows with at least one generic (not measured) value.
    public private(set) var rowsWithGeneric = 0
    public private(set) var rows = 0

    public init() {}

    mutating func missing(_ model: String, asReceiver: Bool) {
        let k = CalibrationTable.normalise(model)
        if asReceiver { missing[k, default: Model(model: model)].asReceiver += 1 } else { missing[k, default: Model(model: model)].asTransmitter += 1 }
    }

    mutating func add(receiver: CalibrationTable.Resolved, transmitter: CalibrationTable.Resolved) {
        let rk = CalibrationTable.normalise(receiver.model), tk = CalibrationTable.normalise(transmitter.model)
        // A model with its own row is named as the table spells it; one from a fallback as the data does.
        func model(_ r: CalibrationTable.Resolved) -> Model {
            Model(model: r.fallback == nil ? r.entry.model : r.model, measured: r.entry.measured, fallback: r.fallback, confidence: r.entry.confidence)
        }
        models[rk, default: model(receiver)].asReceiver += 1
        models[tk, default: model(transmitter)].asTransmitter += 1
        let (receiver, transmitter) = (receiver.entry, transmitter.entry)
        rows += 1
        if receiver.measured == false || transmitter.measured == false { rowsWithGeneric += 1 }
    }

    /// Lines naming what the summary's counts hide: each model the table lacks with its rows
    /// left out, each fallback used, and the confidence of the rows used.
    public func details(_ table: CalibrationTable) -> [String] {
        func rows(_ m: Model) -> String { "\(m.asReceiver) rows as receiver, \(m.asTransmitter) as transmitter" }
        let order: (Model, Model) -> Bool = { ($0.asReceiver + $0.asTransmitter, $1.model) > ($1.asReceiver + $1.asTransmitter, $0.model) }
        var out: [String] = []
        if !missing.isEmpty {
            out.append("models not in the calibration table \(table.name), rows left out: "
                       + missing.values.sorted(by: order).map { "'\($0.model)' (\(rows($0)))" }.joined(separator: "; "))
        }
        let fallen = models.values.filter { $0.fallback != nil }
        if !fallen.isEmpty {
            out.append("models calibrated by a fallback: " + fallen.sorted(by: order).map { "'\($0.model)' from \($0.fallback!) (\(rows($0)))" }.joined(separator: "; "))
        }
        if table.hasConfidenceColumn {
            var byLevel: [Int: Int] = [:]
            for m in models.values { byLevel[m.confidence ?? 0, default: 0] += 1 }
            out.append("calibration confidence of the models used: " + byLevel.keys.sorted(by: >).map { "\(byLevel[$0]!) at \($0) (\(["lowest", "low", "medium", "high"][$0]))" }.joined(separator: ", "))
        }
        return out
    }

    /// "calibration 2020-12-01 (file): 3 models used, 2 measured (A, B), 1 generic (C); 40 of 120 rows use a generic value".
    public func summary(_ table: CalibrationTable) -> String {
        let name = (table.date.map { "table of \($0)" } ?? "table") + " (\(table.source))"
        guard table.hasMeasuredColumn else {
            return "calibration \(name): \(models.count) models used; the table does not say which rows were measured"
        }
        func list(_ m: [Model]) -> String {
            m.sorted { $0.model < $1.model }.map { "\($0.model): \($0.asReceiver) rx, \($0.asTransmitter) tx" }.joined(separator: "; ")
        }
        let measured = models.values.filter { $0.measured == true }, generic = models.values.filter { $0.measured != true }
        var s = "calibration \(name): \(models.count) models used, \(measured.count) measured"
        if !measured.isEmpty { s += " (\(list(measured)))" }
        s += ", \(generic.count) generic"
        if !generic.isEmpty { s += " (\(list(generic)))" }
        s += "; \(rowsWithGeneric) of \(rows) rows use a generic value"
        return s
    }
}

/// DP-3T bt-measurements result tables to the attenuation CSV `trial report --attenuations`
/// reads (`gaenctl trial import dp3t`). A row: `receiver_id, receiver_model, transmitter_id,
/// transmitter_model, timestamp, rssi, tx_power, ground_truth_distance` (the tables' columns;
/// from their SQLite files or CSV exports). attenuation = TX of the transmitter's model -
/// (RSSI + RSSI correction of the receiver's model), both from the calibration table (the
/// `tx_power` column, what the Android API reported, is kept as is in the output). Rows without
/// ground truth, without an RSSI, or with a model the table does not know are left out and
/// counted. In some experiments `transmitter_model` repeats the receiver's: when the
/// transmitter's id is seen as a receiver elsewhere in the input, its model is taken from there
/// (counted as corrected).
public enum DP3TImport {
    public struct Row: Sendable, Equatable {
        public var receiverID: String
        public var receiverModel: String
        public var transmitterID: String
        public var transmitterModel: String
        public var timestamp: String
        public var rssi: Double?
        public var txPower: Double?
        public var distance: Double?
        /// The experiment the row belongs to: its file (and table, when a SQLite file holds several).
        public var scenario: String

        public init(receiverID: String, receiverModel: String, transmitterID: String, transmitterModel: String, timestamp: String,
                    rssi: Double?, txPower: Double?, distance: Double?, scenario: String = "") {
            self.receiverID = receiverID; self.receiverModel = receiverModel; self.transmitterID = transmitterID
            self.transmitterModel = transmitterModel; self.timestamp = timestamp; self.rssi = rssi; self.txPower = txPower
            self.distance = distance; self.scenario = scenario
        }
    }

    public static let columns = ["receiver_id", "receiver_model", "transmitter_id", "transmitter_model", "timestamp", "rssi", "tx_power",
                                 "ground_truth_distance"]
    /// `site` carries the scenario too, so `trial report --attenuations --site SCENARIO` takes one experiment.
    /// `tx_power` is the TX power the attenuation used (the calibration table's, as `calibration_tx`),
    /// `reported_tx_power` the row's own (what the Android API reported), so a row can be recomputed.
    public static let outputHeader = ["time", "receiver", "transmitter", "distance", "attenuation", "rssi", "tx_power",
                                      "receiver_model", "transmitter_model", "rssi_correction", "calibration_tx", "reported_tx_power",
                                      "calibration_measured", "calibration_confidence", "calibration_fallback", "calibration_table", "scenario", "site"]

    /// A scenario's name from its file: the name without directories and extensions
    /// (`.csv`, `.csv.gz`, `.sqlite`, `.db`).
    public static func scenario(ofFile path: String) -> String {
        var name = URL(fileURLWithPath: path).lastPathComponent
        for ext in [".gz", ".csv", ".sqlite3", ".sqlite", ".db"] where name.lowercased().hasSuffix(ext) { name.removeLast(ext.count) }
        return name
    }

    /// Rows of a CSV export (columns by name); the scenario is the file's.
    public static func rows(_ reader: CSVReader) throws -> [Row] {
        let scenario = scenario(ofFile: reader.file)
        let c = try columns.map { try reader.requireColumn($0) }
        var out: [Row] = []
        try reader.forEachRow { r in
            out.append(Row(receiverID: r.string(c[0]), receiverModel: r.string(c[1]), transmitterID: r.string(c[2]),
                           transmitterModel: r.string(c[3]), timestamp: r.string(c[4]),
                           rssi: try r.double(c[5], column: "rssi"), txPower: try r.double(c[6], column: "tx_power"),
                           distance: try r.double(c[7], column: "ground_truth_distance"), scenario: scenario))
        }
        return out
    }

    /// A timestamp as Unix seconds: ISO 8601 or Unix seconds, or milliseconds when above 1e11
    /// (year 5138 in seconds; the Android tables log milliseconds).
    static func seconds(_ text: String, zone: TimeZone? = nil) throws -> Double {
        let v = try TimeInput.parse(text, zone: zone)
        return v > 1e11 && Double(text.trimmingCharacters(in: .whitespaces)) != nil ? v / 1000 : v
    }

    /// Which model gives the TX and which the RSSI correction.
    public enum Convention: String, Sendable, CaseIterable {
        /// The framework's: TX of the transmitter's model, correction of the receiver's; a
        /// transmitter model that repeats the receiver's is corrected from the ids.
        case framework
        /// DP-3T's own analysis: TX of the receiver's model, correction of the transmitter's,
        /// the transmitter_model column as written (uncorrected), to reproduce their figures.
        case dp3t
    }

    /// Each id's model where it was the receiver (the reliable column), per scenario: the same id
    /// in two scenarios may be two phones.
    static func receiverModels(_ rows: [Row]) -> [String: String] {
        var modelOf: [String: String] = [:]
        for r in rows where !r.receiverModel.isEmpty { modelOf[r.scenario + "\u{1}" + r.receiverID] = modelOf[r.scenario + "\u{1}" + r.receiverID] ?? r.receiverModel }
        return modelOf
    }

    /// The row's transmitter model: under the framework convention, one that repeats the
    /// receiver's is replaced by the model its id has as a receiver; under DP-3T's, as written.
    static func transmitterModel(_ r: Row, receiverModels modelOf: [String: String], convention: Convention) -> String {
        let m = r.transmitterModel
        guard convention == .framework, CalibrationTable.normalise(m) == CalibrationTable.normalise(r.receiverModel), r.transmitterID != r.receiverID,
              let known = modelOf[r.scenario + "\u{1}" + r.transmitterID], CalibrationTable.normalise(known) != CalibrationTable.normalise(m) else { return m }
        return known
    }

    public static func convert(_ rows: [Row], calibration: CalibrationTable) -> (CSVWriter, ImportCounts) {
        var use = CalibrationUse()
        return convert(rows, calibration: calibration, use: &use)
    }

    /// `convert`, telling which calibration rows (measured or generic) the output used.
    /// Timestamps without a zone are read in `zone`; without one they are left out and counted.
    public static func convert(_ rows: [Row], calibration: CalibrationTable, zone: TimeZone? = nil, options: CalibrationTable.Options = .init(),
                               convention: Convention = .framework, use: inout CalibrationUse) -> (CSVWriter, ImportCounts) {
        var counts = ImportCounts()
        let modelOf = receiverModels(rows)
        var w = CSVWriter(header: outputHeader)
        var cache: [String: CalibrationTable.Resolved?] = [:]
        let tableName = calibration.name + (convention == .dp3t ? ", DP-3T convention" : "")
        for r in rows {
            counts.read += 1
            guard let d = r.distance, d >= 0 else { counts.drop("without ground truth distance"); continue }
            guard let rssi = r.rssi, rssi != 127, rssi != -127 else { counts.drop("without an RSSI (empty or the 127 sentinel)"); continue }
            let t: Double
            do { t = try seconds(r.timestamp, zone: zone) } catch let e as TimeInput.Invalid where e.zoneless {
                counts.drop("with a timestamp without a time zone (give --timezone)"); continue
            } catch { counts.drop("with an unreadable timestamp"); continue }
            let txModel = transmitterModel(r, receiverModels: modelOf, convention: convention)
            if txModel != r.transmitterModel { counts.note("transmitter models corrected (the row repeated the receiver's)") }
            func resolved(_ m: String) -> CalibrationTable.Resolved? {
                if let c = cache[m] { return c }
                let v = calibration.resolve(m, options: options)
                cache[m] = .some(v)
                return v
            }
            let rxResolved = resolved(r.receiverModel), txResolved = resolved(txModel)
            // Every side the table lacks is counted against its model, so the summary can name it.
            if rxResolved == nil { use.missing(r.receiverModel, asReceiver: true) }
            if txResolved == nil { use.missing(txModel, asReceiver: false) }
            guard let rxResolved else { counts.drop("receiver model not in the calibration table"); continue }
            guard let txResolved else { counts.drop("transmitter model not in the calibration table"); continue }
            let rx = rxResolved.entry, tx = txResolved.entry
            // framework: TX of the transmitter, correction of the receiver; dp3t: the other way round.
            let (txPower, correction) = convention == .framework ? (tx.tx, rx.rssiCorrection) : (rx.tx, tx.rssiCorrection)
            let attenuation = txPower - (rssi + correction)
            use.add(receiver: rxResolved, transmitter: txResolved)
            // Measured: both rows measured; no: either generic; empty: the table does not say.
            let measured = rx.measured == false || tx.measured == false ? "no" : (rx.measured == true && tx.measured == true ? "yes" : "")
            let confidence = [rx.confidence, tx.confidence].compactMap { $0 }.min().map(String.init) ?? ""
            let fallback = [rxResolved.fallback.map { _ in "receiver:" + (rxResolved.fallback!.hasPrefix("default") ? "default" : "manufacturer") },
                            txResolved.fallback.map { _ in "transmitter:" + (txResolved.fallback!.hasPrefix("default") ? "default" : "manufacturer") }]
                .compactMap { $0 }.joined(separator: " ")
            w.appendRow([Format.exact(t), r.receiverID, r.transmitterID, Format.exact(d), Format.exact(attenuation), Format.exact(rssi),
                         Format.exact(txPower), r.receiverModel, txModel, Format.exact(correction), Format.exact(txPower),
                         r.txPower.map(Format.exact) ?? "", measured, confidence, fallback, tableName, r.scenario, r.scenario])
            counts.written += 1
        }
        return (w, counts)
    }
}

/// Two calibration tables over the same rows (`trial import dp3t --compare-calibration-date`):
/// the models whose values differ and what that does to the attenuations, so a result can say
/// how much it depends on the table chosen.
public struct CalibrationComparison: Sendable {
    /// Rows both tables calibrate, and of them the ones whose attenuation differs.
    public var rowsBoth = 0, rowsChanged = 0
    /// Rows only the first (used) or only the second table calibrates.
    public var rowsOnlyUsed = 0, rowsOnlyOther = 0
    public var meanShift = 0.0, largestShift = 0.0
    /// Models used whose TX or correction differ: (model, used, other).
    public var differing: [(model: String, used: CalibrationTable.Entry, other: CalibrationTable.Entry)] = []

    /// The rows read with `used` and with `other` under the same options and convention (rows
    /// without a distance or an RSSI are skipped, as the import skips them).
    public init(_ rows: [DP3TImport.Row], used: CalibrationTable, other: CalibrationTable, options: CalibrationTable.Options = .init(),
                convention: DP3TImport.Convention = .framework) {
        var sum = 0.0
        var seen: Set<String> = []
        let modelOf = DP3TImport.receiverModels(rows)
        func attenuation(_ t: CalibrationTable, _ r: DP3TImport.Row, txModel: String, rssi: Double) -> Double? {
            guard let rx = t.resolve(r.receiverModel, options: options), let tx = t.resolve(txModel, options: options) else { return nil }
            return convention == .framework ? tx.entry.tx - (rssi + rx.entry.rssiCorrection) : rx.entry.tx - (rssi + tx.entry.rssiCorrection)
        }
        for r in rows {
            guard r.distance.map({ $0 >= 0 }) == true, let rssi = r.rssi, rssi != 127, rssi != -127 else { continue }
            let txModel = DP3TImport.transmitterModel(r, receiverModels: modelOf, convention: convention)
            for m in [r.receiverModel, txModel] where seen.insert(CalibrationTable.normalise(m)).inserted {
                if let a = used.resolve(m, options: options)?.entry, let b = other.resolve(m, options: options)?.entry,
                   a.tx != b.tx || a.rssiCorrection != b.rssiCorrection {
                    differing.append((m, a, b))
                }
            }
            switch (attenuation(used, r, txModel: txModel, rssi: rssi), attenuation(other, r, txModel: txModel, rssi: rssi)) {
            case let (a?, b?):
                rowsBoth += 1
                if a != b { rowsChanged += 1 }
                sum += b - a
                largestShift = max(largestShift, abs(b - a))
            case (.some, nil): rowsOnlyUsed += 1
            case (nil, .some): rowsOnlyOther += 1
            case (nil, nil): break
            }
        }
        meanShift = rowsBoth > 0 ? sum / Double(rowsBoth) : 0
        differing.sort { $0.model < $1.model }
    }

    /// One line for stderr.
    public func summary(used: CalibrationTable, other: CalibrationTable) -> String {
        var s = "compared with \(other.name): \(rowsChanged) of the \(rowsBoth) rows both tables calibrate change attenuation"
        s += " (mean \(Format.fixed(meanShift, 2)) dB, largest \(Format.readable(largestShift)) dB; \(other.name) minus \(used.name))"
        s += "; \(rowsOnlyUsed) rows only \(used.name) calibrates, \(rowsOnlyOther) only \(other.name)"
        if !differing.isEmpty {
            s += "; models that differ: " + differing.map {
                "'\($0.model)' TX \(Format.exact($0.used.tx)) -> \(Format.exact($0.other.tx)), correction \(Format.exact($0.used.rssiCorrection)) -> \(Format.exact($0.other.rssiCorrection))"
            }.joined(separator: "; ")
        }
        return s
    }
}

/// Raw RSSI tables (MIT Lincoln Laboratory's range experiments and the like: one RSSI reading
/// per row with the range it was taken at) to the attenuation CSV (`gaenctl trial import rssi`).
/// Columns found by name: the distance (`--distance-column`, default `range` or `distance`),
/// the RSSI (`--rssi-column`, default `rssi`), optionally the time (`--time-column`, default
/// `time`/`timestamp`), the receiver and transmitter (`--receiver-column`,
/// `--transmitter-column`, default `receiver`, `transmitter`). attenuation = `--tx-power` (a
/// constant: such tables carry no AEM) - RSSI. RSSI 127 (and -127) is the "not available" value
/// and is left out and counted, as are rows without range or RSSI. Rows without a time are
/// numbered 0, 1, 2... A time without a zone (`2020-05-11 12:40:06.223`) is read in
/// `timeZone`, and refused, naming the row, without one.
public enum RSSITableImport {
    public struct Options: Sendable {
        public var txPower: Double
        public var distanceColumn: String?
        public var rssiColumn: String = "rssi"
        public var timeColumn: String?
        public var receiverColumn: String?
        public var transmitterColumn: String?
        public var distanceScale: Double = 1
        public var receiver: String = ""
        public var transmitter: String = ""
        public var timeZone: TimeZone?
        public init(txPower: Double) { self.txPower = txPower }
    }

    public static let outputHeader = ["time", "receiver", "transmitter", "distance", "attenuation", "rssi", "tx_power"]

    public static func convert(_ reader: CSVReader, options o: Options) throws -> (CSVWriter, ImportCounts) {
        var w = CSVWriter(header: outputHeader)
        let counts = try convert(reader, options: o) { w.appendRaw($0) }
        return (w, counts)
    }

    /// Streams the output lines (without the header) to `line`.
    public static func convert(_ reader: CSVReader, options o: Options, line: (String) throws -> Void) throws -> ImportCounts {
        let cDist = try o.distanceColumn.map { try reader.requireColumn($0) }
            ?? reader.column("range") ?? reader.column("distance") ?? reader.requireColumn("range")
        let cRSSI = try reader.requireColumn(o.rssiColumn)
        let cTime = try o.timeColumn.map { try reader.requireColumn($0) } ?? reader.column("time") ?? reader.column("timestamp")
        let cRx = try o.receiverColumn.map { try reader.requireColumn($0) } ?? reader.column("receiver")
        let cTx = try o.transmitterColumn.map { try reader.requireColumn($0) } ?? reader.column("transmitter")
        var counts = ImportCounts()
        var zone = TimeInput.ZoneCache(o.timeZone)
        let txPower = Format.exact(o.txPower)
        let fixedRx = CSVWriter.escape(o.receiver), fixedTx = CSVWriter.escape(o.transmitter)
        var n = 0
        try reader.forEachRow { row in
            counts.read += 1
            defer { n += 1 }
            guard let d = try row.double(cDist, column: reader.header[cDist]), d >= 0 else { counts.drop("without a range"); return }
            guard let rssi = try row.double(cRSSI, column: reader.header[cRSSI]) else { counts.drop("without an RSSI"); return }
            guard rssi != 127, rssi != -127 else { counts.drop("with RSSI 127 (not available)"); return }
            var t = Double(n)
            if let cTime, !row.isEmpty(cTime) {
                do {
                    t = try row.withBytes(cTime) { b in
                        let v = try TimeInput.parse(b, zone: &zone, text: row.string(cTime))
                        // Milliseconds when above 1e11 (year 5138 in seconds), as Android logs them.
                        return v > 1e11 && !b.contains(UInt8(ascii: "-")) ? v / 1000 : v
                    }
                } catch let e as TimeInput.Invalid {
                    throw CSVError.badValue(file: reader.file, line: row.line, column: reader.header[cTime],
                                            expected: e.zoneless ? "a time with a zone (or give --timezone ZONE)" : "Unix seconds or ISO 8601",
                                            actual: row.string(cTime))
                }
            }
            var out = Format.exact(t)
            out += ","; out += cRx.map { CSVWriter.escape(row.string($0)) } ?? fixedRx
            out += ","; out += cTx.map { CSVWriter.escape(row.string($0)) } ?? fixedTx
            // Scaled ranges written without the product's binary noise (3 ft is 0.9144 m, not 0.9144000000000001).
            out += ","; out += Format.clean(d * o.distanceScale)
            out += ","; out += Format.exact(o.txPower - rssi)
            out += ","; out += Format.exact(rssi)
            out += ","; out += txPower
            try line(out)
            counts.written += 1
        }
        return counts
    }
}
