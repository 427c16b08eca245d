import ENProtocol
import Foundation
import RiskEngines
import TrialFormats

/// Exposure windows in the shapes the apps' own test data publish them, turned into the windows
/// file of docs/risk.md (the Android API shape) for `gaenctl risk`:
/// - the Corona-Warn-App's risk calculation test cases (`exposure-windows-risk-calculation.json`):
///   windows dated by `ageInDays` (days before "today") with scan instances named
///   `minAttenuation`, `typicalAttenuation`; the whole file (`{"testCases": [...]}`, one case
///   picked by index), one case (`{"exposureWindows": [...]}`) or a bare array of its windows;
/// - the NHS model's scan-instance recordings: headerless CSV, one scan instance per line,
///   `secondsSinceLastScan,attenuation` (decimals), the whole file one window.
public enum PublishedWindows {
    public struct Invalid: Error, CustomStringConvertible {
        public let file: String
        public let reason: String
        public var description: String { "\(file): \(reason)" }
    }

    /// True when `data` is not JSON (its first non-blank character opens no JSON value) but an
    /// NHS recording: lines of numbers, or a header line (`secondsSinceLastScan,attenuation`, as
    /// a spreadsheet saves it) followed by them.
    public static func isHeaderlessCSV(_ data: Data) -> Bool {
        guard let b = data.first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }) else { return false }
        guard (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") else { return recordingHeader(data) != nil }
        // A bare JSON number is not a windows file either; a comma on the first line makes it CSV.
        let firstLine = data.prefix { $0 != 0x0A }
        return firstLine.contains(UInt8(ascii: ","))
    }

    /// The columns (seconds, attenuation) named by a recording's header line, when its first
    /// line is two names, one about seconds and one about attenuation, and a number follows.
    static func recordingHeader(_ data: Data) -> (seconds: Int, attenuation: Int)? {
        let lines = data.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: true)
        guard lines.count >= 2 else { return nil }
        let names = String(decoding: lines[0], as: UTF8.self).split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
        }
        guard names.count == 2, let s = names.firstIndex(where: { $0.contains("second") }),
              let a = names.firstIndex(where: { $0.contains("atten") }), s != a else { return nil }
        guard let b = lines[1].first(where: { $0 != 0x20 && $0 != 0x09 }), (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") else { return nil }
        return (s, a)
    }

    /// The windows file for `data` in any of the shapes above (a windows file is returned as
    /// it is). `today` dates `ageInDays`; `testCase` picks a case of a whole test-case file.
    public static func windowsFile(_ data: Data, file: String, today: UTCDay, testCase: Int? = nil) throws -> Data {
        let clean = ConfigurationText.strippingCommentLines(data)
        guard let top = try? JSONSerialization.jsonObject(with: clean) else { return clean }
        var windows: Any = top
        if let o = top as? [String: Any] {
            if let cases = o["testCases"] as? [[String: Any]] {
                guard let testCase else {
                    throw Invalid(file: file, reason: "a test-case file with \(cases.count) cases: pick one with --test-case 0...\(cases.count - 1)")
                }
                guard cases.indices.contains(testCase) else {
                    throw Invalid(file: file, reason: "--test-case \(testCase): the file has cases 0...\(cases.count - 1)")
                }
                guard let w = cases[testCase]["exposureWindows"] else { throw Invalid(file: file, reason: "testCases[\(testCase)]: no exposureWindows") }
                windows = w
            } else if let w = o["exposureWindows"] {
                windows = w
            } else {
                return clean
            }
        } else if testCase != nil {
            throw Invalid(file: file, reason: "--test-case: the file is not a test-case file ({\"testCases\": [...]})")
        }
        guard let list = windows as? [Any] else { return clean }
        let converted: [Any] = try list.enumerated().map { i, w in
            guard var o = w as? [String: Any] else { return w }
            if o["dateMillisSinceEpoch"] == nil, let age = o["ageInDays"] {
                guard let n = age as? NSNumber, !(age is String), n.doubleValue == n.doubleValue.rounded(), (0...10_000).contains(n.doubleValue) else {
                    throw Invalid(file: file, reason: "window \(i): ageInDays: expected whole days >= 0, got \(age)")
                }
                o["dateMillisSinceEpoch"] = (Int64(today.rawValue) - Int64(n.intValue)) * 86_400_000
                o["ageInDays"] = nil
            }
            if let scans = o["scanInstances"] as? [Any] {
                o["scanInstances"] = scans.map { s -> Any in
                    guard var so = s as? [String: Any] else { return s }
                    for (from, to) in [("minAttenuation", "minAttenuationDb"), ("typicalAttenuation", "typicalAttenuationDb")] where so[to] == nil {
                        if let v = so[from] { so[to] = v; so[from] = nil }
                    }
                    return so
                }
            }
            return o
        }
        return try JSONSerialization.data(withJSONObject: converted)
    }

    /// One window from an NHS scan-instance recording: each line `secondsSinceLastScan,attenuation`
    /// (the attenuation as the minimum and the typical), dated `day`; reportType 1 (confirmed test),
    /// `infectiousness` (default 1, standard), calibrationConfidence 0.
    public static func nhsRecording(_ data: Data, file: String, day: UTCDay, infectiousness: Int = 1) throws -> Data {
        // A header line names the columns; without one the synthetic header shifts lines by one.
        let header = recordingHeader(data)
        let columns = header ?? (0, 1)
        let shift = header == nil ? 1 : 0
        let reader = try CSVReader(bytes: (header == nil ? Array("seconds,attenuation\n".utf8) : []) + [UInt8](data), file: file)
        var scans: [[String: Any]] = []
        try reader.forEachRow { row in
            // The synthetic header shifts lines by one; errors name the file's own line.
            func number(_ i: Int, _ name: String) throws -> Double {
                guard row.count == 2 else { throw Invalid(file: file, reason: "line \(row.line - shift): expected secondsSinceLastScan,attenuation, got \(row.count) fields") }
                guard let v = try? row.double(i, column: name), v.isFinite else {
                    throw Invalid(file: file, reason: "line \(row.line - shift): \(name): expected a number, got '\(row.string(i))'")
                }
                return v
            }
            let seconds = try number(columns.seconds, "secondsSinceLastScan"), attenuation = try number(columns.attenuation, "attenuation")
            guard seconds >= 0, (0...255).contains(attenuation) else {
                throw Invalid(file: file, reason: "line \(row.line - shift): expected seconds >= 0 and attenuation 0...255 dB, got \(row.string(columns.seconds)),\(row.string(columns.attenuation))")
            }
            scans.append(["secondsSinceLastScan": seconds, "minAttenuationDb": attenuation, "typicalAttenuationDb": attenuation])
        }
        guard !scans.isEmpty else { throw Invalid(file: file, reason: "no scan instances") }
        let window: [String: Any] = ["dateMillisSinceEpoch": Int64(day.rawValue) * 86_400_000, "reportType": 1, "infectiousness": infectiousness,
                                     "calibrationConfidence": 0, "scanInstances": scans]
        return try JSONSerialization.data(withJSONObject: [window])
    }

    /// The CWA parameters of a test-case file (`defaultRiskCalculationConfiguration`), else the data as it is.
    public static func cwaParameters(_ data: Data) -> Data {
        let clean = ConfigurationText.strippingCommentLines(data)
        if let o = (try? JSONSerialization.jsonObject(with: clean)) as? [String: Any], let p = o["defaultRiskCalculationConfiguration"],
           let d = try? JSONSerialization.data(withJSONObject: p) {
            return d
        }
        return clean
    }
}
