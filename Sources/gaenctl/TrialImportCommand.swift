import ArgumentParser
import ENProtocol
import RiskEngines
import Foundation
import GaenSQLite
import TrialKit

/// `gaenctl trial import ...`: published trial data to the toolkit's formats (docs/trial.md,
/// "Importing published data"). Each importer prints what it read, wrote and left out (and why).
struct TrialImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert published trial data (DP-3T tables, Leith & Farrell datasets, histograms, raw RSSI tables) to the toolkit's formats.",
        subcommands: [DP3T.self, Leith.self, Histogram.self, RSSI.self])

    static func report(_ command: String, _ counts: ImportCounts, output: String) {
        FileHandle.standardError.write(Data("gaenctl trial import \(command): \(counts.summary); wrote \(output)\n".utf8))
    }

    struct DP3T: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dp3t",
            abstract: "DP-3T bt-measurements result tables (SQLite or CSV) to an attenuation CSV.",
            discussion: """
                Input rows: receiver_id, receiver_model, transmitter_id, transmitter_model, timestamp, rssi, tx_power, \
                ground_truth_distance (every table of a SQLite file that has these columns; a CSV export with them). \
                attenuation = TX of the transmitter's model - (RSSI + RSSI correction of the receiver's model), from \
                Google's EN calibration CSV. Writes time,receiver,transmitter,distance,attenuation,rssi,tx_power, \
                receiver_model,transmitter_model,rssi_correction,calibration_tx, which trial report --attenuations reads.
                """)

        @Argument(help: ArgumentHelp("Result tables: SQLite files or CSV exports.", valueName: "FILE"))
        var files: [String]
        @Option(help: ArgumentHelp("Google's EN calibration CSV (oem, model, rssi correction, tx, ...).", valueName: "CSV"))
        var calibration: String
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Attenuation CSV to write.", valueName: "OUT.csv"))
        var output: String

        func run() throws {
            try TrialCommandSupport.run("trial import dp3t") {
                let table = try CalibrationTable(CSVReader(contentsOf: URL(fileURLWithPath: calibration)))
                var rows: [DP3TImport.Row] = []
                for f in files { rows += try Self.read(f) }
                let (csv, counts) = DP3TImport.convert(rows, calibration: table)
                try csv.write(to: URL(fileURLWithPath: output))
                TrialImportCommand.report("dp3t", counts, output: output)
            }
        }

        /// A SQLite file (told by its magic) or a CSV export.
        static func read(_ path: String) throws -> [DP3TImport.Row] {
            let head = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: path)).read(upToCount: 16)) ?? nil
            guard head == Data("SQLite format 3\0".utf8) else { return try DP3TImport.rows(CSVReader(contentsOf: URL(fileURLWithPath: path))) }
            let db = try Connection(path: path, options: [.readOnly])
            defer { try? db.close() }
            return try db.transaction(.deferred) {
                var out: [DP3TImport.Row] = []
                let tables = try db.fetchAll("SELECT name FROM sqlite_master WHERE type IN ('table','view') ORDER BY name") { $0.text(0) }
                var found = false
                for t in tables {
                    let cols = Set(try db.columns(in: t))
                    guard DP3TImport.columns.allSatisfy(cols.contains) else { continue }
                    found = true
                    let quoted = DP3TImport.columns.map { "\"\($0)\"" }.joined(separator: ",")
                    // As SQLite converts: text as itself (a blob as UTF-8), numbers in their exact decimal form.
                    func text(_ v: SQLValue) -> String {
                        switch v {
                        case .text(let s): return s
                        case .blob(let b): return String(validating: b, as: UTF8.self) ?? ""
                        case .integer(let i): return Format.exact(Double(i))
                        case .real(let d): return Format.exact(d)
                        case .null: return ""
                        }
                    }
                    func number(_ v: SQLValue) -> Double? {
                        switch v {
                        case .integer(let i): return Double(i)
                        case .real(let d): return d
                        case .text(let s): return Double(s)
                        case .blob(let b): return String(validating: b, as: UTF8.self).flatMap(Double.init)
                        case .null: return nil
                        }
                    }
                    try db.forEachRow("SELECT \(quoted) FROM \"\(t.replacingOccurrences(of: "\"", with: "\"\""))\"") { r in
                        let v = (0..<8).map { r.value($0) }
                        out.append(DP3TImport.Row(receiverID: text(v[0]), receiverModel: text(v[1]), transmitterID: text(v[2]), transmitterModel: text(v[3]),
                                                  timestamp: text(v[4]), rssi: number(v[5]), txPower: number(v[6]), distance: number(v[7])))
                    }
                }
                guard found else {
                    throw CommandFailure("\(path): no table with the columns \(DP3TImport.columns.joined(separator: ", ")) (tables: \(tables.joined(separator: ", ")))")
                }
                return out
            }
        }
    }

    struct Histogram: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "histogram",
            abstract: "Attenuation-duration histograms (CSV: label, distance, minutes per LOW-HIGH dB bin) to contacts.",
            discussion: """
                One contact with one exposure window per row: each bin's minutes become scan instances at the bin's \
                midpoint (--at low|high: an edge), whole dB, at most 300 s each. Optional columns: date, report_type, \
                infectiousness, calibration_confidence, transmission_risk_level. See docs/trial.md.
                """)

        @Argument(help: ArgumentHelp("Histogram CSV files.", valueName: "CSV"))
        var files: [String]
        @Option(help: "Where a bin's minutes are placed: midpoint, low or high (edge).")
        var at: String = "midpoint"
        @Option(help: ArgumentHelp("Transmission risk level (1-8) for rows without a transmission_risk_level column.", valueName: "N"))
        var transmissionRiskLevel: Int?
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Contacts JSON to write.", valueName: "CONTACTS.json"))
        var output: String

        func validate() throws {
            guard HistogramImport.Placement(rawValue: at) != nil else { throw ValidationError("--at: expected midpoint, low or high, got '\(at)'") }
            if let t = transmissionRiskLevel, !(1...8).contains(t) { throw ValidationError("--transmission-risk-level must be 1...8") }
        }

        func run() throws {
            try TrialCommandSupport.run("trial import histogram") {
                var options = HistogramImport.Options()
                options.placement = HistogramImport.Placement(rawValue: at)!
                options.transmissionRiskLevel = transmissionRiskLevel
                var contacts: [Contact] = []
                var total = ImportCounts()
                for f in files {
                    let (c, counts) = try HistogramImport.contacts(CSVReader(contentsOf: URL(fileURLWithPath: f)), options: options)
                    contacts += c
                    total.read += counts.read; total.written += counts.written
                    for (reason, n) in counts.dropped { for _ in 0..<n { total.drop(reason) } }
                }
                try OutputFile.write(ContactsFile.encode(contacts), to: URL(fileURLWithPath: output))
                TrialImportCommand.report("histogram", total, output: output)
            }
        }
    }

    struct Leith: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "leith",
            abstract: "Leith & Farrell's attenuation-duration datasets (their text files) to contacts.",
            discussion: """
                DIR holds one or more datasets as published (e.g. github.com/doug-leith/dublintram_gaen_dataset): \
                <prefix>attenuations.txt (minutes per attenuation range, one row per pair and distance; the ranges \
                named in its comment), <prefix>distances.txt (metres per row), <prefix>pairs.txt (the two handsets \
                per row). One contact per row, windows as trial import histogram makes them; a row with no minutes \
                is kept as a contact without windows. See docs/trial.md.
                """)

        @Argument(help: ArgumentHelp("Directory of the dataset's text files.", valueName: "DIR"))
        var dir: String
        @Option(help: "Where a range's minutes are placed: midpoint, low or high (edge).")
        var at: String = "midpoint"
        @Option(help: ArgumentHelp("Transmission risk level (1-8) of every window.", valueName: "N"))
        var transmissionRiskLevel: Int?
        @Option(help: ArgumentHelp("The attenuation ranges of the columns, when the file's comment does not name them.", valueName: "48-50,50-52,..."))
        var ranges: String?
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Contacts JSON to write.", valueName: "CONTACTS.json"))
        var output: String

        func parsedRanges() throws -> [(low: Double, high: Double)]? {
            guard let ranges else { return nil }
            return try ranges.split(separator: ",").map { item in
                let p = item.split(separator: "-").map { Double($0.trimmingCharacters(in: .whitespaces)) }
                guard p.count == 2, let lo = p[0], let hi = p[1], lo < hi else { throw ValidationError("--ranges: expected LOW-HIGH,... (dB), got '\(item)'") }
                return (lo, hi)
            }
        }

        func validate() throws {
            guard HistogramImport.Placement(rawValue: at) != nil else { throw ValidationError("--at: expected midpoint, low or high, got '\(at)'") }
            if let t = transmissionRiskLevel, !(1...8).contains(t) { throw ValidationError("--transmission-risk-level must be 1...8") }
            _ = try parsedRanges()
        }

        func run() throws {
            try TrialCommandSupport.run("trial import leith") {
                var options = HistogramImport.Options()
                options.placement = HistogramImport.Placement(rawValue: at)!
                options.transmissionRiskLevel = transmissionRiskLevel
                let (contacts, counts) = try LeithImport.contacts(in: URL(fileURLWithPath: dir), ranges: try parsedRanges(), options: options)
                try OutputFile.write(ContactsFile.encode(contacts), to: URL(fileURLWithPath: output))
                TrialImportCommand.report("leith", counts, output: output)
            }
        }
    }

    struct RSSI: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rssi",
            abstract: "Raw RSSI tables by range (MIT-LL style) to an attenuation CSV, with a constant TX power.",
            discussion: """
                Columns by name: the range (--distance-column, default range or distance), the RSSI (--rssi-column, \
                default rssi), optionally time/timestamp, receiver, transmitter. attenuation = --tx-power - RSSI; RSSI \
                127 ("not available") is left out and counted.
                """)

        @Argument(help: ArgumentHelp("RSSI tables (CSV).", valueName: "CSV"))
        var files: [String]
        @Option(parsing: .unconditional, help: ArgumentHelp("TX power of the transmitter, dBm (a constant: raw tables carry no AEM).", valueName: "DBM"))
        var txPower: Double
        @Option(help: "Column holding the range/distance (default: range, else distance).")
        var distanceColumn: String?
        @Option(help: "Column holding the RSSI.")
        var rssiColumn: String = "rssi"
        @Option(help: "Multiply ranges by this to get metres (e.g. 0.3048 for feet).")
        var distanceScale: Double = 1
        @Option(help: "Receiver name for rows without a receiver column.")
        var receiver: String = ""
        @Option(help: "Transmitter name for rows without a transmitter column.")
        var transmitter: String = ""
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Attenuation CSV to write.", valueName: "OUT.csv"))
        var output: String

        func validate() throws {
            guard (-50...20).contains(txPower) else { throw ValidationError("--tx-power must be -50...20 dBm") }
            guard distanceScale > 0, distanceScale.isFinite else { throw ValidationError("--distance-scale must be > 0") }
        }

        func run() throws {
            try TrialCommandSupport.run("trial import rssi") {
                var o = RSSITableImport.Options(txPower: txPower)
                o.distanceColumn = distanceColumn; o.rssiColumn = rssiColumn; o.distanceScale = distanceScale
                o.receiver = receiver; o.transmitter = transmitter
                var text = ""
                var total = ImportCounts()
                for (i, f) in files.enumerated() {
                    let (csv, counts) = try RSSITableImport.convert(CSVReader(contentsOf: URL(fileURLWithPath: f)), options: o)
                    text += i == 0 ? csv.text : String(csv.text.drop(while: { $0 != "\n" }).dropFirst())
                    total.read += counts.read; total.written += counts.written
                    for (reason, n) in counts.dropped { for _ in 0..<n { total.drop(reason) } }
                }
                try OutputFile.write(Data(text.utf8), to: URL(fileURLWithPath: output))
                TrialImportCommand.report("rssi", total, output: output)
            }
        }
    }
}

