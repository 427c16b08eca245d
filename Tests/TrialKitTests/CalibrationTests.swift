import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

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

    @Test func correctionIsExpectedMinusPooledMedian() async throws {
        var source = SightingsCalibrationSource(sightings: Self.recording())
        var prompted: [String] = []
        let result = try await CalibrationProcedure().run(source: &source, expectedRSSI: -60) { name, _ in prompted.append(name) }
        #expect(prompted == ["front", "back", "left", "right"])
        #expect(result.orientations.map(\.medianRSSI) == [-66, -72, -68, -70])
        #expect(result.orientations.map(\.samples) == [11, 11, 11, 11])
        // Pooled 44 readings sorted: eleven -72, six -70, eleven -68, ...: the 22nd and 23rd are -68.
        #expect(result.medianRSSI == -68)
        #expect(result.rssiCorrection == 8)
        #expect(result.spreadDb == 6)
        #expect(result.calibrationConfidence == .high)
    }

    @Test func markersCutTheOrientationsAndASpreadLowersConfidence() async throws {
        let markers = [Marker(time: 1000, label: "front", distance: 1), Marker(time: 1060, label: "back", distance: 1),
                       Marker(time: 1120, label: "left", distance: 1), Marker(time: 1180, label: "right", distance: 1)]
        var source = SightingsCalibrationSource(sightings: Self.recording(), markers: markers)
        let result = try await CalibrationProcedure(maximumSpreadDb: 5).run(source: &source, expectedRSSI: -70)
        #expect(result.orientations.map(\.medianRSSI) == [-66, -72, -68, -70])
        #expect(result.rssiCorrection == -2)
        #expect(result.calibrationConfidence == .medium)
    }

    @Test func tooFewReadingsIsAnError() async throws {
        var source = SightingsCalibrationSource(sightings: Array(Self.recording().prefix(5)))
        await #expect(throws: CalibrationError.tooFewSamples(orientation: "front", needed: 10, actual: 1)) {
            try await CalibrationProcedure().run(source: &source, expectedRSSI: -60)
        }
    }

    @Test func oneOrientationGivesMediumConfidenceAndTheReadingsKeepTheirTxPower() async throws {
        let readings = (0..<12).map { CalibrationReading(time: Double($0), rssi: -60 - $0 % 3, txPower: -20) }
        var source = SightingsCalibrationSource(readings: readings)
        let procedure = CalibrationProcedure(orientations: ["front"])
        let measured = try await procedure.measure(source: &source)
        #expect(measured.count == 1 && measured[0].readings.allSatisfy { $0.txPower == -20 })
        let result = try procedure.result(measured, expectedRSSI: -65.5)
        #expect(result.medianRSSI == -61 && result.rssiCorrection == -4.5 && result.calibrationConfidence == .medium)
    }
}
