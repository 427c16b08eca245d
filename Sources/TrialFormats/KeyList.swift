import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The JSON key list of `gaenctl keys create` (and what `keys inspect` prints per key): an
/// array of `{"keyData": 32 hex digits, "rollingStartIntervalNumber", "rollingPeriod"?,
/// "transmissionRiskLevel"?, "reportType"? (0...5 or the proto name such as "CONFIRMED_TEST"),
/// "daysSinceOnsetOfSymptoms"?}`. Reading also takes a key server's publish request,
/// `{"temporaryExposureKeys":[{"key": base64, "rollingStartNumber", "rollingPeriod",
/// "transmissionRisk"}]}` (the shape of Tests/ENProtocolTests/Fixtures/key-export/two-keys-signed.input.json).
///
/// The one reader of the format: `keys create`, `match`, `windows`, `trial report`, `calibrate`
/// and `simulate` all read key lists through it. Parsed field by field (not Codable) so that an
/// error names the key and the field, the expected value and what was found.
public enum KeyListFile {
    public enum KeyListError: Error, Equatable, CustomStringConvertible {
        case notAKeyList(file: String, reason: String)
        /// `reason` starts with ".field: " or ": ", so the message reads `file[3].reportType: ...`.
        case badKey(file: String, index: Int, reason: String)
        public var description: String {
            switch self {
            case .notAKeyList(let f, let r): return "\(f): not a JSON key list (\(r))"
            case .badKey(let f, let i, let r): return "\(f)[\(i)]\(r)"
            }
        }
    }

    /// The proto enum names of ReportType, accepted besides the numbers.
    public static let reportTypeNames: [String: ReportType] = [
        "UNKNOWN": .unknown, "CONFIRMED_TEST": .confirmedTest, "CONFIRMED_CLINICAL_DIAGNOSIS": .confirmedClinicalDiagnosis,
        "SELF_REPORT": .selfReport, "RECURSIVE": .recursive, "REVOKED": .revoked,
    ]

    static let knownFields: Set<String> = ["keyData", "rollingStartIntervalNumber", "rollingPeriod", "transmissionRiskLevel",
                                           "reportType", "daysSinceOnsetOfSymptoms"]

