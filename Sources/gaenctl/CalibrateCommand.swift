import ArgumentParser
import ENProtocol
import Foundation
import TrialKit

/// `gaenctl calibrate`: the guided RSSI calibration against a reference transmitter at 1 m.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compute the board's RSSI correction from a reference transmitter at 1 m and save it to the config.",
        discussion: """
            Guides through the orientations (default front, back, left, right): place the
            reference transmitter 1 m from the board facing that way, then press Enter. The
            measurement source is a sightings export of the reference (--sightings); orientations
            are cut by --markers (one marker per orientation, in order) or, without markers, into
            equal consecutive time spans. The correction is expected RSSI - median RSSI, where
            the expected RSSI is --expected-rssi, or the reference's TX power (from its AEMs with
            --reference-keys, or --reference-tx-power) minus --reference-attenuation. Writes
            {"calibration":{"txPower","rssiCorrection","calibrationConfidence"}} into --config,
            keeping the file's other settings. See docs/trial.md.
            """
    )

    @Option(help: ArgumentHelp("JSON config file to update (created if missing).", valueName: "FILE"))
    var config: String

    @Option(help: ArgumentHelp("Sightings export recorded during the procedure.", valueName: "FILE"))
    var sightings: String

    @Option(help: ArgumentHelp("Markers CSV: one marker per orientation, in order.", valueName: "FILE"))
    var markers: String?

    @Option(help: ArgumentHelp("JSON key list of the reference transmitter: keeps only its sightings and reads its TX power from the AEMs.", valueName: "FILE"))
    var referenceKeys: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("RSSI a calibrated receiver reports for the reference at 1 m.", valueName: "DBM"))
    var expectedRssi: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("Attenuation a calibrated receiver measures for the reference at 1 m.", valueName: "DB"))
    var referenceAttenuation: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("TX power the reference advertises (when its keys are not given).", valueName: "DBM"))
    var referenceTxPower: Double?

    @Option(help: ArgumentHelp("Orientations, comma-separated.", valueName: "NAMES"))
    var orientations: String = CalibrationProcedure.defaultOrientations.joined(separator: ",")

    @Option(help: "Minimum readings per orientation.")
    var minSamples: Int = 10

    @Option(parsing: .unconditional, help: ArgumentHelp("TX power this board advertises, saved with the correction (default: keep the config's).", valueName: "DBM"))
    var txPower: Int?

    @Option(help: ArgumentHelp("Calibration confidence 0-3 to save instead of the computed one.", valueName: "LEVEL"))
    var calibrationConfidence: Int?

    @Flag(help: "Do not prompt; take the orientations from the recording as they come.")
    var nonInteractive = false

    @Flag(help: "Print the result without writing the config.")
    var dryRun = false

    func validate() throws {
        let haveExpected = expectedRssi != nil
        let haveReference = referenceAttenuation != nil && (referenceKeys != nil || referenceTxPower != nil)
        guard haveExpected != haveReference else {
            throw ValidationError("give --expected-rssi, or --reference-attenuation with --reference-keys or --reference-tx-power (one of the two ways)")
        }
        if let c = calibrationConfidence, !(0...3).contains(c) { throw ValidationError("--calibration-confidence must be 0...3, got \(c)") }
        if let t = txPower, !BluetoothMetadata.plausibleTxPower.contains(t) {
            throw ValidationError("--tx-power must be within \(BluetoothMetadata.plausibleTxPower) dBm, got \(t)")
        }
        guard minSamples >= 1 else { throw ValidationError("--min-samples must be at least 1") }
    }

    func run() throws {
        try TrialCommandSupport.run("calibrate") {
            var rows = try TrialKit.SightingsExport.read(URL(fileURLWithPath: sightings)).filter { !$0.isEmptyScan }
            var expected = expectedRssi
            if let referenceKeys {
                let reference = try TrialInputs.readKeys(referenceKeys)
                let result = try KeyScheduleMatcher().match(rows, against: [reference])
                guard !result.matches.isEmpty else {
                    throw CalibrationError.noReference(reason: "no sighting in \(sightings) matches the keys in \(referenceKeys)")
                }
                rows = result.matches.map { rows[$0.sightingIndex] }
                let tx = Statistics.median(result.matches.map { Double($0.txPower) })
                if let a = referenceAttenuation { expected = tx - a }
            } else if let a = referenceAttenuation, let tx = referenceTxPower {
                expected = tx - a
            }
            guard let expected else { throw CalibrationError.noReference(reason: "no expected RSSI") }
            let marks = try markers.map { try MarkersFile.read(URL(fileURLWithPath: $0)) } ?? []
            var source = SightingsCalibrationSource(sightings: rows, markers: marks)
            let names = orientations.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            let procedure = CalibrationProcedure(orientations: names, expectedRSSI: expected, minimumSamples: minSamples)
            let interactive = !nonInteractive
            let result = try procedure.run(source: &source) { name, i in
                guard interactive else { return }
                FileHandle.standardError.write(Data("[\(i + 1)/\(names.count)] Place the reference transmitter 1 m from the board, facing \(name); press Enter to measure.\n".utf8))
                _ = readLine()
            }
            let url = URL(fileURLWithPath: config)
            let previous = try CalibrationConfigFile.read(url)
            let settings = CalibrationSettings(txPower: txPower ?? previous?.txPower,
                                               rssiCorrection: (result.rssiCorrection * 100).rounded() / 100,
                                               calibrationConfidence: calibrationConfidence ?? result.calibrationConfidence.rawValue)
            for o in result.orientations {
                print("\(o.orientation): \(o.samples) readings, median RSSI \(Format.fixed(o.medianRSSI, 1)) dBm")
            }
            print("median RSSI \(Format.fixed(result.medianRSSI, 1)) dBm, expected \(Format.fixed(result.expectedRSSI, 1)) dBm: "
                  + "rssiCorrection \(Format.fixed(settings.rssiCorrection, 2)) dB, calibrationConfidence \(settings.calibrationConfidence)"
                  + (settings.txPower.map { ", txPower \($0) dBm" } ?? ", txPower unset (pass --tx-power)"))
            if dryRun {
                print("dry run: \(config) not written")
            } else {
                try CalibrationConfigFile.write(settings, to: url)
                print("saved to \(config)")
            }
        }
    }
}
