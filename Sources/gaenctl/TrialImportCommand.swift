import ArgumentParser
import BoardCommands
import CLISupport
import ENProtocol
import RiskEngines
import Foundation
import GaenSQLite
import TrialKit
import TrialFormats

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

    /// The contacts file of an import that makes contacts (histogram, leith), then its report line.
    static func writeContacts(_ contacts: [Contact], _ command: String, _ counts: ImportCounts, output: String) throws {
        try OutputFile.write(ContactsFile.encode(contacts), to: URL(fileURLWithPath: output))
        report(command, counts, output: output)
    }

    struct DP3T: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dp3t",
            abstract: "DP-3T bt-measurements result tables (SQLite or CSV) to an attenuation CSV.",
            discussion: """
                Input rows: receiver_id, receiver_model, transmitter_id, transmitter_model, timestamp, rssi, tx_power, \
                ground_truth_distance (every table of a SQLite file that has these columns; a CSV export with them). \
                attenuation = TX of the transmitter's model - (RSSI + RSSI correction of the receiver's model), from \
                Google's EN calibration CSV (--calibration-convention dp3t: TX of the receiver's, correction of the \
                transmitter's, as DP-3T's analysis). Models the table lacks are named with their rows; \
                --calibration-fallback states what replaces them. Writes time,receiver,transmitter,distance,attenuation, \
                rssi,tx_power,receiver_model,transmitter_model,rssi_correction,calibration_tx,...,calibration_table, \
                which trial report --attenuations reads.
                """)

        @Argument(help: ArgumentHelp("Result tables: SQLite files or CSV exports (.csv.gz read directly).", valueName: "FILE"))
        var files: [String]
        @Option(help: ArgumentHelp("Google's EN calibration CSV as published (long headers); repeatable: several tables, one picked by --calibration-date.", valueName: "CSV"))
        var calibration: [String] = []
        @Option(help: ArgumentHelp("Use the calibration table in force on this day (the newest dated on or before it, from the file names).", valueName: "YYYY-MM-DD"))
        var calibrationDate: String?
        @Option(help: ArgumentHelp("Compare with the table in force on this day (another --calibration): how many rows' attenuation changes, by how much, and which models differ (stderr); the output uses --calibration-date's table.", valueName: "YYYY-MM-DD"))
        var compareCalibrationDate: String?
        @Option(help: ArgumentHelp("Time zone of timestamps written without one (e.g. UTC, Europe/Zurich); without it such rows are left out and counted.", valueName: "ZONE"))
        var timezone: String?
        @Option(help: ArgumentHelp("For a model the table lacks (or lists below --minimum-calibration-confidence): none (its rows are left out), manufacturer (the median of its manufacturer's rows), default (the table's default row, else its median), or manufacturer,default.", valueName: "none|manufacturer|default|manufacturer,default"))
        var calibrationFallback: String = "none"
        @Option(help: ArgumentHelp("Table rows below this calibration confidence (0 lowest ... 3 high; the table's confidence column) count as absent.", valueName: "0-3"))
        var minimumCalibrationConfidence: Int?
        @Option(help: ArgumentHelp("The manufacturer of a model the table lacks, for --calibration-fallback manufacturer (else guessed from the table's model names); repeatable.", valueName: "MODEL=OEM"))
        var modelManufacturer: [String] = []
        @Option(help: ArgumentHelp("framework: TX of the transmitter's model, correction of the receiver's (a transmitter model repeating the receiver's is corrected from the ids); dp3t: TX of the receiver's model, correction of the transmitter's, the model column as written, as DP-3T's own analysis.", valueName: "framework|dp3t"))
        var calibrationConvention: String = "framework"
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Attenuation CSV to write.", valueName: "OUT.csv"))
        var output: String

        func validate() throws {
            guard !calibration.isEmpty else { throw ValidationError("give --calibration CSV (Google's EN calibration table)") }
            _ = try TrialCommandSupport.zone(timezone)
            _ = try calibrationOptions()
            guard DP3TImport.Convention(rawValue: calibrationConvention) != nil else {
                throw ValidationError("--calibration-convention: expected framework or dp3t, got '\(calibrationConvention)'")
            }
        }

        func calibrationOptions() throws -> CalibrationTable.Options {
            var o = CalibrationTable.Options()
            guard let f = CalibrationTable.Fallback(rawValue: calibrationFallback.replacingOccurrences(of: " ", with: "")) else {
                throw ValidationError("--calibration-fallback: expected none, manufacturer, default or manufacturer,default, got '\(calibrationFallback)'")
            }
            o.fallback = f
            if let m = minimumCalibrationConfidence {
                try NumericOption.check(m, "--minimum-calibration-confidence", 0...3, unit: "confidence levels")
                o.minimumConfidence = m
            }
            for pair in modelManufacturer {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    throw ValidationError("--model-manufacturer: expected MODEL=OEM (e.g. SM-A405FN=samsung), got '\(pair)'")
                }
                o.manufacturers[parts[0]] = parts[1]
            }
            return o
        }

        func run() throws {
            try TrialCommandSupport.run("trial import dp3t") {
                let tables = try calibration.map { try CalibrationTable(CSVReader(contentsOf: URL(fileURLWithPath: $0))) }
                let table = try CalibrationTable.select(tables, date: calibrationDate)
                let options = try calibrationOptions()
                if options.minimumConfidence != nil, !table.hasConfidenceColumn {
                    throw CommandFailure("--minimum-calibration-confidence: \(table.source) has no calibration confidence column (header: \(try CSVReader(contentsOf: URL(fileURLWithPath: table.source)).header.joined(separator: ",")))")
                }
                var rows: [DP3TImport.Row] = []
                for f in files { rows += try Self.read(f) }
                var use = CalibrationUse()
                let (csv, counts) = DP3TImport.convert(rows, calibration: table, zone: try TrialCommandSupport.zone(timezone), options: options,
                                                       convention: DP3TImport.Convention(rawValue: calibrationConvention)!, use: &use)
                try csv.write(to: URL(fileURLWithPath: output))
                let scenarios = Set(rows.map(\.scenario)).count
                TrialImportCommand.report("dp3t", counts, output: output + " (\(scenarios) scenario\(scenarios == 1 ? "" : "s"), in the scenario and site columns)")
                FileHandle.standardError.write(Data("gaenctl trial import dp3t: \(use.summary(table))\n".utf8))
                if let compareCalibrationDate {
                    let other = try CalibrationTable.select(tables, date: compareCalibrationDate)
                    let c = CalibrationComparison(rows, used: table, other: other, options: options, convention: DP3TImport.Convention(rawValue: calibrationConvention)!)
                    FileHandle.standardError.write(Data("gaenctl trial import dp3t: \(c.summary(used: table, other: other))\n".utf8))
                }
                for line in use.details(table) { FileHandle.standardError.write(Data("gaenctl trial import dp3t: \(line)\n".utf8)) }
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
                let scenario = DP3TImport.scenario(ofFile: path)
                let matching = try tables.filter { t in
                    let cols = Set(try db.columns(in: t))
                    return DP3TImport.columns.allSatisfy(cols.contains)
                }
                let found = !matching.isEmpty
                for t in matching {
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
                                                  timestamp: text(v[4]), rssi: number(v[5]), txPower: number(v[6]), distance: number(v[7]),
                                                  scenario: matching.count == 1 ? scenario : scenario + "/" + t))
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
                    total.add(counts)
                }
                try TrialImportCommand.writeContacts(contacts, "histogram", total, output: output)
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
        @Option(help: ArgumentHelp("The day the measurements were taken, dating every window (default: the one date the dataset's comments name; without either the import stops).", valueName: "YYYY-MM-DD"))
        var date: String?
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
            if let date, UTCDay(isoDate: date) == nil { throw ValidationError("--date: expected YYYY-MM-DD, got '\(date)'") }
        }

        func run() throws {
            try TrialCommandSupport.run("trial import leith") {
                var options = HistogramImport.Options()
                options.placement = HistogramImport.Placement(rawValue: at)!
                options.transmissionRiskLevel = transmissionRiskLevel
                let r = try LeithImport.dated(in: URL(fileURLWithPath: dir), ranges: try parsedRanges(), options: options,
                                              date: date.flatMap(UTCDay.init(isoDate:)))
                let (contacts, counts) = (r.contacts, r.counts)
                FileHandle.standardError.write(Data("gaenctl trial import leith: windows dated \(r.day.isoDate) (from \(r.daySource))\n".utf8))
                try TrialImportCommand.writeContacts(contacts, "leith", counts, output: output)
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

        @Argument(help: ArgumentHelp("RSSI tables (CSV; .csv.gz read directly).", valueName: "CSV"))
        var files: [String]
        @Option(parsing: .unconditional, help: ArgumentHelp("TX power of the transmitter, dBm (a constant: raw tables carry no AEM).", valueName: "DBM"))
        var txPower: Double
        @Option(help: "Column holding the range/distance (default: range, else distance).")
        var distanceColumn: String?
        @Option(help: "Column holding the RSSI.")
        var rssiColumn: String = "rssi"
        @Option(help: "Column holding the time (default: time, else timestamp; rows are numbered without one).")
        var timeColumn: String?
        @Option(help: "Column naming the receiving device (default: receiver).")
        var receiverColumn: String?
        @Option(help: "Column naming the transmitting device (default: transmitter).")
        var transmitterColumn: String?
        @Option(help: ArgumentHelp("Time zone of times written without one (e.g. UTC, America/New_York); without it such a time is refused.", valueName: "ZONE"))
        var timezone: String?
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
            _ = try TrialCommandSupport.zone(timezone)
        }

        func run() throws {
            try TrialCommandSupport.run("trial import rssi") {
                var o = RSSITableImport.Options(txPower: txPower)
                o.distanceColumn = distanceColumn; o.rssiColumn = rssiColumn; o.distanceScale = distanceScale
                o.timeColumn = timeColumn; o.receiverColumn = receiverColumn; o.transmitterColumn = transmitterColumn
                o.receiver = receiver; o.transmitter = transmitter
                o.timeZone = try TrialCommandSupport.zone(timezone)
                var total = ImportCounts()
                // Streamed into a file renamed into place at the end: a failed import leaves an existing OUT untouched.
                try AtomicOutputFile.with(path: output, durable: false) { file in
                    var buffer = RSSITableImport.outputHeader.joined(separator: ",") + "\n"
                    for f in files {
                        let counts = try RSSITableImport.convert(CSVReader(contentsOf: URL(fileURLWithPath: f)), options: o) { line in
                            buffer += line; buffer += "\n"
                            if buffer.utf8.count >= 1 << 20 { try file.write(Data(buffer.utf8)); buffer.removeAll(keepingCapacity: true) }
                        }
                        total.add(counts)
                    }
                    try file.write(Data(buffer.utf8))
                }
                TrialImportCommand.report("rssi", total, output: output)
            }
        }
    }
}