    public static func decode(_ data: Data, file: String) throws -> [DiagnosisKey] {
        // JSONValue, not JSONSerialization: this file is on FoundationEssentials (the board's
        // gaenctl links no full Foundation); its numbers and booleans read as NSNumber's did.
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(data) } catch {
            throw KeyListError.notAKeyList(file: file, reason: "not valid JSON")
        }
        if case .array(let array) = parsed {
            return try array.enumerated().map { i, v in try key(v, file: file, index: i) }
        }
        if case .object(let doc) = parsed, case .array(let list)? = doc["temporaryExposureKeys"] {
            return try list.enumerated().map { i, v in try publishedKey(v, file: file, index: i) }
        }
        throw KeyListError.notAKeyList(file: file, reason: "expected a JSON array of {keyData, rollingStartIntervalNumber, ...} or {temporaryExposureKeys: [...]}")
    }

    /// One key object of the `keys create` array.
    public static func key(_ value: JSONValue, file: String, index: Int) throws -> DiagnosisKey {
        func fail(_ reason: String) -> KeyListError { .badKey(file: file, index: index, reason: reason) }
        guard case .object(let o) = value else { throw fail(": expected a JSON object") }
        if let unknown = o.keys.sorted().first(where: { !knownFields.contains($0) }) {
            throw fail(": unknown field '\(unknown)' (fields: \(knownFields.sorted().joined(separator: ", ")))")
        }
        let int = integerReader(o, fail)
        guard case .string(let hex)? = o["keyData"] else { throw fail(".keyData: missing (32 hex digits)") }
        let tek: TemporaryExposureKey
        do { tek = try TemporaryExposureKey(hex: hex) } catch { throw fail(".keyData: \(error)") }
        guard let start = try int("rollingStartIntervalNumber", 0...Int64(UInt32.max)) else { throw fail(".rollingStartIntervalNumber: missing") }
        var report: ReportType? = nil
        if let r = o["reportType"], r != .null {
            if case .string(let name) = r {
                guard let t = reportTypeNames[name] else {
                    throw fail(".reportType: unknown name '\(name)' (one of \(reportTypeNames.keys.sorted().joined(separator: ", ")) or 0...5)")
                }
                report = t
            } else if let n = try int("reportType", 0...5) {
                report = ReportType(rawValue: Int(n))
            }
        }
        return DiagnosisKey(
            key: tek, rollingStartIntervalNumber: ENIntervalNumber(UInt32(start)),
            rollingPeriod: UInt32(try int("rollingPeriod", 1...Int64(ENIntervalNumber.perDay)) ?? Int64(ENIntervalNumber.perDay)),
            transmissionRiskLevel: try int("transmissionRiskLevel", Int64(Int32.min)...Int64(Int32.max)).map { Int32($0) },
            reportType: report,
            daysSinceOnsetOfSymptoms: try int("daysSinceOnsetOfSymptoms", Int64(Int32.min)...Int64(Int32.max)).map { Int32($0) })
    }

    /// One key of a publish request.
    static func publishedKey(_ value: JSONValue, file: String, index: Int) throws -> DiagnosisKey {
        func fail(_ reason: String) -> KeyListError { .badKey(file: file, index: index, reason: reason) }
        guard case .object(let o) = value else { throw fail(": expected a JSON object") }
        let int = integerReader(o, fail)
        guard case .string(let b64)? = o["key"] else { throw fail(".key: missing (base64 of 16 bytes)") }
        guard let bytes = Data(base64Encoded: b64), bytes.count == 16 else { throw fail(".key: expected base64 of 16 bytes, got '\(b64)'") }
        guard let start = try int("rollingStartNumber", 0...Int64(UInt32.max)) else { throw fail(".rollingStartNumber: missing") }
        return DiagnosisKey(key: try TemporaryExposureKey(bytes: bytes), rollingStartIntervalNumber: ENIntervalNumber(UInt32(start)),
                            rollingPeriod: UInt32(try int("rollingPeriod", 1...Int64(ENIntervalNumber.perDay)) ?? Int64(ENIntervalNumber.perDay)),
                            transmissionRiskLevel: try int("transmissionRisk", Int64(Int32.min)...Int64(Int32.max)).map { Int32($0) })
    }

    /// An optional integer field in a range; a string, a fraction or a value outside is an error.
    static func integerReader(_ o: [String: JSONValue], _ fail: @escaping (String) -> KeyListError) -> (String, ClosedRange<Int64>) throws -> Int64? {
        { name, range in
            guard let v = o[name], v != .null else { return nil }
            guard let d = v.number, d == d.rounded(), let n = Int64(exactly: d), range.contains(n) else {
                throw fail(".\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got \(v)")
            }
            return n
        }
    }

    public static func read(_ url: URL) throws -> [DiagnosisKey] {
        try decode(Data(contentsOf: url), file: url.path)
    }

    /// The `keys create` array.
    public static func encode(_ keys: [DiagnosisKey]) throws -> Data {
        struct Entry: Encodable {
            var keyData: String
            var rollingStartIntervalNumber: UInt32
            var rollingPeriod: UInt32?
            var transmissionRiskLevel: Int32?
            var reportType: Int?
            var daysSinceOnsetOfSymptoms: Int32?
        }
        let entries = keys.map {
            Entry(keyData: $0.key.hexString, rollingStartIntervalNumber: $0.rollingStartIntervalNumber.rawValue,
                  rollingPeriod: $0.rollingPeriod, transmissionRiskLevel: $0.transmissionRiskLevel,
                  reportType: $0.reportType?.rawValue, daysSinceOnsetOfSymptoms: $0.daysSinceOnsetOfSymptoms)
        }
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try enc.encode(entries)
    }
}

/// What a key input file is, told by its content (not its name): a key export ZIP, a bare
/// export.bin, or a JSON key list. Every command that takes key files accepts all three.
public enum KeyInputKind: Sendable, Equatable {
    case exportZip, exportBin, jsonKeyList

    public static func detect(_ data: Data) -> KeyInputKind {
        if data.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return .exportZip }
        if data.starts(with: KeyExportFile.headerBytes) { return .exportBin }
        return .jsonKeyList
    }
}
