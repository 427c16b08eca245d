import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

@Suite struct SightingsFileTests {
    @Test func readsColumnsByNameWithEmptyScansAndQuotes() throws {
        let csv = """
        site,time,rpi,aem,rssi,scan_start,scan_end,extra,node
        "bus, line 7",1700000000.25,00112233445566778899aabbccddeeff,0a0b0c0d,-71,1700000000,1700000004,x,board-1
        "bus, line 7",1700000250,,,,1700000250,1700000254,,board-1
        """
        let rows = try SightingsExport.parse(Data(csv.utf8), file: "t.csv")
        #expect(rows.count == 2)
        #expect(rows[0].time == 1_700_000_000.25)
        #expect(rows[0].rpi?.hexString == "00112233445566778899aabbccddeeff")
        #expect(rows[0].aem?.hexString == "0a0b0c0d")
        #expect(rows[0].rssi == -71 && rows[0].rssiCorrection == 0)
        #expect(rows[0].site == "bus, line 7" && rows[0].node == "board-1")
        #expect(rows[1].isEmptyScan && rows[1].scanStart == 1_700_000_250)
    }

    @Test func writerRoundTrips() throws {
        let rpi = try RollingProximityIdentifier(hex: "ffeeddccbbaa99887766554433221100")
        let rows = [
            SightingRow(time: 1_700_000_001.5, rpi: rpi, aem: try AssociatedEncryptedMetadata(hex: "01020304"), rssi: -80,
                     scanStart: 1_700_000_000, scanEnd: 1_700_000_004, rssiCorrection: -4, node: "n", site: "s"),
            SightingRow(time: 1_700_000_300, rpi: nil, aem: nil, rssi: nil, scanStart: 1_700_000_300, scanEnd: 1_700_000_304, node: "n"),
        ]
        var w = SightingsExport.Writer()
        rows.forEach { w.append($0) }
        let back = try SightingsExport.parse(Data(w.csv.text.utf8), file: "w.csv")
        #expect(back == rows)
        // The same file is what `gaenctl match` and `windows` read: ENProtocol's log of it agrees.
        let log = try SightingsFile.parse(Data(w.csv.text.utf8), requiring: .windows)
        #expect(log.sightings.count == 1 && log.scans.count == 2 && log.sightings[0].rssiCorrection == -4)
    }

