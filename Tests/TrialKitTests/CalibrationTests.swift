import ENProtocol
import Foundation
import Testing
@testable import TrialKit

@Suite struct CalibrationTests {
    static let rpi = try! RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
    static let aem = try! AssociatedEncryptedMetadata(hex: "01020304")

    /// Four orientations recorded one after the other, 11 readings each, at known RSSI values.
    static func recording() -> [SightingRow] {
        let perOrientation: [[Int]] = [
            Array(repeating: -66, count: 6) + Array(repeating: -64, count: 5), // front: median -66
            Array(repeating: -72, count: 11),                                   // back: -72
            Array(repeating: -68, count: 11),                                   // left: -68
            Array(repeating: -70, count: 6) + Array(repeating: -60, count: 5), // right: median -70
        ]
        var out: [SightingRow] = []
        for (o, values) in perOrientation.enumerated() {
            for (k, v) in values.enumerated() {
                out.append(SightingRow(time: 1000 + Double(o) * 60 + Double(k), rpi: rpi, aem: aem, rssi: v))
            }
            out.append(SightingRow(time: 1000 + Double(o) * 60 + 30, rpi: nil, aem: nil, rssi: nil)) // empty scan: ignored
        }
        return out
    }

    @Test func correctionIsExpectedMinusPooledMedian() throws {
        var source = SightingsCalibrationSource(sightings: Self.recording())
        var prompted: [String] = []
        let result = try CalibrationProcedure(expectedRSSI: -60).run(source: &source) { name, _ in prompted.append(name) }
        #expect(prompted == ["front", "back", "left", "right"])
        #expect(result.orientations.map(\.medianRSSI) == [-66, -72, -68, -70])
        #expect(result.orientations.map(\.samples) == [11, 11, 11, 11])
        // Pooled 44 readings sorted: eleven -72, six -70, eleven -68, ...: the 22nd and 23rd are -68.
        #expect(result.medianRSSI == -68)
        #expect(result.rssiCorrection == 8)
        #expect(result.spreadDb == 6)
        #expect(result.calibrationConfidence == .high)
    }

    @Test func markersCutTheOrientationsAndASpreadLowersConfidence() throws {
        let markers = [Marker(time: 1000, label: "front", distance: 1), Marker(time: 1060, label: "back", distance: 1),
                       Marker(time: 1120, label: "left", distance: 1), Marker(time: 1180, label: "right", distance: 1)]
        var source = SightingsCalibrationSource(sightings: Self.recording(), markers: markers)
        let result = try CalibrationProcedure(expectedRSSI: -70, maximumSpreadDb: 5).run(source: &source)
        #expect(result.orientations.map(\.medianRSSI) == [-66, -72, -68, -70])
        #expect(result.rssiCorrection == -2)
        #expect(result.calibrationConfidence == .medium)
    }

    @Test func tooFewReadingsIsAnError() throws {
        var source = SightingsCalibrationSource(sightings: Array(Self.recording().prefix(5)))
        #expect(throws: CalibrationError.tooFewSamples(orientation: "front", needed: 10, actual: 1)) {
            try CalibrationProcedure(expectedRSSI: -60).run(source: &source)
        }
    }

    @Test func configKeepsOtherSettings() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(#"{"site":"bus-7","calibration":{"txPower":-18,"rssiCorrection":0,"calibrationConfidence":0}}"#.utf8).write(to: url)
        try CalibrationConfigFile.write(CalibrationSettings(txPower: -18, rssiCorrection: 8, calibrationConfidence: 3), to: url)
        #expect(try CalibrationConfigFile.read(url) == CalibrationSettings(txPower: -18, rssiCorrection: 8, calibrationConfidence: 3))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        #expect(object?["site"] as? String == "bus-7")
        try Data("[1]".utf8).write(to: url)
        #expect(throws: CalibrationError.configNotAnObject(file: url.path)) { try CalibrationConfigFile.read(url) }
    }
}