/// `gaenctl trial replay`: notification rules per contact against ground truth.
struct TrialReplayCommand: ParsableCommand {
    /// A rule's number as people read it: whole numbers whole, others to 3 significant decimals.
    static func readable(_ v: Double) -> String {
        if v.isNaN { return "NA" }  // a number the contact does not have (never heard: no attenuation)
        return v == v.rounded() && abs(v) < 1e15 ? Format.exact(v) : Format.time((v * 1000).rounded() / 1000)
    }

    /// One row per contact and rule: index, label, cluster, distance, a close column per
    /// distance, rule, notified, score (the first number the rule decided on), the numbers as
    /// name=value, and why the verdict may not be the app's. Written atomically.
    static func writeVerdicts(_ contacts: [Contact], results: [ReplayResult], distances: [Double], closeFor: Double?, to path: String) throws {
        var csv = CSVWriter(header: ["index", "label", "cluster", "distance"] + distances.map { "close_\(Format.exact($0))" }
                                    + ["rule", "notified", "score", "numbers", "unjudged"])
        let first = results.filter { $0.closeContact == distances[0] }
        for (i, c) in contacts.enumerated() {
            for r in first {
                let j = r.judgements[i]
                csv.appendRow([String(i), c.label, c.cluster ?? "#\(i)", Format.exact(c.distance)] + distances.map { Replay.isCloseContact(c, within: $0, for: closeFor) ? "true" : "false" }
                              + [r.rule, j.notified ? "true" : "false", j.numbers.first.map { Format.exact($0.value) } ?? "",
                                 j.numbers.map { "\($0.name)=\($0.value.isNaN ? "NA" : Format.exact($0.value))" }.joined(separator: " "), j.unjudged ?? ""])
            }
        }
        try AtomicOutputFile.write(Data(csv.text.utf8), to: path, mode: 0o644, durable: false)
    }

    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay notification rules per contact against ground truth: true/false positives per rule.",
        discussion: """
            --rule NAME[=CONFIG], repeatable; NAME one of \(RiskEngineRegistry.names.joined(separator: ", ")) (gaenctl risk engines); CONFIG its \
            configuration file (JSON, may start with # comment lines; cwa-v1 also the CWA app configuration in \
            protobuf text format, in any field spelling the apps served; a field this tool does not know is an error \
            naming it and its line, a warning with --allow-unknown-fields; default: for cwa and cwa-v1 the configuration \
            the CWA server published in force on the contacts' latest day, said on stderr (warned when there was none \
            yet), the current one for nhs, SwissCovid's and Immuni's published values; gaen-v1 needs one). A \
            configuration under which no contact could ever be notified is warned about. --rule cwa@DATE and \
            cwa-v1@DATE (YYYY-MM-DD): the configuration the CWA server published in force on that day \
            (`gaenctl risk configurations` lists them), named on stderr; repeat with other dates to compare. Each contact is judged from its \
            own windows on its own day. close = distance <= --close-contact. Inputs a rule cannot judge as the app \
            would (windows without a transmission risk level where the levels weigh differently, contacts never \
            heard) are warned about on stderr. --per-contact adds each contact's verdict per rule with the numbers \
            the rule decided on. Each rate has two 95 % intervals: Wilson's (contacts independent) and a cluster \
            bootstrap (2000 seeded resamples of whole clusters: a contact's "cluster" in the contacts file, its pair \
            or scenario, else the contact alone); ROC AUC and average precision sweep a threshold over each contact's \
            score (the first number the rule decided on). --close-contact is repeatable: each distance is judged. \
            --verdicts FILE writes the per-contact verdicts as a flat CSV. --json prints {"rules":[{"rule","closeContact", \
            "notified","close","far","truePositives","falsePositives","tpr","fpr","precision","warnings","accuracy": \
            {"clusters","bootstrapResamples","tprWilson","tprBootstrap",...,"rocAUC","averagePrecision"}}]} (null \
            where nothing divides; one entry per rule and distance), with --per-contact \
            also "contacts":[{"index","label","distance","close","verdicts":[{"rule","notified","numbers":{...}, \
            "unjudged"}]}], with rules named NAME@DATE also "publishedConfigurations":[{"rule","from","until", \
            "apps","source":{"repository","commit","commitDate","paths"}}].
            """)

    @Option(help: ArgumentHelp("Contacts JSON (trial import histogram writes it; may start with # comment lines).", valueName: "FILE"))
    var contacts: String
    @Option(help: ArgumentHelp("A rule to replay, NAME[=CONFIG] or NAME@YYYY-MM-DD (cwa, cwa-v1: as published that day); repeatable.", valueName: "NAME[=CONFIG]"))
    var rule: [String] = []
    @Option(help: ArgumentHelp("Ground truth close contact: distance at most this many metres. Repeatable: each distance is judged in the same run.", valueName: "METRES"))
    var closeContact: [Double] = []
    @Option(help: ArgumentHelp("Close only after at least this many minutes (cumulative) within --close-contact: needs contacts with their distance over time (trial contacts).", valueName: "MINUTES"))
    var closeFor: Double?
    @Option(help: ArgumentHelp("Write every contact's verdict per rule as a flat CSV (one row per contact and rule, a close column per distance) for R and pandas.", valueName: "FILE"))
    var verdicts: String?
    @Flag(help: "Also print each contact's verdict per rule and the numbers the rule used.")
    var perContact = false
    @Flag(help: "Read a configuration with fields this tool does not know, leaving them out with a warning on stderr (default: refused, naming the field and its line).")
    var allowUnknownFields = false
    @Option(help: ArgumentHelp("How a v1-scoring rule (gaen-v1, immuni) rounds exposure durations: nearest (5-minute steps, halves down, the framework's reference; default), up, down or none; repeatable.", valueName: "RULE=MODE"))
    var durationRounding: [String] = []
    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        guard !rule.isEmpty else { throw ValidationError("give at least one --rule NAME[=CONFIG]") }
        guard !closeContact.isEmpty else { throw ValidationError("give --close-contact METRES (repeatable)") }
        for d in closeContact { guard d >= 0, d.isFinite else { throw ValidationError("--close-contact must be metres >= 0, got \(d)") } }
        if let closeFor { guard closeFor.isFinite, closeFor >= 0, closeFor <= 20_160 else { throw ValidationError("--close-for must be minutes in 0...20160, got \(closeFor)") } }
        _ = try parsedRounding()
    }

    /// `--duration-rounding RULE=MODE`, RULE an engine scored the v1 way (gaen-v1, immuni).
    func parsedRounding() throws -> [String: GAENv1DurationRounding] {
        var out: [String: GAENv1DurationRounding] = [:]
        for item in durationRounding {
            let p = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard p.count == 2, p[0] == "gaen-v1" || p[0] == "immuni" else {
                throw ValidationError("--duration-rounding: expected gaen-v1=MODE or immuni=MODE, got '\(item)'")
            }
            guard let mode = GAENv1DurationRounding(rawValue: p[1]) else {
                throw ValidationError("--duration-rounding: '\(p[1])' is not nearest, up, down or none")
            }
            out[p[0]] = mode
        }
        return out
    }

    func run() throws {
        try TrialCommandSupport.run("trial replay") {
            let list = try ContactsFile.read(URL(fileURLWithPath: contacts))
            let options = ReplayOptions(allowUnknownFields: allowUnknownFields, durationRounding: try parsedRounding(),
                                        dataDay: ReplayOptions.latestDay(list))
            let rules = try rule.map { spec in
                try ReplayRule.parse(spec, options: options) { path in
                    do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch { throw CommandFailure("--rule \(spec): cannot read \(path)") }
                }
            }
            for r in rules {
                // Warnings among the notes are printed with the results' warnings below.
                for n in r.notes where !n.hasPrefix("warning: ") { FileHandle.standardError.write(Data("gaenctl trial replay: \(r.spec): \(n)\n".utf8)) }
                if let p = r.published { FileHandle.standardError.write(Data("gaenctl trial replay: \(r.spec): published configuration \(p.summary)\n".utf8)) }
            }
            let results = try closeContact.flatMap { try Replay.run(list, rules: rules, closeContact: $0, closeFor: closeFor.map { $0 * 60 }) }
            if let verdicts { try Self.writeVerdicts(list, results: results, distances: closeContact, closeFor: closeFor.map { $0 * 60 }, to: verdicts) }
            for r in results where r.closeContact == closeContact[0] {
                for w in r.warnings { FileHandle.standardError.write(Data("gaenctl trial replay: warning: \(r.rule): \(w)\n".utf8)) }
            }
            if json {
                struct Verdict: Encodable {
                    var rule: String; var notified: Bool; var numbers: [String: Double?]; var unjudged: String?
                    func encode(to encoder: Encoder) throws {
                        enum K: String, CodingKey { case rule, notified, numbers, unjudged }
                        var c = encoder.container(keyedBy: K.self)
                        try c.encode(rule, forKey: .rule); try c.encode(notified, forKey: .notified); try c.encode(numbers, forKey: .numbers)
                        if let unjudged { try c.encode(unjudged, forKey: .unjudged) } else { try c.encodeNil(forKey: .unjudged) }
                    }
                }
                struct PerContact: Encodable { var index: Int; var label: String; var distance: Double; var close: Bool; var verdicts: [Verdict] }
                struct Published: Encodable { var rule: String; var from: String; var until: String?; var apps: String; var source: PublishedRiskConfigurations.Source }
                struct Out: Encodable { var rules: [ReplayResult]; var contacts: [PerContact]?; var publishedConfigurations: [Published]? }
                let first = results.filter { $0.closeContact == closeContact[0] }
                let per: [PerContact]? = perContact ? list.enumerated().map { i, c in
                    PerContact(index: i, label: c.label, distance: c.distance, close: Replay.isCloseContact(c, within: closeContact[0], for: closeFor.map { $0 * 60 }), verdicts: first.map { r in
                        let j = r.judgements[i]
                        return Verdict(rule: r.rule, notified: j.notified, numbers: Dictionary(j.numbers.map { ($0.name, $0.value.isNaN ? nil : $0.value) }, uniquingKeysWith: { a, _ in a }),
                                       unjudged: j.unjudged)
                    })
                } : nil
                let enc = JSONEncoder()
                enc.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                let published = rules.compactMap { r in
                    r.published.map { Published(rule: r.spec, from: $0.from, until: $0.until, apps: $0.apps, source: $0.source) }
                }
                print(String(decoding: try enc.encode(Out(rules: results, contacts: per, publishedConfigurations: published.isEmpty ? nil : published)),
                             as: UTF8.self))
            } else {
                func pct(_ v: Double) -> String { v.isNaN ? "n/a" : Format.fixed(v * 100, 1) + " %" }
                let width = max(4, results.map(\.rule.count).max() ?? 4)
                func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(0, n - s.count)) }
                let several = closeContact.count > 1
                print(pad("rule", width) + (several ? "  close at" : "") + "  notified  close  far  TP  FP       TPR       FPR  precision")
                for r in results {
                    let cols = [String(r.notified), String(r.close), String(r.far), String(r.truePositives), String(r.falsePositives)]
                    let widths = [8, 5, 3, 2, 2]
                    var line = pad(r.rule, width) + (several ? "  " + pad(Format.exact(r.closeContact) + " m", 8) : "")
                    for (c, w) in zip(cols, widths) { line += "  " + String(repeating: " ", count: max(0, w - c.count)) + c }
                    for (v, w) in [(r.tpr, 8), (r.fpr, 8), (r.precision, 9)] { let c = pct(v); line += "  " + String(repeating: " ", count: max(0, w - c.count)) + c }
                    print(line)
                }
                // How sure: 95 % intervals, per contact (Wilson) and resampling clusters (bootstrap).
                print("")
                for r in results {
                    guard let a = r.accuracy else { continue }
                    func ci(_ w: ReplayAccuracy.Interval?, _ b: ReplayAccuracy.Interval?) -> String {
                        func one(_ i: ReplayAccuracy.Interval?) -> String { i.map { "[\(Format.fixed($0.low * 100, 1)), \(Format.fixed($0.high * 100, 1))] %" } ?? "n/a" }
                        return "Wilson \(one(w)), bootstrap \(one(b))"
                    }
                    print("\(r.rule)\(several ? " (close at \(Format.exact(r.closeContact)) m)" : ""): TPR \(ci(a.tprWilson, a.tprBootstrap)); "
                          + "FPR \(ci(a.fprWilson, a.fprBootstrap)); precision \(ci(a.precisionWilson, a.precisionBootstrap)); "
                          + "ROC AUC \(a.rocAUC.map { Format.fixed($0, 3) } ?? "n/a"), average precision \(a.averagePrecision.map { Format.fixed($0, 3) } ?? "n/a") "
                          + "(\(a.clusters) clusters, \(a.bootstrapResamples) resamples)")
                }
                if perContact {
                    // One line per contact and rule: what was decided and on which numbers.
                    print("")
                    print("contact  distance  close  rule  verdict  numbers")
                    for (i, c) in list.enumerated() {
                        for r in results where r.closeContact == closeContact[0] {
                            let j = r.judgements[i]
                            let numbers = j.numbers.map { "\($0.name)=\(Self.readable($0.value))" }.joined(separator: " ")
                            let label = c.label.isEmpty ? "#\(i)" : "#\(i) \(c.label)"
                            print("\(label)  \(Format.exact(c.distance)) m  \(Replay.isCloseContact(c, within: closeContact[0], for: closeFor.map { $0 * 60 }) ? "close" : "far")  \(r.rule)  "
                                  + "\(j.notified ? "notified" : "not notified")  \(numbers)\(j.unjudged.map { "  (cannot judge: \($0))" } ?? "")")
                        }
                    }
                }
                print("\(list.count) contacts; close contact: distance <= \(closeContact.map { Format.exact($0) }.joined(separator: ", ")) m"
                      + (closeFor.map { " for at least \(Format.exact($0)) minutes in all" } ?? ""))
            }
        }
    }
}

