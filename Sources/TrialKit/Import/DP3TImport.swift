import Foundation

/// Google's Exposure Notifications calibration table (the CSV Google published for the
/// framework: one row per device with its manufacturer, model, RSSI correction and TX power;
/// header names vary between releases, so columns are found by name: a model column
/// (`model`/`device`), `rssi correction`, `tx`, and optionally `oem`/`manufacturer`), looked up
/// by normalised model name.
public struct CalibrationTable: Sendable {
    public struct Entry: Sendable, Equatable {
        public var oem: String
        public var model: String
        public var rssiCorrection: Double
        public var tx: Double
    }

    public private(set) var byModel: [String: Entry] = [:]

    /// A model name as trial tables and the calibration table spell it, made comparable: case,
    /// spaces and a trailing dual-SIM `/DS` (or ` DS`, `_DS`) ignored.
    public static func normalise(_ model: String) -> String {
        var m = model.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["/DS", " DS", "_DS", "-DS"] where m.hasSuffix(suffix) { m.removeLast(suffix.count) }
        return m.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    static func key(_ header: String) -> String {
        header.lowercased().filter { $0.isLetter || $0.isNumber }
    }

    public init(_ reader: CSVReader) throws {
        let keys = reader.header.map(Self.key)
        func find(_ names: [String], _ label: String) throws -> Int {
            for n in names { if let i = keys.firstIndex(of: n) { return i } }
            throw CSVError.missingColumn(file: reader.file, column: label, header: reader.header)
        }
        let cModel = try find(["model", "device", "androidosbuildmodel", "devicemodel"], "model")
        let cCorr = try find(["rssicorrection", "rssi_correction"], "rssi correction")
        let cTx = try find(["tx", "txpower", "txpowerlevel"], "tx")
        let cOem = ["oem", "manufacturer", "brand"].compactMap { keys.firstIndex(of: $0) }.first
        try reader.forEachRow { row in
            let model = Self.normalise(row.string(cModel))
            guard !model.isEmpty, let corr = try row.double(cCorr, column: "rssi correction"), let tx = try row.double(cTx, column: "tx") else { return }
            // The first entry of a model wins (the table lists a model once per manufacturer at most).
            if byModel[model] == nil {
                byModel[model] = Entry(oem: cOem.map { row.string($0) } ?? "", model: row.string(cModel), rssiCorrection: corr, tx: tx)
            }
        }
    }

    public func entry(_ model: String) -> Entry? { byModel[Self.normalise(model)] }
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

        public init(receiverID: String, receiverModel: String, transmitterID: String, transmitterModel: String, timestamp: String,
                    rssi: Double?, txPower: Double?, distance: Double?) {
            self.receiverID = receiverID; self.receiverModel = receiverModel; self.transmitterID = transmitterID
            self.transmitterModel = transmitterModel; self.timestamp = timestamp; self.rssi = rssi; self.txPower = txPower
            self.distance = distance
        }
    }

    public static let columns = ["receiver_id", "receiver_model", "transmitter_id", "transmitter_model", "timestamp", "rssi", "tx_power",
                                 "ground_truth_distance"]
    public static let outputHeader = ["time", "receiver", "transmitter", "distance", "attenuation", "rssi", "tx_power",
                                      "receiver_model", "transmitter_model", "rssi_correction", "calibration_tx"]

    /// Rows of a CSV export (columns by name).
    public static func rows(_ reader: CSVReader) throws -> [Row] {
        let c = try columns.map { try reader.requireColumn($0) }
        var out: [Row] = []
        try reader.forEachRow { r in
            out.append(Row(receiverID: r.string(c[0]), receiverModel: r.string(c[1]), transmitterID: r.string(c[2]),
                           transmitterModel: r.string(c[3]), timestamp: r.string(c[4]),
                           rssi: try r.double(c[5], column: "rssi"), txPower: try r.double(c[6], column: "tx_power"),
                           distance: try r.double(c[7], column: "ground_truth_distance")))
        }
        return out
    }

    /// A timestamp as Unix seconds: ISO 8601 or Unix seconds, or milliseconds when above 1e11
    /// (year 5138 in seconds; the Android tables log milliseconds).
    static func seconds(_ text: String) -> Double? {
        guard let v = try? TimeInput.parse(text) else { return nil }
        return v > 1e11 && Double(text) != nil ? v / 1000 : v
    }