/// `gaenctl trial replay`: notification rules per contact against ground truth.
struct TrialReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay notification rules per contact against ground truth: true/false positives per rule.",
        discussion: """
            --rule NAME[=CONFIG], repeatable; NAME one of cwa, cwa-v1, nhs, gaen-v1, swisscovid, immuni; CONFIG its \
            configuration file (default: the app's published one, the current for cwa and nhs, mid-2020's for cwa-v1, \
            SwissCovid's and Immuni's published values; gaen-v1 needs one). Each contact is judged from its own windows \
            on its own day. close = distance <= --close-contact. --json prints {"rules":[{"rule","notified","close", \
            "far","truePositives","falsePositives","tpr","fpr","precision"}]} (null where nothing divides).
            """)

    @Option(help: ArgumentHelp("Contacts JSON (trial import histogram writes it).", valueName: "FILE"))
    var contacts: String
    @Option(help: ArgumentHelp("A rule to replay, NAME[=CONFIG]; repeatable.", valueName: "NAME[=CONFIG]"))
    var rule: [String] = []
    @Option(help: ArgumentHelp("Ground truth close contact: distance at most this many metres.", valueName: "METRES"))
    var closeContact: Double
    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        guard !rule.isEmpty else { throw ValidationError("give at least one --rule NAME[=CONFIG]") }
        guard closeContact >= 0, closeContact.isFinite else { throw ValidationError("--close-contact must be metres >= 0") }
    }

    func run() throws {
        try TrialCommandSupport.run("trial replay") {
            let list = try ContactsFile.read(URL(fileURLWithPath: contacts))
            let rules = try rule.map { spec in
                try ReplayRule.parse(spec) { path in
                    do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch { throw CommandFailure("--rule \(spec): cannot read \(path)") }
                }
            }
            let results = try Replay.run(list, rules: rules, closeContact: closeContact)
            if json {
                struct Out: Encodable { var rules: [ReplayResult] }
                let enc = JSONEncoder()
                enc.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                print(String(decoding: try enc.encode(Out(rules: results)), as: UTF8.self))
            } else {
                func pct(_ v: Double) -> String { v.isNaN ? "n/a" : Format.fixed(v * 100, 1) + " %" }
                let width = max(4, results.map(\.rule.count).max() ?? 4)
                func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(0, n - s.count)) }
                print(pad("rule", width) + "  notified  close  far  TP  FP       TPR       FPR  precision")
                for r in results {
                    let cols = [String(r.notified), String(r.close), String(r.far), String(r.truePositives), String(r.falsePositives)]
                    let widths = [8, 5, 3, 2, 2]
                    var line = pad(r.rule, width)
                    for (c, w) in zip(cols, widths) { line += "  " + String(repeating: " ", count: max(0, w - c.count)) + c }
                    for (v, w) in [(r.tpr, 8), (r.fpr, 8), (r.precision, 9)] { let c = pct(v); line += "  " + String(repeating: " ", count: max(0, w - c.count)) + c }
                    print(line)
                }
                print("\(list.count) contacts; close contact: distance <= \(Format.exact(closeContact)) m")
            }
        }
    }
}
