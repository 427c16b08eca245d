#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// The windows file of the risk engines (docs/risk.md): a JSON array of exposure windows in the
/// Android API shape. Read field by field (not Codable) so that every error names the window,
/// the field, the expected type and what was found; numbers are kept as written, so the engines
/// whose published inputs are decimal (the NHS scorer) read them exactly, while the engines
/// that take the framework's whole numbers say so when given a fraction.
public struct WindowsFileEntry: Sendable, Equatable {
    public struct Scan: Sendable, Equatable {
        public var typicalAttenuationDb: Double
        public var minAttenuationDb: Double
        public var secondsSinceLastScan: Double

        public init(typicalAttenuationDb: Double, minAttenuationDb: Double, secondsSinceLastScan: Double) {
            self.typicalAttenuationDb = typicalAttenuationDb
            self.minAttenuationDb = minAttenuationDb
            self.secondsSinceLastScan = secondsSinceLastScan
        }
    }

    public var index: Int
    public var dateMillisSinceEpoch: Int64
    public var reportType: Int
    public var infectiousness: Int
    public var calibrationConfidence: Int
    public var transmissionRiskLevel: Int?
    public var scanInstances: [Scan]

    public init(index: Int, dateMillisSinceEpoch: Int64, reportType: Int, infectiousness: Int, calibrationConfidence: Int,
                transmissionRiskLevel: Int?, scanInstances: [Scan]) {
        self.index = index
        self.dateMillisSinceEpoch = dateMillisSinceEpoch
        self.reportType = reportType
        self.infectiousness = infectiousness
        self.calibrationConfidence = calibrationConfidence
        self.transmissionRiskLevel = transmissionRiskLevel
        self.scanInstances = scanInstances
    }

    /// The framework's window as entry `index` of a windows file: the inverse of
    /// `exposureWindow()` (whole dB and seconds as decimals).
    public init(index: Int, _ w: ExposureWindow) {
        self.init(index: index, dateMillisSinceEpoch: w.dateMillisSinceEpoch, reportType: w.reportType, infectiousness: w.infectiousness,
                  calibrationConfidence: w.calibrationConfidence, transmissionRiskLevel: w.transmissionRiskLevel,
                  scanInstances: w.scanInstances.map {
                      .init(typicalAttenuationDb: Double($0.typicalAttenuationDb), minAttenuationDb: Double($0.minAttenuationDb),
                            secondsSinceLastScan: Double($0.secondsSinceLastScan))
                  })
    }

    public var day: UTCDay { UTCDay(Int32(dateMillisSinceEpoch / 86_400_000)) }

    /// The window in the framework's integer shape; a fractional attenuation or duration is an
    /// error naming the field (the framework reports whole dB and seconds).
    public func exposureWindow() throws -> ExposureWindow {
        let scans = try scanInstances.enumerated().map { i, s in
            func whole(_ v: Double, _ name: String) throws -> Int {
                guard v == v.rounded(), abs(v) < 1e9 else {
                    throw RiskError.invalidWindow(index: index, field: "scanInstances[\(i)].\(name)",
                                                  expected: "an integer (this engine takes whole dB and seconds, as the framework reports them; `risk nhs` takes decimals)",
                                                  actual: WindowsFile.format(v))
                }
                return Int(v)
            }
            return ScanInstance(typicalAttenuationDb: try whole(s.typicalAttenuationDb, "typicalAttenuationDb"),
                                minAttenuationDb: try whole(s.minAttenuationDb, "minAttenuationDb"),
                                secondsSinceLastScan: try whole(s.secondsSinceLastScan, "secondsSinceLastScan"))
        }
        return ExposureWindow(dateMillisSinceEpoch: dateMillisSinceEpoch, reportType: reportType, infectiousness: infectiousness,
                              calibrationConfidence: calibrationConfidence, scanInstances: scans, transmissionRiskLevel: transmissionRiskLevel)
    }
}

public enum WindowsFile {
    public static func parse(_ data: Data) throws -> [WindowsFileEntry] {
        let json: JSONValue
        do { json = try JSONValue.parse(data) } catch {
            // A CSV (a scan recording, a spreadsheet export) is the usual wrong file here: say so.
            if let line = csvFirstLine(data) {
                throw RiskError.malformedWindows(detail: "this looks like CSV (first line '\(line)'), not a JSON windows file: expected a JSON array of exposure windows (docs/risk.md); `gaenctl risk nhs` reads the NHS scan recordings (secondsSinceLastScan,attenuation) as they are")
            }
            throw RiskError.malformedWindows(detail: "not valid JSON (\(error))")
        }
        guard case let .array(array) = json else {
            throw RiskError.malformedWindows(detail: "top level: expected a JSON array of windows, got \(kind(json))")
        }
        return try array.enumerated().map { i, v in try entry(v, index: i) }
    }

