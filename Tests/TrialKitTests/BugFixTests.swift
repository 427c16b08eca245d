import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// Bugs of the trial toolkit, each with the input that showed it.
@Suite struct TrialBugFixTests {
    static func observations(_ csv: String, truth: [Marker] = []) throws -> [Observation] {
        try TrialPipeline.observations(attenuationCSV: CSVReader(bytes: Array(csv.utf8), file: "a.csv"),
                                       groundTruth: GroundTruth(markers: truth)).0
    }

    @Test func numbersKeepEveryDecimalTheyHave() throws {
        // 1.500000000000001 read as 1.5 (9 decimals kept), moving the row onto a 1.5 m boundary.
        let texts = ["1.500000000000001", "0.1", "0.3", "123456.789012345", "0.000000000123", "1.0000000001",
                     "9007199254740993", "1e-3", "62.25", "+4.5", "2.675"]
        var line = "time,attenuation,distance\n"
        for t in texts { line += "1,50,\(t)\n" }
        let obs = try Self.observations(line)
        for (o, t) in zip(obs, texts) { #expect(o.distance == Double(t), "\(t) read as \(o.distance)") }
        #expect(obs[0].distance > 1.5)
    }

    @Test func attenuationCSVRoundTripsExactly() throws {
        let obs = [Observation(time: 1_700_000_000.125, receiver: "rx", transmitter: "tx", distance: 1.4999999, attenuation: 61),
                   Observation(time: 1_700_000_001, receiver: "rx", transmitter: "t,2", distance: 0.123456789, attenuation: 63.25),
                   Observation(time: 1_700_000_002, receiver: "rx", transmitter: "tx", distance: 2.0000001, attenuation: 70.125)]
        let text = TrialReportWriter.attenuationCSV(obs, site: "s").text
        #expect(try Self.observations(text) == obs)
        // The whole analysis agrees too (close contact at 1.5 and 2 m are on the boundary).
        var options = AnalysisOptions(); options.closeContactDistance = 1.5
        let a = TrialReport(site: nil, counts: .init(), observations: obs, options: options)
        let b = TrialReport(site: nil, counts: .init(), observations: try Self.observations(text), options: options)
        #expect(try TrialReportWriter.jsonData(a) == TrialReportWriter.jsonData(b))
    }

    @Test func reportMarkdownPrintsThresholdsAsGiven() throws {
        var options = AnalysisOptions(); options.thresholds = [32.5, 55]
        let obs = (0..<20).map { Observation(time: Double($0), receiver: "r", transmitter: "t", distance: Double($0 % 4 + 1), attenuation: 30 + Double($0)) }
        let md = TrialReportWriter.markdown(TrialReport(site: nil, counts: .init(), observations: obs, options: options))
        #expect(md.contains("| 32.5 |"))
        #expect(!md.contains("| 33 |"))
    }

    /// report.md listed attenuation.csv under --split daily, where the rows are in the daily layout.
    @Test func reportMarkdownNamesTheAttenuationFilesWritten() throws {
        let obs = (0..<20).map { Observation(time: Double($0), receiver: "r", transmitter: "t", distance: Double($0 % 4 + 1), attenuation: 30 + Double($0)) }
        let report = TrialReport(site: nil, counts: .init(), observations: obs, options: AnalysisOptions())
        let daily = TrialReportWriter.markdown(report, dailyAttenuation: true)
        #expect(daily.contains("Files: attenuation/board=<receiver>/day=<YYYY-MM-DD>/attenuation.csv"))
        #expect(!daily.contains("Files: attenuation.csv"))
        #expect(TrialReportWriter.markdown(report).contains("Files: attenuation.csv (every analysed sighting)"))
    }

    @Test func impossibleAttenuationsAreRefusedWithTheLine() throws {
        #expect(throws: CSVError.self) { try Self.observations("time,attenuation,distance\n1,50,1\n2,-127,1\n") }
        do { _ = try Self.observations("time,attenuation,distance\n1,50,1\n2,-127,1\n") } catch {
            #expect("\(error)".contains("a.csv:3: column 'attenuation'") && "\(error)".contains("-127"))
        }
        #expect(throws: CSVError.self) { try Self.observations("time,attenuation,distance\n1,50,-1\n") }
        #expect(try Self.observations("time,attenuation,distance\n1,-3,1\n2,140,1\n").count == 2)
    }

    @Test func keyListsTakeReportTypeNamesAndSayWhichField() throws {
        let good = #"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":2650000,"reportType":"CONFIRMED_TEST"}]"#
        let keys = try KeyListFile.decode(Data(good.utf8), file: "k.json")
        #expect(keys.count == 1 && keys[0].reportType == .confirmedTest && keys[0].rollingPeriod == 144)
        func message(_ json: String) -> String {
            do { _ = try KeyListFile.decode(Data(json.utf8), file: "k.json"); return "" } catch { return "\(error)" }
        }
        #expect(message(#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1,"reportType":"POSITIVE"}]"#)
                .hasPrefix("k.json[0].reportType: unknown name 'POSITIVE'"))
        #expect(message(#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1,"reportType":9}]"#)
                .hasPrefix("k.json[0].reportType: expected an integer in 0...5"))
        #expect(message(#"[{"keyData":"00","rollingStartIntervalNumber":1}]"#).hasPrefix("k.json[0].keyData"))
        #expect(message("not json").contains("not valid JSON"))
    }

    @Test func keyInputsAreToldApartByContent() throws {
        let key = DiagnosisKey(key: try TemporaryExposureKey(hex: "000102030405060708090a0b0c0d0e0f"),
                               rollingStartIntervalNumber: ENIntervalNumber(2_650_000), rollingPeriod: 144, reportType: .confirmedTest)
        let header = KeyExportHeader(startTimestamp: 2_650_000 * 600, endTimestamp: 2_650_144 * 600, region: "x")
        let signer = try P256PrivateKey.generate()
        let zip = try KeyExportWriter.signedArchive(header: header, keys: [key], signingKey: signer, keyId: "x", keyVersion: "1")
        let bin = try KeyExportFile(parsing: zip).exportBin
        let list = try KeyListFile.encode([key])
        #expect(KeyInputKind.detect(zip) == .exportZip && KeyInputKind.detect(bin) == .exportBin && KeyInputKind.detect(list) == .jsonKeyList)
        for data in [zip, bin, list] {
            let keys = try TrialInputs.keys(data, file: "any-name")
            #expect(keys.map(\.key) == [key.key])
        }
    }

    @Test func timesTakeUnixSecondsAndISO8601() throws {
        #expect(try TimeInput.parse("1700000000") == 1_700_000_000)
        #expect(try TimeInput.parse("1700000000.25") == 1_700_000_000.25)
        #expect(try TimeInput.parse("2023-11-14T22:13:20Z") == 1_700_000_000)
        #expect(try TimeInput.parse("2023-11-14T23:13:20+01:00") == 1_700_000_000)
        #expect(try TimeInput.parse("2023-11-14T22:13:20.250Z") == 1_700_000_000.25)
        #expect(try TimeInput.parse("2023-11-14") == 1_699_920_000)
        #expect(throws: TimeInput.Invalid.self) { try TimeInput.parse("yesterday") }
        #expect(throws: TimeInput.Invalid.self) { try TimeInput.parse("1e9") }
    }
}
