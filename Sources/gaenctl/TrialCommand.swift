import ArgumentParser
import ENProtocol
import Foundation
import PlatformSupport
import TrialKit
import TrialFormats

/// `gaenctl trial`: the field-trial toolkit's analysis (docs/trial.md).
struct Trial: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Field trials: provisioning from the inventory, attenuation against ground-truth distance, importers, contacts from readings, rule replay, collected data checks.",
        subcommands: [TrialReportCommand.self, TrialRPIsCommand.self, TrialImportCommand.self, TrialContactsCommand.self, TrialReplayCommand.self, TrialVerifyCommand.self, TrialProvisionCommand.self, TrialCalibrateCommand.self]
    )
}

/// One stderr line and exit status 1 for any failure of the research tools' commands (trial, match,
/// windows, simulate, calibrate).
enum TrialCommandSupport {
    /// `--timezone ZONE`: an IANA name (Europe/Zurich), UTC, or a fixed offset (+02:00).
    static func zone(_ name: String?) throws -> TimeZone? {
        guard let name else { return nil }
        if name == "UTC" || name == "Z" { return TimeZone(identifier: "UTC") }
        if let z = TimeZone(identifier: name) { return z }
        if name.count == 6, name.first == "+" || name.first == "-", let z = try? TimeInput.parse("1970-01-01T00:00:00" + name) {
            return TimeZone(secondsFromGMT: -Int(z))
        }
        throw ValidationError("--timezone: '\(name)' is not a time zone (an IANA name such as Europe/Zurich, UTC, or an offset such as +02:00)")
    }

    static func run(_ command: String, _ body: () throws -> Void) throws {
        do { try body() } catch { throw failure(command, error) }
    }

    /// What `run` throws for `error`: an exit status or usage error as it is; any other failure
    /// written as one stderr line, then exit status 1. Async commands (calibrate) call it too.
    static func failure(_ command: String, _ error: any Error) -> any Error {
        if error is ExitCode || error is ValidationError { return error }
        var message = String(describing: error)
        // Foundation's file errors describe themselves as a whole NSError dump; say path and reason.
        if let e = error as? CocoaError { message = "\(e.filePath ?? "file"): \(SystemCallError.reason(of: e))" }
        FileHandle.standardError.write(Data("gaenctl \(command): \(message.replacingOccurrences(of: "\n", with: " "))\n".utf8))
        return ExitCode(1)
    }
}