    /// The first line of `data` when it reads as CSV: no JSON value opens it and it has a comma.
    static func csvFirstLine(_ data: Data) -> String? {
        guard let b = data.first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }),
              b != UInt8(ascii: "["), b != UInt8(ascii: "{"), b != UInt8(ascii: "\"") else { return nil }
        let start = data.firstIndex(of: b)!
        let line = String(decoding: data[start...].prefix { $0 != 0x0A && $0 != 0x0D }.prefix(80), as: UTF8.self)
        return line.contains(",") ? line : nil
    }

    /// Parses a windows file into the framework's integer windows.
    public static func exposureWindows(_ data: Data) throws -> [ExposureWindow] {
        try parse(data).map { try $0.exposureWindow() }
    }

    static func entry(_ value: JSONValue, index: Int) throws -> WindowsFileEntry {
        guard case let .object(o) = value else {
            throw RiskError.invalidWindow(index: index, field: "window", expected: "a JSON object", actual: kind(value))
        }
        func number(_ o: [String: JSONValue], _ name: String, _ path: String) throws -> Double? {
            guard let v = o[name], v != .null else { return nil }
            guard let n = v.number, n.isFinite else {
                throw RiskError.invalidWindow(index: index, field: path, expected: "a number", actual: kind(v))
            }
            return n
        }
        func integer(_ name: String, _ range: ClosedRange<Int64>, required: Bool) throws -> Int64? {
            guard let v = try number(o, name, name) else {
                if required { throw RiskError.invalidWindow(index: index, field: name, expected: "an integer in \(range.lowerBound)...\(range.upperBound)", actual: "missing") }
                return nil
            }
            guard v == v.rounded(), v >= Double(range.lowerBound), v <= Double(range.upperBound) else {
                throw RiskError.invalidWindow(index: index, field: name, expected: "an integer in \(range.lowerBound)...\(range.upperBound)", actual: format(v))
            }
            return Int64(v)
        }
        let date = try integer("dateMillisSinceEpoch", 0...Int64(4_102_444_800_000), required: true)!
        guard date % 86_400_000 == 0 else {
            throw RiskError.invalidWindow(index: index, field: "dateMillisSinceEpoch", expected: "midnight UTC (a multiple of 86400000)", actual: "\(date)")
        }
        let reportType = try integer("reportType", 0...5, required: true)!
        let infectiousness = try integer("infectiousness", 0...2, required: true)!
        let confidence = try integer("calibrationConfidence", 0...3, required: true)!
        let trl = try integer("transmissionRiskLevel", 0...8, required: false)
        guard let list = o["scanInstances"] else {
            throw RiskError.invalidWindow(index: index, field: "scanInstances", expected: "a JSON array", actual: "missing")
        }
        guard case let .array(scans) = list else {
            throw RiskError.invalidWindow(index: index, field: "scanInstances", expected: "a JSON array", actual: kind(list))
        }
        let parsed: [WindowsFileEntry.Scan] = try scans.enumerated().map { j, s in
            let path = "scanInstances[\(j)]"
            guard case let .object(so) = s else {
                throw RiskError.invalidWindow(index: index, field: path, expected: "a JSON object", actual: kind(s))
            }
            func field(_ name: String) throws -> Double {
                guard let v = try number(so, name, "\(path).\(name)") else {
                    throw RiskError.invalidWindow(index: index, field: "\(path).\(name)", expected: "a number", actual: "missing")
                }
                return v
            }
            let minimum = try field("minAttenuationDb")
            let typical = try field("typicalAttenuationDb")
            let seconds = try field("secondsSinceLastScan")
            for (name, v) in [("minAttenuationDb", minimum), ("typicalAttenuationDb", typical)] where !(0...255).contains(v) {
                throw RiskError.invalidWindow(index: index, field: "\(path).\(name)", expected: "dB in 0...255", actual: format(v))
            }
            return .init(typicalAttenuationDb: typical, minAttenuationDb: minimum, secondsSinceLastScan: seconds)
        }
        return WindowsFileEntry(index: index, dateMillisSinceEpoch: date, reportType: Int(reportType), infectiousness: Int(infectiousness),
                                calibrationConfidence: Int(confidence), transmissionRiskLevel: trl.map(Int.init), scanInstances: parsed)
    }

    static func kind(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case let .string(s): "the string \"\(s.prefix(40))\""
        case .array: "an array"
        case .object: "an object"
        case .int, .double, .bool: format(v.number!)
        }
    }

    static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : "\(v)"
    }
}

extension RiskJSON {
    /// Decodes a windows file: a JSON array of windows in the Android API shape (WindowsFile).
    public static func decodeWindows(from data: Data) throws -> [ExposureWindow] {
        try WindowsFile.exposureWindows(data)
    }
}
