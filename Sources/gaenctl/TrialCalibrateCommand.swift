import ArgumentParser
import Foundation
import TrialKit
import TrialFormats

/// `gaenctl trial calibrate`: per-device calibration estimated from a trial's own readings at
/// known distances (TrialKit's CalibrationEstimate; docs/trial.md).
struct TrialCalibrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Estimate each device's RSSI correction and TX power from the trial's readings at known distances.",
        discussion: """
            Fits attenuation = a[site] + s[site] log10(distance) + R[receiver] + T[transmitter] \
            by least squares over the attenuation files (a report's attenuation.csv, `trial import \
            dp3t`'s output; .csv.gz read directly): R is the attenuation a device adds when it \
            receives, T when it transmits, relative to the mean device or to --reference. \
            Standard errors are clustered by pair. Writes DIR/offsets.csv (every device: rows, \
            offsets, standard errors, current and proposed values, confidence), \
            DIR/calibration.csv (the proposed table in the layout of Google's calibration table, \
            which `trial import dp3t --calibration` reads) and DIR/calibration.md, and prints \
            calibration.md. Censoring (weak readings lost at range) pulls offsets towards 0: \
            --maximum-distance keeps the near readings.
            """
    )

    @Argument(help: ArgumentHelp("Attenuation files (CSV, .csv.gz) with distance and attenuation columns.", valueName: "FILE"))
    var files: [String]

    @Option(help: ArgumentHelp("What a device is: board (the receiver/transmitter columns) or model (receiver_model/transmitter_model).", valueName: "board|model"))
    var by: String = "board"

    @Option(help: ArgumentHelp("The device whose offsets are 0 (it must have received and transmitted); default: the mean device.", valueName: "NAME"))
    var reference: String?

    @Option(help: ArgumentHelp("Only rows of this site (the site or scenario column); repeatable.", valueName: "SITE"))
    var site: [String] = []

    @Option(help: ArgumentHelp("Only readings at most this far.", valueName: "METRES"))
    var maximumDistance: Double?

    @Option(help: "A device with fewer readings in a role gets calibration confidence 0.")
    var minimumRows: Int = 100

    @Option(help: ArgumentHelp("The oem column of calibration.csv.", valueName: "NAME"))
    var oem: String = "gaend-trial"

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Output directory (created).", valueName: "DIR"))
    var output: String

    func validate() throws {
        guard CalibrationEstimate.Grouping(rawValue: by) != nil else { throw ValidationError("--by: expected board or model, got '\(by)'") }
        if let m = maximumDistance, !(m > 0) || !m.isFinite { throw ValidationError("--maximum-distance: expected metres > 0, got \(m)") }
        guard minimumRows >= 1 else { throw ValidationError("--minimum-rows: expected 1 or more, got \(minimumRows)") }
        guard !files.isEmpty else { throw ValidationError("give at least one attenuation file") }
    }

    func run() throws {
        try TrialCommandSupport.run("trial calibrate") {
            var options = CalibrationEstimate.Options()
            options.grouping = CalibrationEstimate.Grouping(rawValue: by)!
            options.reference = reference
            options.sites = Set(site)
            options.maximumDistance = maximumDistance
            options.minimumRows = minimumRows
            let estimate = try CalibrationEstimate.estimate(files.map { URL(fileURLWithPath: $0) }, options: options)
            // Everything is computed before the directory is touched: a failed run writes nothing.
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let markdown = estimate.markdown(inputs: files)
            try AtomicOutputFile.write(Data(estimate.offsetsCSV().utf8), to: output + "/offsets.csv", mode: 0o644, durable: false)
            try AtomicOutputFile.write(Data(estimate.calibrationTableCSV(oem: oem).utf8), to: output + "/calibration.csv", mode: 0o644, durable: false)
            try AtomicOutputFile.write(Data(markdown.utf8), to: output + "/calibration.md", mode: 0o644, durable: false)
            print(markdown, terminator: "")
        }
    }
}