/// `gaenctl trial contacts`: readings over time into contacts with exposure windows formed as the
/// framework forms them, and each pair's true distance over time (TrialKit ReadingContacts).
struct TrialContactsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "Turn readings over time (trial import dp3t/rssi output) into contacts: exposure windows as the framework forms them, and each pair's distance over time.",
        discussion: """
            Each (scenario, receiver, transmitter) becomes one contact. The receiver's scans are laid on a grid \
            (--scan-interval, default 300 s; each listening --scan-seconds, default 4, or --whole-interval), the \
            readings inside a scan become sightings of an RPI that rotates every 10 minutes, of a key per \
            transmitter and UTC day, and the node's own implementation of the framework's rules forms the \
            windows (scan instances per scan and RPI, mean and minimum attenuation, secondsSinceLastScan, \
            30-minute windows). The pair's true distance over time (each reading's distance until the next, for \
            at most one scan interval) is kept as "distanceOverTime", so `trial replay --close-contact 1.5 \
            --close-for 15` judges "15 minutes within 1.5 m". Cluster (for the bootstrap): the scenario, else \
            the pair (--cluster pair). Written atomically. See docs/trial.md.
            """)

    @Argument(help: ArgumentHelp("Readings CSV files: time,receiver,transmitter,distance,attenuation[,scenario|site].", valueName: "READINGS"))
    var readings: [String]
    @Option(name: .shortAndLong, help: ArgumentHelp("The contacts JSON to write.", valueName: "FILE"))
    var output: String
    @Option(help: "Seconds from one scan to the next.")
    var scanInterval: Double = 300
    @Option(help: "Seconds each scan listens.")
    var scanSeconds: Double = 4
    @Flag(help: "Every reading counts (a scan listens the whole interval): for datasets sampled too sparsely for a 4 s window.")
    var wholeInterval = false
    @Option(help: ArgumentHelp("The transmission risk level of every key (0-8), for the rules that weigh it.", valueName: "N"))
    var transmissionRiskLevel: Int?
    @Option(help: ArgumentHelp("What the bootstrap resamples: scenario or pair.", valueName: "scenario|pair"))
    var cluster: String = "scenario"

    func validate() throws {
        guard !readings.isEmpty else { throw ValidationError("give at least one readings file") }
        try NumericOption.check(scanInterval, "--scan-interval", 1...3_600)
        try NumericOption.check(scanSeconds, "--scan-seconds", 0.1...3_600)
        guard wholeInterval || scanSeconds <= scanInterval else { throw ValidationError("--scan-seconds must be at most --scan-interval") }
        if let t = transmissionRiskLevel { guard (0...8).contains(t) else { throw ValidationError("--transmission-risk-level must be 0...8") } }
        guard ["scenario", "pair"].contains(cluster) else { throw ValidationError("--cluster: scenario or pair") }
    }

    func run() throws {
        try TrialCommandSupport.run("trial contacts") {
            var settings = ReadingContacts.Settings()
            settings.scanInterval = scanInterval
            settings.scanSeconds = wholeInterval ? nil : scanSeconds
            settings.transmissionRiskLevel = transmissionRiskLevel
            settings.clusterByScenario = cluster == "scenario"
            let list = try ReadingContacts.read(readings.map { URL(fileURLWithPath: $0) })
            let contacts = try ReadingContacts.contacts(list, settings: settings)
            try AtomicOutputFile.write(try ContactsFile.encode(contacts), to: output, mode: 0o644, durable: false)
            let heard = contacts.filter { !$0.windows.isEmpty }.count
            FileHandle.standardError.write(Data("gaenctl trial contacts: \(list.count) readings, \(contacts.count) contacts (\(heard) with windows, \(contacts.map(\.windows.count).reduce(0, +)) windows); wrote \(output)\n".utf8))
        }
    }
}
