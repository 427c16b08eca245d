import ArgumentParser
import BoardCommands
import NodeConfig
import ENProtocol
import Foundation
import PlatformSupport
import GaendClient
import GaendAPI
import TrialKit
import TrialFormats

/// `gaenctl calibrate`: the guided RSSI calibration against a reference transmitter at 1 m,
/// saved into gaend's YAML config and/or applied to the running node.
struct Calibrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compute the board's RSSI correction from a reference transmitter at 1 m; save it to gaend's config and/or apply it.",
        discussion: """
            Guides through the orientations (default front, back, left, right): place the \
            reference transmitter 1 m from the board facing that way, then press Enter. The \
            readings come from the running gaend (--live: Research1 ScanFinished signals, RSSI \
            as received, before the node's correction) or from a sightings export recorded \
            during the procedure (--sightings; orientations cut by --markers or into equal \
            time spans). Only the reference's sightings count (its RPIs from --reference-keys), \
            or every sighting with --any-device (a shielded setup). The correction is expected \
            RSSI - median RSSI, rounded to whole dB (what gaend takes); the expected RSSI is \
            --expected-rssi, or the reference's TX power (from its AEMs, or \
            --reference-tx-power) minus --reference-attenuation. --config writes the \
            calibration: block of gaend's YAML config in place (other lines and comments kept); \
            --apply sets it on the running node (SetCalibration). See docs/trial.md.
            """
    )

    @OptionGroup var bus: BusOptions

    @Flag(help: "Measure through the running gaend (its research interface).")
    var live = false

    @Option(help: ArgumentHelp("Sightings export recorded during the procedure (instead of --live).", valueName: "FILE"))
    var sightings: String?

    @Option(help: ArgumentHelp("With --sightings: markers CSV, one marker per orientation, in order.", valueName: "FILE"))
    var markers: String?

    @Option(help: ArgumentHelp("JSON key list (or key file) of the reference transmitter: only its sightings count, its TX power is read from its AEMs.", valueName: "FILE"))
    var referenceKeys: String?

    @Flag(help: "Count every GAEN sighting as the reference's (only in a shielded setup with no other device).")
    var anyDevice = false

    @Option(parsing: .unconditional, help: ArgumentHelp("RSSI a calibrated receiver reports for the reference at 1 m.", valueName: "DBM"))
    var expectedRssi: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("Attenuation a calibrated receiver measures for the reference at 1 m.", valueName: "DB"))
    var referenceAttenuation: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("TX power the reference advertises (default: from its AEMs with --reference-keys).", valueName: "DBM"))
    var referenceTxPower: Double?

    @Option(help: ArgumentHelp("Orientations, comma-separated.", valueName: "NAMES"))
    var orientations: String = CalibrationProcedure.defaultOrientations.joined(separator: ",")

    @Option(help: "Minimum readings per orientation.")
    var minSamples: Int = 10

    @Option(help: ArgumentHelp("With --live: seconds to measure each orientation (longer, up to 5x, until --min-samples readings).", valueName: "S"))
    var secondsPerOrientation: Double = 30

    @Option(parsing: .unconditional, help: ArgumentHelp("TX power this board advertises, saved with the correction (default: keep the config's / the node's).", valueName: "DBM"))
    var txPower: Int?

    @Option(help: ArgumentHelp("Calibration confidence to save instead of the computed one: lowest, low, medium, high or 0-3.", valueName: "LEVEL"))
    var calibrationConfidence: String?

    @Option(help: ArgumentHelp("gaend's YAML config: its calibration: block is updated (the file is created if missing).", valueName: "FILE"))
    var config: String?

    @Flag(help: "Also set the calibration on the running gaend at once (Research1.SetCalibration).")
    var apply = false

    @Flag(help: "Do not prompt: with --live, consecutive spans per orientation; with --sightings, the recording as it comes.")
    var nonInteractive = false

    @Flag(help: "Print the result; write and apply nothing.")
    var dryRun = false

    static func confidence(_ text: String) -> CalibrationConfidence? {
        CalibrationConfidence(configName: text.lowercased()) ?? Int(text).flatMap(CalibrationConfidence.init(rawValue:))
    }

    /// readLine on a thread of its own: blocking one of the few cooperative threads while the
    /// user places the reference would stall the live source's signal consumer.
    static func readLineOffThePool() async -> String? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: readLine()) }.start()
        }
    }

    var orientationNames: [String] {
        orientations.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func validate() throws {
        guard live != (sightings != nil) else { throw ValidationError("give --live (measure through gaend) or --sightings FILE (a recording), one of the two") }
        if markers != nil && live { throw ValidationError("--markers cuts a --sightings recording; --live prompts per orientation instead") }
        guard (referenceKeys != nil) != anyDevice else {
            throw ValidationError("give --reference-keys FILE (only the reference's sightings count) or --any-device (every sighting, shielded setups only), one of the two")
        }
        let haveExpected = expectedRssi != nil
        let haveReference = referenceAttenuation != nil && (referenceKeys != nil || referenceTxPower != nil)
        guard haveExpected != haveReference else {
            throw ValidationError("give --expected-rssi, or --reference-attenuation with --reference-keys or --reference-tx-power (one of the two ways)")
        }
        if let c = calibrationConfidence, Self.confidence(c) == nil {
            throw ValidationError("--calibration-confidence must be lowest, low, medium, high or 0-3, got '\(c)'")
        }
        if let t = txPower, !BluetoothMetadata.plausibleTxPower.contains(t) {
            throw ValidationError("--tx-power must be within \(BluetoothMetadata.plausibleTxPower) dBm, got \(t)")
        }
        guard minSamples >= 1 else { throw ValidationError("--min-samples must be at least 1") }
        guard secondsPerOrientation > 0, secondsPerOrientation.isFinite else { throw ValidationError("--seconds-per-orientation must be positive") }
        guard !orientationNames.isEmpty else { throw ValidationError("--orientations names none") }
        guard dryRun || config != nil || apply else {
            throw ValidationError("nothing would be saved: give --config FILE and/or --apply (or --dry-run to only see the result)")
        }
    }

    func run() async throws {
        var client: GaendClient?
        defer { client?.bus.close() }
        do {
            if live || (apply && !dryRun) { client = try await bus.connectToGaend() }
            try await calibrate(client)
        } catch {
            throw TrialCommandSupport.failure("calibrate", error)
        }
    }

    func calibrate(_ client: GaendClient?) async throws {
        let reference = try referenceKeys.map(TrialInputs.readKeys)
        // A config the edit would refuse is found now, not after the whole procedure.
        if let config, !dryRun { try CalibrationConfigEditor.check(fileAt: config, txPower: txPower) }
        if anyDevice {
            printError("gaenctl calibrate: warning: --any-device counts every GAEN sighting as the reference's; any other device in range makes the result wrong")
        }
        let names = orientationNames
        let procedure = CalibrationProcedure(orientations: names, minimumSamples: minSamples)
        let interactive = !nonInteractive
        let prompt: (String, Int) async throws -> Void = { name, i in
            guard interactive else {
                if live { printError("[\(i + 1)/\(names.count)] \(name): measuring") }
                return
            }
            printError("[\(i + 1)/\(names.count)] Place the reference transmitter 1 m from the board, facing \(name); press Enter to measure.")
            guard await Self.readLineOffThePool() != nil else {
                throw CommandFailure("standard input closed before the procedure ended (use --non-interactive)")
            }
        }

        var nodeCalibration: GaendCalibration?
        let measured: [CalibrationProcedure.Orientation]
        if live, let client {
            let now = try await client.calibration()
            nodeCalibration = now
            printError("gaend's calibration now: tx_power \(now.txPower) dBm, rssi_correction \(now.rssiCorrection) dB, "
                       + "calibration_confidence \(CalibrationConfidence.name(ofLevel: now.calibrationConfidence)); readings are taken as received, before it")
            var source = try await LiveCalibrationSource.start(client: client, reference: reference,
                                                               secondsPerOrientation: secondsPerOrientation, minimumSamples: minSamples)
            defer { source.stop() }
            measured = try await procedure.measure(source: &source, prompt: prompt)
        } else if let sightings {
            var rows = try TrialKit.SightingsExport.read(URL(fileURLWithPath: sightings)).filter { !$0.isEmptyScan }
            var readings: [CalibrationReading]
            if let reference {
                let result = try KeyScheduleMatcher().match(rows, against: [reference])
                guard !result.matches.isEmpty else {
                    throw CalibrationError.noReference(reason: "no sighting in \(sightings) matches the keys in \(referenceKeys ?? "")")
                }
                readings = result.matches.compactMap { m in
                    rows[m.sightingIndex].rssi.map { CalibrationReading(time: rows[m.sightingIndex].time, rssi: $0, txPower: m.txPower) }
                }
            } else {
                rows = rows.filter { $0.rssi != nil }
                readings = rows.map { CalibrationReading(time: $0.time, rssi: $0.rssi!) }
            }
            let marks = try markers.map { try MarkersFile.read(URL(fileURLWithPath: $0)) } ?? []
            var source = SightingsCalibrationSource(readings: readings, markers: marks)
            measured = try await procedure.measure(source: &source, prompt: prompt)
        } else {
            throw CommandFailure("no measurement source")
        }

        let expected: Double
        if let expectedRssi {
            expected = expectedRssi
        } else if let a = referenceAttenuation {
            let aemPowers = measured.flatMap(\.readings).compactMap(\.txPower).map(Double.init)
            guard let tx = referenceTxPower ?? (aemPowers.isEmpty ? nil : Statistics.median(aemPowers)) else {
                throw CalibrationError.noReference(reason: "the reference's TX power is unknown (give --reference-tx-power)")
            }
            expected = tx - a
        } else {
            throw CalibrationError.noReference(reason: "no expected RSSI")
        }
        let result = try procedure.result(measured, expectedRSSI: expected)
        // gaend applies whole decibels (rssi_correction is an integer in the config and on D-Bus).
        let correction = Int(result.rssiCorrection.rounded())
        let confidence = calibrationConfidence.flatMap(Self.confidence) ?? result.calibrationConfidence
        for o in result.orientations {
            print("\(o.orientation): \(o.samples) readings, median RSSI \(Format.fixed(o.medianRSSI, 1)) dBm")
        }
        print("median RSSI \(Format.fixed(result.medianRSSI, 1)) dBm, expected \(Format.fixed(result.expectedRSSI, 1)) dBm, "
              + "spread \(Format.fixed(result.spreadDb, 1)) dB: correction \(Format.fixed(result.rssiCorrection, 2)) dB")
        print("rssi_correction \(correction) dB (rounded to whole dB, as gaend applies it), calibration_confidence "
              + confidence.configName + (txPower.map { ", tx_power \($0) dBm" } ?? ""))
        if dryRun {
            print("dry run: nothing written or applied")
            return
        }
        let update = CalibrationUpdate(rssiCorrection: correction, calibrationConfidence: confidence, txPower: txPower)
        if let config {
            let saved = try CalibrationConfigEditor.apply(update, toFileAt: config)
            print("saved to \(config): calibration tx_power \(saved.calibration.txPower), rssi_correction \(saved.calibration.rssiCorrection), "
                  + "calibration_confidence \(saved.calibration.calibrationConfidence.configName) "
                  + "(gaend reads it at its next start; see docs/trial.md on SetCalibration)")
        }
        if apply, let client {
            let tx: Int16
            if let txPower { tx = Int16(txPower) } else if let n = nodeCalibration { tx = n.txPower } else { tx = try await client.calibration().txPower }
            do {
                try await client.setCalibration(txPower: tx, rssiCorrection: Int16(correction), confidence: Int32(confidence.rawValue))
            } catch {
                throw CommandFailure("SetCalibration failed\(config.map { " (\($0) was saved)" } ?? ""): \(error)")
            }
            let now = try await client.calibration()
            print("applied to gaend: tx_power \(now.txPower) dBm, rssi_correction \(now.rssiCorrection) dB, calibration_confidence \(CalibrationConfidence.name(ofLevel: now.calibrationConfidence))")
        }
    }
}
