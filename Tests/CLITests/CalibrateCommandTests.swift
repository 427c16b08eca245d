import ENProtocol
import Foundation
import Testing

/// `gaenctl calibrate --sightings` end to end: a recording of a reference transmitter (and a
/// stronger stranger) written here, the result saved into a commented YAML config.
@Suite struct CalibrateCommandTests {
    let day = UTCDay(isoDate: "2026-11-10")!

    /// Four orientations of 12 readings each (medians -66, -72, -68, -70; pooled -69) of the
    /// reference (TX power -20 in its AEM), interleaved with a stranger at -40 dBm.
    func recording(_ dir: URL) throws -> (sightings: String, keys: String) {
        let schedule = try GAENKeySchedule()
        let reference = try TemporaryExposureKey(hex: "75c734c6dd1a782de7a965da5eb93125")
        let stranger = try TemporaryExposureKey(hex: "00112233445566778899aabbccddeeff")
        let t0 = Double(day.unixSeconds) + 36_000
        func row(_ key: TemporaryExposureKey, _ t: Double, _ rssi: Int) throws -> String {
            let rpi = try schedule.rollingProximityIdentifier(for: key, interval: ENIntervalNumber(unixSeconds: t))
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_0(txPower: -20), rpi: rpi,
                                                                       aemk: schedule.associatedEncryptedMetadataKey(for: key))
            return "\(t),\(rpi.hexString),\(aem.hexString),\(rssi),\(t),\(t + 4),7"
        }
        var lines = ["time,rpi,aem,rssi,scan_start,scan_end,rssi_correction"]
        for (o, median) in [-66, -72, -68, -70].enumerated() {
            for k in 0..<12 {
                let t = t0 + Double(o) * 60 + Double(k)
                lines.append(try row(reference, t, median + (k % 3) - 1))
                lines.append(try row(stranger, t + 0.5, -40))
            }
        }
        let sightings = dir.appendingPathComponent("reference.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: sightings, atomically: true, encoding: .utf8)
        let keys = dir.appendingPathComponent("reference.json")
        try #"[{"keyData":"75c734c6dd1a782de7a965da5eb93125","rollingStartIntervalNumber":\#(day.firstInterval.rawValue),"rollingPeriod":144}]"#
            .write(to: keys, atomically: true, encoding: .utf8)
        return (sightings.path, keys.path)
    }

    func tempDir() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("calibrate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aRecordingCalibratesIntoTheYAMLConfig() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (sightings, keys) = try recording(dir)
        let config = dir.appendingPathComponent("gaend.conf")
        try "# the bus board\nbus: session\ncalibration:\n  rssi_correction: 0  # before\n".write(to: config, atomically: true, encoding: .utf8)
        // Expected RSSI -20 - 45.5 = -65.5; pooled median -69: correction 3.5, saved as 4.
        let r = try CLI.run("gaenctl", ["calibrate", "--sightings", sightings, "--reference-keys", keys, "--reference-attenuation", "45.5",
                                        "--non-interactive", "--config", config.path, "--tx-power", "-22"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("front: 12 readings, median RSSI -66.0 dBm"))
        #expect(r.stdout.contains("median RSSI -69.0 dBm, expected -65.5 dBm, spread 6.0 dB: correction 3.50 dB"), "\(r.stdout)")
        #expect(r.stdout.contains("rssi_correction 4 dB (rounded to whole dB, as gaend applies it), calibration_confidence high, tx_power -22 dBm"))
        #expect(try String(contentsOf: config, encoding: .utf8)
                == "# the bus board\nbus: session\ncalibration:\n  rssi_correction: 4  # before\n  calibration_confidence: high\n  tx_power: -22\n")
    }

    @Test func refusalsAreClearAndLeaveTheConfig() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (sightings, keys) = try recording(dir)
        let config = dir.appendingPathComponent("gaend.conf")
        let flow = "calibration: {rssi_correction: 0}\n"
        try flow.write(to: config, atomically: true, encoding: .utf8)
        let base = ["calibrate", "--sightings", sightings, "--reference-keys", keys, "--reference-attenuation", "45", "--non-interactive"]
        let refused = try CLI.run("gaenctl", base + ["--config", config.path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("'calibration:' is not a block mapping"), "\(refused.stderr)")
        #expect(try String(contentsOf: config, encoding: .utf8) == flow)

        let nothing = try CLI.run("gaenctl", base)
        #expect(nothing.status != 0 && nothing.stderr.contains("nothing would be saved"), "\(nothing.stderr)")
        let unfiltered = try CLI.run("gaenctl", ["calibrate", "--sightings", sightings, "--expected-rssi", "-60", "--dry-run"])
        #expect(unfiltered.status != 0 && unfiltered.stderr.contains("--any-device"), "\(unfiltered.stderr)")
    }
}
