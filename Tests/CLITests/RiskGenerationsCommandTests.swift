import Foundation
import Testing

/// The risk engines through `gaenctl risk` as a user runs it: every
/// case of the three published CWA test files with the matching --app-version, and the NHS
/// scorer's published example and scenarios with their decimal inputs.
@Suite struct RiskGenerationsCommandTests {
    static let fixtures = RiskCommandTests.fixtures
    static let today = "2021-03-01"
    static let todayMillis: Int64 = 1_614_556_800_000

    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("risk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    static func write(_ object: Any, to url: URL) throws {
        try JSONSerialization.data(withJSONObject: object).write(to: url)
    }

    @Test(arguments: [("exposure-windows-risk-calculation-1.9.json", "1.9"),
                      ("exposure-windows-risk-calculation-1.15.json", "1.15"),
                      ("exposure-windows-risk-calculation.json", "2.19")])
    func everyCWACaseOfEveryGeneration(file: String, version: String) throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = "\(Self.fixtures)/cwa/\(file)"
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let cases = try #require(doc["testCases"] as? [[String: Any]])
        func date(_ age: Any?) -> String? {
            guard let a = age as? Int else { return nil }
            let d = Date(timeIntervalSince1970: Double(Self.todayMillis / 1000 - Int64(a) * 86_400))
            let f = DateFormatter(); f.dateFormat = "yyyy-MM-dd"; f.timeZone = TimeZone(identifier: "UTC")
            return f.string(from: d)
        }
        for (n, c) in cases.enumerated() {
            let windows: [[String: Any]] = (c["exposureWindows"] as! [[String: Any]]).map { w in
                ["dateMillisSinceEpoch": Self.todayMillis - Int64(w["ageInDays"] as! Int) * 86_400_000,
                 "reportType": w["reportType"]!, "infectiousness": w["infectiousness"]!, "calibrationConfidence": w["calibrationConfidence"]!,
                 "scanInstances": (w["scanInstances"] as! [[String: Any]]).map {
                     ["minAttenuationDb": $0["minAttenuation"]!, "typicalAttenuationDb": $0["typicalAttenuation"]!,
                      "secondsSinceLastScan": $0["secondsSinceLastScan"]!]
                 }]
            }
            let wfile = dir.appendingPathComponent("w\(n).json")
            try Self.write(windows, to: wfile)
            let r = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", path, "--windows", wfile.path, "--today", Self.today,
                                            "--app-version", version])
            let what = "\(file) case \(n): \(c["description"]!)"
            #expect(r.status == 0, "\(what): \(r.stderr)")
            let o = try #require(try CLI.json(r.stdout) as? [String: Any], "\(what)")
            #expect(o["totalRiskLevel"] as? Int == c["expTotalRiskLevel"] as? Int, "\(what)")
            #expect(o["mostRecentDateWithLowRisk"] as? String == date(c["expAgeOfMostRecentDateWithLowRisk"]), "\(what)")
            #expect(o["mostRecentDateWithHighRisk"] as? String == date(c["expAgeOfMostRecentDateWithHighRisk"]), "\(what)")
            #expect(o["numberOfDaysWithLowRisk"] as? Int == c["expNumberOfDaysWithLowRisk"] as? Int, "\(what)")
            #expect(o["numberOfDaysWithHighRisk"] as? Int == c["expNumberOfDaysWithHighRisk"] as? Int, "\(what)")
            #expect(o["minimumDistinctEncountersWithLowRisk"] as? Int == c["expTotalMinimumDistinctEncountersWithLowRisk"] as? Int, "\(what)")
            #expect(o["minimumDistinctEncountersWithHighRisk"] as? Int == c["expTotalMinimumDistinctEncountersWithHighRisk"] as? Int, "\(what)")
        }
    }

    @Test func cwaPerWindowSaysWhyAWindowIsDropped() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        // 9 minutes under 73 dB: the 1.9 file's minutes-at-attenuation filter drops it; 15 minutes count.
        try Self.write([["dateMillisSinceEpoch": Self.todayMillis - 86_400_000, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 0,
                         "scanInstances": [["minAttenuationDb": 50, "typicalAttenuationDb": 50, "secondsSinceLastScan": 540]]],
                        ["dateMillisSinceEpoch": Self.todayMillis - 86_400_000, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 0,
                         "scanInstances": [["minAttenuationDb": 50, "typicalAttenuationDb": 50, "secondsSinceLastScan": 900]]]], to: w)
        let r = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", "\(Self.fixtures)/cwa/exposure-windows-risk-calculation-1.9.json",
                                        "--windows", w.path, "--today", Self.today, "--per-window"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(o["generation"] as? String == "1.9")
        let ws = try #require(o["windows"] as? [[String: Any]])
        #expect(ws.count == 2 && ws[0]["dropped"] as? String == "minutesAtAttenuationFilter" && ws[1]["dropped"] is NSNull)
        #expect(abs((ws[1]["normalizedTime"] as? Double ?? 0) - 8 * 0.2 * 15) < 1e-9 && ws[1]["riskLevel"] as? Int == 2)
        #expect((o["result"] as? [String: Any])?["totalRiskLevel"] as? Int == 2)
    }

    @Test func nhsExampleVectorWithItsDecimalInputs() throws {
        // riskscore-swift-public ExampleData and its expected score 2.149345279234102.
        let example: [(Double, Double)] = [
            (97.03021291, 201.06532745872457), (85.81504891, 225.75565160910116), (83.44136722, 279.3777909268962),
            (64.5678367, 215.4689826255009), (78.41303166, 263.05165262029305), (83.62187329, 211.07091989780974),
            (73.51912742, 228.45034015853247), (76.64553678, 183.48910595748023), (66.65088196, 189.9994479121982),
            (70.27063972, 190.48134624246617),
        ]
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        try Self.write([["dateMillisSinceEpoch": Self.todayMillis, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 3,
                         "scanInstances": example.map { ["minAttenuationDb": $0.0, "typicalAttenuationDb": $0.0, "secondsSinceLastScan": $0.1] }]], to: w)
        let r = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", "\(Self.fixtures)/nhs/exposure-configuration.json", "--windows", w.path])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try CLI.json(r.stdout) as? [String: Any])
        let score = try #require((o["windows"] as? [[String: Any]])?.first?["score"] as? Double)
        #expect(abs(score - 2.149345279234102) < 1e-8, "score \(score)")
        // The same decimals are refused, naming the field, by an engine that takes the framework's whole numbers.
        let cwa = try CLI.run("gaenctl", ["risk", "cwa", "--parameters", "\(Self.fixtures)/cwa/default-app-config-risk-parameters.json", "--windows", w.path])
        #expect(cwa.status == 1)
        #expect(cwa.stderr.contains("window 0: scanInstances[0].typicalAttenuationDb: expected an integer"), "\(cwa.stderr)")
    }

    @Test func nhsScenariosWithinFivePercentOfThePythonModel() throws {
        let csv = try String(contentsOfFile: "\(Self.fixtures)/nhs/pythonRiskScores.csv", encoding: .utf8)
        var expected: [String: Double] = [:]
        for line in csv.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", maxSplits: 7, omittingEmptySubsequences: false)
            expected[fields[7].trimmingCharacters(in: CharacterSet(charactersIn: "\""))] = Double(fields[4])
        }
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenarios = "\(Self.fixtures)/nhs/ScanInstances"
        let names = try FileManager.default.contentsOfDirectory(atPath: scenarios).filter { $0.hasSuffix(".csv") }.sorted()
        #expect(names.count == 10)
        var windows: [[String: Any]] = []
        for name in names {
            let rows = try String(contentsOfFile: "\(scenarios)/\(name)", encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",") }
            windows.append(["dateMillisSinceEpoch": Self.todayMillis, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 3,
                            "scanInstances": rows.map { ["minAttenuationDb": Double($0[1])!, "typicalAttenuationDb": Double($0[1])!,
                                                         "secondsSinceLastScan": Double($0[0])!] }])
        }
        let w = dir.appendingPathComponent("w.json")
        try Self.write(windows, to: w)
        let r = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", "\(Self.fixtures)/nhs/exposure-configuration.json", "--windows", w.path])
        #expect(r.status == 0, "\(r.stderr)")
        let got = try #require((try CLI.json(r.stdout) as? [String: Any])?["windows"] as? [[String: Any]])
        #expect(got.count == 10)
        for (name, g) in zip(names, got) {
            let want = try #require(expected[name])
            let score = try #require(g["score"] as? Double)
            #expect(abs(score - want) < 0.05 * want, "\(name): expected \(want), got \(score)")
        }
    }

    @Test func badWindowsNameTheFieldAndType() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        try #"[{"dateMillisSinceEpoch": 1614556800000, "reportType": 1, "infectiousness": 1, "calibrationConfidence": 0, "scanInstances": [{"minAttenuationDb": "near", "typicalAttenuationDb": 50, "secondsSinceLastScan": 300}]}]"#
            .write(to: w, atomically: true, encoding: .utf8)
        let r = try CLI.run("gaenctl", ["risk", "nhs", "--configuration", "\(Self.fixtures)/nhs/exposure-configuration.json", "--windows", w.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("window 0: scanInstances[0].minAttenuationDb: expected a number, got the string \"near\""), "\(r.stderr)")
    }

    @Test func swissCovidAndImmuniPublishedRules() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = dir.appendingPathComponent("w.json")
        // Day 1: 10 min at 50 dB + 10 min at 60 dB = 15 weighted minutes: exposed. Day 2: 14 min at 50 dB: not.
        func window(_ daysAgo: Int64, _ scans: [(Int, Int)]) -> [String: Any] {
            ["dateMillisSinceEpoch": Self.todayMillis - daysAgo * 86_400_000, "reportType": 1, "infectiousness": 1, "calibrationConfidence": 0,
             "scanInstances": scans.map { ["minAttenuationDb": $0.0, "typicalAttenuationDb": $0.0, "secondsSinceLastScan": $0.1] }]
        }
        try Self.write([window(1, [(50, 300), (50, 300), (60, 300), (60, 300)]), window(2, [(50, 300), (50, 300), (50, 299)])], to: w)
        let s = try CLI.run("gaenctl", ["risk", "swisscovid", "--windows", w.path])
        #expect(s.status == 0, "\(s.stderr)")
        let so = try #require(try CLI.json(s.stdout) as? [String: Any])
        #expect(so["exposed"] as? Bool == true && so["exposureDays"] as? [String] == ["2021-02-28"])
        // Immuni: v1 score 3 x 5 = 15 needs more than 15 minutes at <= 63 dB (typical mean).
        let i = try CLI.run("gaenctl", ["risk", "immuni", "--windows", w.path, "--today", Self.today])
        #expect(i.status == 0, "\(i.stderr)")
        let io = try #require(try CLI.json(i.stdout) as? [String: Any])
        #expect(io["notified"] as? Bool == true && io["maximumRiskScore"] as? Int == 15)
        let scores = (io["exposures"] as? [[String: Any]])?.map { $0["riskScore"] as? Int }
        #expect(scores == [15, 0])
    }
}
