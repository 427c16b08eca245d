import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// Google's calibration table as the DP-3T import uses it: the confidence column, the stated
/// fallbacks for models it lacks, the DP-3T convention, and the models it could not calibrate
/// named with their rows.
@Suite struct CalibrationTableTests {
    /// The August 2020 table's header as Google published it (values made up).
    static let table = """
        oem,device, model,rssi correction,tx,calibration confidence
        samsung,starlte,SM-G960F,4,-25,3
        samsung,a40,SM-A405FN,6,-26,1
        samsung,a50,SM-A505FN,7,-24,1
        google,sargo,Pixel 3a,3,-29,3

        """

    static func load(_ text: String = table) throws -> CalibrationTable {
        try CalibrationTable(CSVReader(bytes: Array(text.utf8), file: "/x/en-calibration-2020-08-12.csv"))
    }

    @Test func confidenceColumnAndMinimum() throws {
        let t = try Self.load()
        #expect(t.hasConfidenceColumn && t.entry("SM-A405FN")?.confidence == 1 && t.name == "en-calibration-2020-08-12.csv (2020-08-12)")
        var o = CalibrationTable.Options()
        #expect(t.resolve("SM-A405FN", options: o)?.fallback == nil)
        o.minimumConfidence = 2
        #expect(t.resolve("SM-A405FN", options: o) == nil)
        o.fallback = .manufacturer
        let r = try #require(t.resolve("SM-A405FN", options: o))
        // samsung's medians over its rows, whole dB: correction 6, TX -25.
        #expect(r.entry.rssiCorrection == 6 && r.entry.tx == -25 && r.fallback!.hasPrefix("manufacturer samsung (below confidence 2"))
    }

    @Test func fallbacksAreStated() throws {
        let t = try Self.load()
        var o = CalibrationTable.Options()
        #expect(t.resolve("SM-A415F", options: o) == nil)
        o.fallback = .manufacturer
        #expect(t.manufacturer(of: "SM-A415F")?.oem == "samsung")
        #expect(t.resolve("Nokia 7.2", options: o) == nil, "no manufacturer starts like it")
        o.manufacturers = ["nokia 7.2": "google"]
        #expect(t.resolve("Nokia 7.2", options: o)?.entry.tx == -29)
        o = CalibrationTable.Options()
        o.fallback = .default
        let d = try #require(t.resolve("Nokia 7.2", options: o))
        #expect(d.entry.tx == -26 && d.entry.rssiCorrection == 5 && d.fallback!.contains("the median of the table's 4 rows"))
        // A default row, when the table has one, is the default.
        let withDefault = try Self.load(Self.table + "default,default,default,1,-20,0\n")
        #expect(withDefault.resolve("Nokia 7.2", options: o)?.entry.tx == -20 && withDefault.entries.count == 4)
        // A confidence outside 0...3 is refused with its line.
        #expect(throws: CSVError.self) { try Self.load(Self.table + "x,y,Z1,1,-20,7\n") }
    }

    @Test func missingModelsNamedAndConventions() throws {
        let t = try Self.load()
        let rows = [DP3TImport.Row(receiverID: "r", receiverModel: "SM-G960F", transmitterID: "t", transmitterModel: "Pixel 3a", timestamp: "1591005600", rssi: -70, txPower: -21, distance: 1),
                    DP3TImport.Row(receiverID: "r", receiverModel: "SM-G960F", transmitterID: "u", transmitterModel: "Moto G", timestamp: "1591005601", rssi: -70, txPower: -21, distance: 1),
                    DP3TImport.Row(receiverID: "u", receiverModel: "Moto G", transmitterID: "r", transmitterModel: "Moto G", timestamp: "1591005602", rssi: -70, txPower: -21, distance: 1)]
        var use = CalibrationUse()
        let (csv, counts) = DP3TImport.convert(rows, calibration: t, use: &use)
        #expect(counts.written == 1 && use.missing["MOTO G"]?.asReceiver == 1 && use.missing["MOTO G"]?.asTransmitter == 1)
        #expect(use.details(t).first == "models not in the calibration table en-calibration-2020-08-12.csv (2020-08-12), rows left out: 'Moto G' (1 rows as receiver, 1 as transmitter)")
        #expect(csv.text.contains(",37,-70,-29,"), "\(csv.text)") // -29 - (-70 + 4)
        var other = CalibrationUse()
        let (dp3t, _) = DP3TImport.convert(rows, calibration: t, convention: .dp3t, use: &other)
        #expect(dp3t.text.contains(",42,-70,-25,"), "\(dp3t.text)") // -25 - (-70 + 3)
    }
}