    public static func convert(_ rows: [Row], calibration: CalibrationTable) -> (CSVWriter, ImportCounts) {
        var counts = ImportCounts()
        // Each id's model where it was the receiver: the reliable column.
        var modelOf: [String: String] = [:]
        for r in rows where !r.receiverModel.isEmpty { modelOf[r.receiverID] = modelOf[r.receiverID] ?? r.receiverModel }
        var w = CSVWriter(header: outputHeader)
        for r in rows {
            counts.read += 1
            guard let d = r.distance, d >= 0 else { counts.drop("without ground truth distance"); continue }
            guard let rssi = r.rssi, rssi != 127, rssi != -127 else { counts.drop("without an RSSI (empty or the 127 sentinel)"); continue }
            guard let t = seconds(r.timestamp) else { counts.drop("with an unreadable timestamp"); continue }
            var txModel = r.transmitterModel
            if CalibrationTable.normalise(txModel) == CalibrationTable.normalise(r.receiverModel), r.transmitterID != r.receiverID,
               let known = modelOf[r.transmitterID], CalibrationTable.normalise(known) != CalibrationTable.normalise(txModel) {
                txModel = known
                counts.note("transmitter models corrected (the row repeated the receiver's)")
            }
            guard let rx = calibration.entry(r.receiverModel) else { counts.drop("receiver model not in the calibration table"); continue }
            guard let tx = calibration.entry(txModel) else { counts.drop("transmitter model not in the calibration table"); continue }
            let attenuation = tx.tx - (rssi + rx.rssiCorrection)
            w.appendRow([Format.exact(t), r.receiverID, r.transmitterID, Format.exact(d), Format.exact(attenuation), Format.exact(rssi),
                         r.txPower.map(Format.exact) ?? "", r.receiverModel, txModel, Format.exact(rx.rssiCorrection), Format.exact(tx.tx)])
            counts.written += 1
        }
        return (w, counts)
    }
}

/// Raw RSSI tables (MIT Lincoln Laboratory's range experiments and the like: one RSSI reading
/// per row with the range it was taken at) to the attenuation CSV (`gaenctl trial import rssi`).
/// Columns found by name: the distance (`--distance-column`, default `range` or `distance`),
/// the RSSI (`--rssi-column`, default `rssi`), optionally `time`/`timestamp`, `receiver`,
/// `transmitter`. attenuation = `--tx-power` (a constant: such tables carry no AEM) - RSSI. RSSI
/// 127 (and -127) is the "not available" value and is left out and counted, as are rows
/// without range or RSSI. Rows without a time are numbered 0, 1, 2...
public enum RSSITableImport {
    public struct Options: Sendable {
        public var txPower: Double
        public var distanceColumn: String?
        public var rssiColumn: String = "rssi"
        public var distanceScale: Double = 1
        public var receiver: String = ""
        public var transmitter: String = ""
        public init(txPower: Double) { self.txPower = txPower }
    }

    public static func convert(_ reader: CSVReader, options o: Options) throws -> (CSVWriter, ImportCounts) {
        let cDist = try o.distanceColumn.map { try reader.requireColumn($0) }
            ?? reader.column("range") ?? reader.column("distance") ?? reader.requireColumn("range")
        let cRSSI = try reader.requireColumn(o.rssiColumn)
        let cTime = reader.column("time") ?? reader.column("timestamp")
        let cRx = reader.column("receiver"), cTx = reader.column("transmitter")
        var counts = ImportCounts()
        var w = CSVWriter(header: ["time", "receiver", "transmitter", "distance", "attenuation", "rssi"])
        var n = 0
        try reader.forEachRow { row in
            counts.read += 1
            defer { n += 1 }
            guard let d = try row.double(cDist, column: reader.header[cDist]), d >= 0 else { counts.drop("without a range"); return }
            guard let rssi = try row.double(cRSSI, column: reader.header[cRSSI]) else { counts.drop("without an RSSI"); return }
            guard rssi != 127, rssi != -127 else { counts.drop("with RSSI 127 (not available)"); return }
            var t = Double(n)
            if let cTime, !row.isEmpty(cTime) {
                guard let parsed = DP3TImport.seconds(row.string(cTime)) else {
                    throw CSVError.badValue(file: reader.file, line: row.line, column: reader.header[cTime], expected: "Unix seconds or ISO 8601", actual: row.string(cTime))
                }
                t = parsed
            }
            w.appendRow([Format.exact(t), cRx.map { row.string($0) } ?? o.receiver, cTx.map { row.string($0) } ?? o.transmitter,
                         Format.exact(d * o.distanceScale), Format.exact(o.txPower - rssi), Format.exact(rssi)])
            counts.written += 1
        }
        return (w, counts)
    }
}