struct TrialReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Match sightings against keys, join ground truth, fit the channel and write a report directory.",
        discussion: """
            Writes report.json, report.md, attenuation.csv, distances.csv, fit.csv, curve.csv, \
            detection.csv and plot.svg into the output directory. The receiver of a sighting is \
            its `node` column (else the sightings file's name), the transmitter the name of the \
            key file it matched (keys/phone-1.json -> phone-1). Markers labelled \
            pair:<receiver>/<transmitter> hold for that pair only; other markers for every pair. \
            Instead of sightings and keys, --attenuations takes an attenuation CSV \
            (time,attenuation[,receiver,transmitter,distance]), e.g. a report's own attenuation.csv. \
            With --placement (the trial's placement plan) and --collected (the collected tree), \
            the report also says for each board whether its app's notification was right: \
            notifications.csv and a section of report.md (docs/trial.md); these two alone \
            write only that.
            """
    )

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Sightings export files (CSV, or JSON lines as .jsonl).", valueName: "FILE"))
    var sightings: [String] = []

    @Option(parsing: .upToNextOption, help: ArgumentHelp("JSON key lists of the transmitters, one file per transmitter.", valueName: "FILE"))
    var keys: [String] = []

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Ground-truth markers CSV files (time,label,distance,note).", valueName: "FILE"))
    var markers: [String] = []

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Attenuation files (CSV, or JSON lines as trial report --attenuation-format jsonl writes them), instead of --sightings and --keys.", valueName: "FILE"))
    var attenuations: [String] = []

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Report directory (created).", valueName: "DIR"))
    var output: String

    @Option(help: "Site label of the report; rows of other sites are left out.")
    var site: String?

    @Option(help: ArgumentHelp("Ground truth close contact: distance at most this many metres.", valueName: "METRES"))
    var closeContact: Double = 2

    @Option(help: ArgumentHelp("Attenuation thresholds of the detection tables, comma-separated.", valueName: "DB,DB,..."))
    var thresholds: String = "55,63,73"

    @Option(help: ArgumentHelp("'daily': attenuation rows as DIR/attenuation/board=<receiver>/day=<YYYY-MM-DD>/attenuation.csv instead of one attenuation.csv.", valueName: "daily"))
    var split: String?

    @Option(help: ArgumentHelp("The attenuation rows as csv (attenuation.csv) or jsonl (attenuation.jsonl, JSON lines).", valueName: "csv|jsonl"))
    var attenuationFormat: String = "csv"

    @OptionGroup var notifications: TrialNotificationOptions

    func validate() throws {
        try notifications.check()
        if notifications.placement != nil, sightings.isEmpty, keys.isEmpty, attenuations.isEmpty { return }
        if let split, split != "daily" { throw ValidationError("--split: expected 'daily', got '\(split)'") }
        guard attenuationFormat == "csv" || attenuationFormat == "jsonl" else { throw ValidationError("--attenuation-format must be csv or jsonl") }
        if attenuations.isEmpty {
            guard !sightings.isEmpty, !keys.isEmpty else { throw ValidationError("give --sightings and --keys, or --attenuations") }
        } else {
            guard sightings.isEmpty, keys.isEmpty else { throw ValidationError("--attenuations replaces --sightings and --keys; give one or the other") }
        }
        guard closeContact > 0, closeContact.isFinite else { throw ValidationError("--close-contact must be a positive number of metres") }
        _ = try parsedThresholds()
    }

    func parsedThresholds() throws -> [Double] {
        let parts = thresholds.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let values = parts.compactMap(Double.init)
        guard !parts.isEmpty, values.count == parts.count, values.allSatisfy(\.isFinite) else {
            throw ValidationError("--thresholds: expected numbers separated by commas, got '\(thresholds)'")
        }
        return values
    }

    func run() throws {
        try TrialCommandSupport.run("trial report") {
            // Computed first: a bad plan or outcome fails before any file is written.
            let verdicts = try notifications.result()
            if let verdicts, sightings.isEmpty, keys.isEmpty, attenuations.isEmpty {
                try TrialNotificationOptions.write(verdicts, to: URL(fileURLWithPath: output), appendingToReport: false)
                print(TrialNotificationOptions.summary(verdicts, output: output))
                return
            }
            var options = AnalysisOptions()
            options.thresholds = try parsedThresholds()
            options.closeContactDistance = closeContact
            var allMarkers: [Marker] = []
            for m in markers { allMarkers += try MarkersFile.read(URL(fileURLWithPath: m)) }
            let truth = GroundTruth(markers: allMarkers)
            // Streamed: each file is read in pieces, matched, joined and counted; the
            // attenuation rows are written as they come (docs/trial.md, "Memory").
            let transmitters = try keys.map(TrialInputs.readKeys)
            let stream = TrialStream(transmitters: transmitters, groundTruth: truth, site: site)
            let dir = URL(fileURLWithPath: output)
            let rows = try AttenuationRowsWriter(reportDirectory: dir, daily: split == "daily", jsonLines: attenuationFormat == "jsonl")
            do {
                if attenuations.isEmpty {
                    // Read in pieces on every core, matched against one RPI table; the rows go to `rows` directly.
                    try TrialInputs.addSightings(sightings, to: stream, rows: rows)
                } else {
                    // Read in pieces on every core; the rows go to `rows` directly.
                    try stream.addAttenuationFiles(attenuations.map { URL(fileURLWithPath: $0) }, rows: rows)
                }
                try rows.commit()
            } catch { rows.discard(); throw error }
            var report = stream.report(options: options)
            // Each figure's footer names its data and, for imported attenuations, the calibration table.
            let inputs = attenuations.isEmpty ? sightings + keys + markers : attenuations + markers
            let tables = attenuations.flatMap { TrialStream.calibrationTables(named: URL(fileURLWithPath: $0)) }
            report.sources = ReportSources(inputs: inputs, calibration: tables.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } })
            try TrialReportWriter.write(report, tally: stream.tally, to: dir, dailyAttenuation: split == "daily", jsonLines: attenuationFormat == "jsonl")
            print(Self.summary(report, output: output))
            if let verdicts {
                try TrialNotificationOptions.write(verdicts, to: dir, appendingToReport: true)
                print(TrialNotificationOptions.summary(verdicts, output: output))
            }
        }
    }

    static func summary(_ r: TrialReport, output: String) -> String {
        var s = r.attenuationInput == true
            ? "\(r.counts.withGroundTruth) sightings with ground truth of \(r.counts.rows) attenuation rows"
            : "\(r.counts.withGroundTruth) sightings with ground truth of \(r.counts.matched) matched (\(r.counts.reports) reports)"
        if let f = r.analysis.fit {
            s += "; A(1 m) \(Format.fixed(f.attenuationAt1m, 1)) dB, slope \(Format.fixed(f.slopePerDecade, 2)) dB/decade, sigma \(Format.fixed(f.sigma, 2)) dB"
        } else {
            s += "; no fit: \(r.analysis.fitError ?? "no data")"
        }
        return s + "; report in \(output)"
    }
}

/// `gaenctl trial rpis`: the keys' RPI table as CSV, for matching sightings outside gaenctl
/// (the DuckDB recipe from sightings, docs/trial.md).
struct TrialRPIsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpis",
        abstract: "Write the keys' RPIs (with the transmitter, interval, matching window and AEM mask) as CSV.",
        discussion: """
            One row per RPI: rpi,transmitter,interval,match_from,match_to,tx_power_mask,key_rolling_start,\
            key_rolling_period. A sighting matches a row when its rpi is the row's and floor(time / 600) lies \
            in match_from..match_to (the matcher's 2-hour clock tolerance); its TX power is the signed byte \
            (AEM byte 1) XOR tx_power_mask, used when it lies in -50..20. Revoked keys, keys with a rolling \
            period outside 1..144 and repeated TEKs are left out, as trial report leaves them out.
            """
    )

    @Option(parsing: .upToNextOption, help: ArgumentHelp("JSON key lists of the transmitters, one file per transmitter.", valueName: "FILE"))
    var keys: [String] = []

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("CSV file to write.", valueName: "FILE"))
    var output: String

    func validate() throws {
        guard !keys.isEmpty else { throw ValidationError("give --keys") }
    }

    func run() throws {
        try TrialCommandSupport.run("trial rpis") {
            let transmitters = try keys.map(TrialInputs.readKeys)
            let table = try RPITable(transmitters)
            // Written whole and renamed into place: a failed run leaves an existing file as it was.
            let file = try AtomicOutputFile(path: output, mode: 0o644, durable: false)
            do { try table.writeCSV(to: file, names: transmitters.map(\.name)); try file.commit() } catch { file.discard(); throw error }
            print("\(table.ordered.count) RPIs of \(table.keys.count) keys of \(transmitters.count) transmitters; wrote \(output)")
        }
    }
}