    @Test func badRowsSayWhatAndWhere() throws {
        // One reader for the format: the toolkit reports ENProtocol's errors with the file name.
        func reason(_ text: String) -> String? {
            do { _ = try SightingsExport.parse(Data(text.utf8), file: "x.csv"); return nil } catch let e as SightingsFileError {
                #expect(e.file == "x.csv" && e.description.hasPrefix("x.csv: "))
                return e.reason
            } catch { return "unexpected \(error)" }
        }
        #expect(reason("time,rpi,aem\n1,,\n") == SightingsFormatError.missingColumn("rssi").description)
        #expect(reason("time,rpi,aem,rssi\n1,0011,0a0b0c0d,-70\n")
                == SightingsFormatError.badField(line: 2, column: "rpi", value: "0011", expected: "32 hex digits").description)
        // Half a report is neither a sighting nor an empty scan.
        #expect(reason("time,rpi,aem,rssi\n1,00112233445566778899aabbccddeeff,,-70\n")
                == SightingsFormatError.badField(line: 2, column: "aem", value: "", expected: "8 hex digits").description)
        #expect(reason("time,rpi,aem,rssi\n1,,0a0b0c0d,\n")
                == SightingsFormatError.badField(line: 2, column: "aem", value: "0a0b0c0d", expected: "empty, as rpi is empty (an empty-scan row)").description)
        #expect(reason("time,rpi,aem,rssi\nnoon,,,\n")
                == SightingsFormatError.badField(line: 2, column: "time", value: "noon", expected: "Unix seconds").description)
        #expect(reason("time,rpi,aem,rssi,rssi_correction\n1,,,,2.5\n")
                == SightingsFormatError.badField(line: 2, column: "rssi_correction", value: "2.5", expected: "an integer dB in -100...100").description)
        #expect(throws: CSVError.unterminatedQuote(file: "q.csv", line: 2)) {
            try CSVReader(bytes: Array("a,b\n\"x,1\n".utf8), file: "q.csv").forEachRow { _ in }
        }
    }

    @Test func jsonLinesUseCamelCase() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("s-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("""
        {"time":10.5,"rpi":"00112233445566778899aabbccddeeff","aem":"0a0b0c0d","rssi":-60,"scanStart":10,"scanEnd":14,"rssiCorrection":2,"node":"n","site":null}
        {"time":300,"rpi":null,"aem":null,"rssi":null,"scanStart":300,"scanEnd":304}
        """.utf8).write(to: url)
        let rows = try SightingsExport.read(url)
        #expect(rows.count == 2 && rows[0].rssiCorrection == 2 && rows[1].isEmptyScan)
    }
}

@Suite struct MarkersTests {
    @Test func pairMarkersOverrideGlobalOnes() throws {
        let t = GroundTruth(markers: [
            Marker(time: 100, label: "start", distance: 1),
            Marker(time: 200, label: "move", distance: 2),
            Marker(time: 150, label: "pair:a/b", distance: 5),
            Marker(time: 250, label: "pair:a/b", distance: nil, note: "break"),
        ])
        let ab = NodePair(receiver: "a", transmitter: "b"), ac = NodePair(receiver: "a", transmitter: "c")
        #expect(t.distance(at: 99, pair: ac) == nil)
        #expect(t.distance(at: 100, pair: ac) == 1)
        #expect(t.distance(at: 1000, pair: ac) == 2)
        #expect(t.distance(at: 149, pair: ab) == nil)
        #expect(t.distance(at: 200, pair: ab) == 5)
        #expect(t.distance(at: 260, pair: ab) == nil)
        #expect(Marker(time: 0, label: "pair:x", distance: 1).pair == nil)
    }

    @Test func markersFileRoundTripAndNegativeDistanceRefused() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("m-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: url) }
        let ms = [Marker(time: 1.5, label: "1 m, facing", distance: 1, note: "a \"quoted\" note"), Marker(time: 9, label: "off", distance: nil)]
        try MarkersFile.csv(ms).write(to: url)
        #expect(try MarkersFile.read(url) == ms)
        try Data("time,label,distance,note\n1,x,-2,\n".utf8).write(to: url)
        #expect(throws: CSVError.badValue(file: url.path, line: 2, column: "distance", expected: "metres >= 0 or empty", actual: "-2")) {
            try MarkersFile.read(url)
        }
    }
}

@Suite struct KeyListAndMatcherTests {
    @Test func readsTheKeyServerFixtureShape() throws {
        let json = """
        {"temporaryExposureKeys":[{"key":"Fy/EgOWYSQw0F3YEM5sVQw==","rollingStartNumber":2649980,"rollingPeriod":1,"transmissionRisk":8},
        {"key":"K2MFOsSDI43hdhaehh89zQ==","rollingStartNumber":2649866,"rollingPeriod":114,"transmissionRisk":1}]}
        """
        let keys = try KeyListFile.decode(Data(json.utf8), file: "k.json")
        #expect(keys.count == 2)
        #expect(keys[0].rollingStartIntervalNumber.rawValue == 2_649_980 && keys[0].rollingPeriod == 1 && keys[0].transmissionRiskLevel == 8)
        #expect(try KeyListFile.decode(KeyListFile.encode(keys), file: "again") == keys)
        #expect(throws: KeyListFile.KeyListError.badKey(file: "b.json", index: 0, reason: ".rollingPeriod: expected an integer in 1...144, got 145")) {
            try KeyListFile.decode(Data(#"{"temporaryExposureKeys":[{"key":"Fy/EgOWYSQw0F3YEM5sVQw==","rollingStartNumber":1,"rollingPeriod":145}]}"#.utf8), file: "b.json")
        }
        #expect(throws: KeyListFile.KeyListError.self) { try KeyListFile.decode(Data("{}".utf8), file: "e.json") }
    }

    /// What the simulator writes is the array `gaenctl keys create` takes.
    @Test func writesTheKeysCreateArray() throws {
        let key = DiagnosisKey(key: try TemporaryExposureKey(hex: "172fc480e598490c3417760433 9b1543".replacingOccurrences(of: " ", with: "")),
                               rollingStartIntervalNumber: ENIntervalNumber(2_649_980), reportType: .confirmedTest)
        let parsed = try JSONSerialization.jsonObject(with: KeyListFile.encode([key])) as? [[String: Any]]
        let o = try #require(parsed?.first)
        #expect(o["keyData"] as? String == "172fc480e598490c34177604339b1543")
        #expect(o["rollingStartIntervalNumber"] as? Int == 2_649_980)
        #expect(o["rollingPeriod"] as? Int == 144)
        #expect(o["reportType"] as? Int == 1)
        #expect(Set(o.keys).isSubset(of: ["keyData", "rollingStartIntervalNumber", "rollingPeriod", "transmissionRiskLevel",
                                          "reportType", "daysSinceOnsetOfSymptoms"]))
    }

    /// A sighting made with the real key schedule matches with the attenuation of its AEM's TX
    /// power; implausible metadata and revoked keys yield nothing.
    @Test func matchesAndComputesAttenuation() throws {
        let schedule = try GAENKeySchedule()
        let tek = try TemporaryExposureKey(hex: "75c734c6dd1a782de7a965da5eb93125")
        let day = UTCDay(20_000)
        let interval = day.firstInterval.advanced(by: 30)
        let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: interval)
        let aemk = schedule.associatedEncryptedMetadataKey(for: tek)
        let good = try GAENKeySchedule.associatedEncryptedMetadata(.v1_1(txPower: -25, calibrationConfidence: .high), rpi: rpi, aemk: aemk)
        let bad = try GAENKeySchedule.associatedEncryptedMetadata(.v1_0(txPower: 90), rpi: rpi, aemk: aemk)
        let t = Double(interval.unixSeconds) + 30
        let sightings = [
            SightingRow(time: t, rpi: rpi, aem: good, rssi: -90, rssiCorrection: 5, node: "rx"),
            SightingRow(time: t, rpi: rpi, aem: bad, rssi: -90, node: "rx"),
            SightingRow(time: t, rpi: try RollingProximityIdentifier(hex: String(repeating: "ab", count: 16)), aem: good, rssi: -50, node: "rx"),
            SightingRow(time: t + 86_400, rpi: rpi, aem: good, rssi: -70, node: "rx"), // a day later: outside validity + 2 h
            SightingRow(time: t, rpi: nil, aem: nil, rssi: nil, node: "rx"),
        ]
        let key = DiagnosisKey(key: tek, rollingStartIntervalNumber: day.firstInterval)
        let r = try KeyScheduleMatcher().match(sightings, against: [TransmitterKeys(name: "other", keys: []), TransmitterKeys(name: "phone", keys: [key])])
        #expect(r.matches == [MatchedSighting(sightingIndex: 0, transmitter: 1, txPower: -25, calibrationConfidence: .high, attenuation: 60)])
        #expect(r.implausibleMetadata == 1 && r.outsideValidity == 1)
        #expect(try ProjectMatcher(workers: 1).match(sightings, against: [TransmitterKeys(name: "other", keys: []), TransmitterKeys(name: "phone", keys: [key])]).matches
                == r.matches)
        var revoked = key
        revoked.reportType = .revoked
        #expect(try KeyScheduleMatcher().match(sightings, against: [TransmitterKeys(name: "p", keys: [revoked])]).matches.isEmpty)
        #expect(try ProjectMatcher().match(sightings, against: [TransmitterKeys(name: "p", keys: [revoked])]).matches.isEmpty)
    }
}

/// Key export files read for the report: the repository's signed sample against the keys it was made from.
@Suite struct KeyExportInputTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ENProtocolTests/Fixtures/key-export")

    @Test func zipAndItsInputListGiveTheSameKeys() throws {
        let zip = try TrialInputs.readKeys(Self.fixtures.appendingPathComponent("two-keys-signed.zip").path)
        let list = try TrialInputs.readKeys(Self.fixtures.appendingPathComponent("two-keys-signed.input.json").path)
        #expect(zip.name == "two-keys-signed")
        func summary(_ k: [DiagnosisKey]) -> [String] {
            k.map { "\($0.key.hexString) \($0.rollingStartIntervalNumber) \($0.rollingPeriod)" }.sorted()
        }
        #expect(zip.keys.count == 2)
        #expect(summary(zip.keys) == summary(list.keys))
    }

    @Test func aBrokenExportIsRefused() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID().uuidString).zip")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("PK not really".utf8).write(to: url)
        #expect(throws: KeyListFile.KeyListError.self) { try TrialInputs.readKeys(url.path) }
    }
}

/// ENProtocol's matcher (the report's default) and the direct key-schedule matcher agree.
@Suite struct MatcherAgreementTests {
    @Test func bothMatchersFindTheSameSightings() throws {
        var scenario = SimulatedTrialTests.lineScenario(seed: 21, hours: 0.75)
        scenario.nodes[3].rssiCorrection = 3 // a node with a correction: both matchers apply it
        let result = try Simulator(scenario: scenario).run()
        var rows: [SightingRow] = []
        for (_, w) in result.sightingsFiles {
            rows += try SightingsExport.parse(Data(w.csv.text.utf8), file: "sim")
        }
        let transmitters = result.keyLists.map { TransmitterKeys(name: $0.node, keys: $0.keys) }
        let project = try ProjectMatcher(workers: 2).match(rows, against: transmitters)
        let direct = try KeyScheduleMatcher().match(rows, against: transmitters)
        #expect(project.matches.count == result.sightings)
        #expect(project.matches == direct.matches)
        let corrected = rows.filter { $0.node == scenario.nodes[3].name && !$0.isEmptyScan }
        #expect(!corrected.isEmpty && corrected.allSatisfy { $0.rssiCorrection == 3 })
    }

    @Test func aFractionalCorrectionIsRejected() {
        var scenario = SimulatedTrialTests.lineScenario(seed: 21, hours: 0.1)
        scenario.nodes[3].rssiCorrection = 2.5
        #expect(throws: ScenarioError.badValue(field: "nodes[3].rssiCorrection", expected: "a whole number of dB in -100...100", actual: "2.5")) {
            try Simulator(scenario: scenario)
        }
    }
}
