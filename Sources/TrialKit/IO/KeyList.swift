import ENProtocol
import Foundation

/// The JSON key list of `gaenctl keys create` (and what `keys inspect` prints per key): an
/// array of `{"keyData": 32 hex digits, "rollingStartIntervalNumber", "rollingPeriod"?,
/// "transmissionRiskLevel"?, "reportType"?, "daysSinceOnsetOfSymptoms"?}`. Reading also takes
/// a key server's publish request, `{"temporaryExposureKeys":[{"key": base64,
/// "rollingStartNumber", "rollingPeriod", "transmissionRisk"}]}` (the shape of
/// Tests/ENProtocolTests/Fixtures/key-export/two-keys-signed.input.json).
public enum KeyListFile {
    public enum KeyListError: Error, Equatable, CustomStringConvertible {
        case notAKeyList(file: String, reason: String)
        case badKey(file: String, index: Int, reason: String)
        public var description: String {
            switch self {
            case .notAKeyList(let f, let r): return "\(f): not a JSON key list (\(r))"
            case .badKey(let f, let i, let r): return "\(f): key \(i): \(r)"
            }
        }
    }

    /// One key as `gaenctl keys create` takes it.
    struct Entry: Codable {
        var keyData: String
        var rollingStartIntervalNumber: UInt32
        var rollingPeriod: UInt32?
        var transmissionRiskLevel: Int32?
        var reportType: Int?
        var daysSinceOnsetOfSymptoms: Int32?
    }

    /// A key server's publish request.
    struct PublishEntry: Codable {
        var key: String
        var rollingStartNumber: UInt32
        var rollingPeriod: UInt32?
        var transmissionRisk: Int32?
    }

    struct PublishDocument: Codable {
        var temporaryExposureKeys: [PublishEntry]
    }

    public static func decode(_ data: Data, file: String) throws -> [DiagnosisKey] {
        let decoder = JSONDecoder()
        var entries: [Entry]
        if let array = try? decoder.decode([Entry].self, from: data) {
            entries = array
        } else if let doc = try? decoder.decode(PublishDocument.self, from: data) {
            entries = []
            for (i, e) in doc.temporaryExposureKeys.enumerated() {
                guard let bytes = Data(base64Encoded: e.key) else {
                    throw KeyListError.badKey(file: file, index: i, reason: "key is not base64")
                }
                entries.append(Entry(keyData: bytes.hexString, rollingStartIntervalNumber: e.rollingStartNumber,
                                     rollingPeriod: e.rollingPeriod, transmissionRiskLevel: e.transmissionRisk))
            }
        } else {
            throw KeyListError.notAKeyList(file: file, reason: "expected an array of {keyData, rollingStartIntervalNumber, ...} or {temporaryExposureKeys: [...]}")
        }
        return try entries.enumerated().map { i, e in
            let tek: TemporaryExposureKey
            do { tek = try TemporaryExposureKey(hex: e.keyData) } catch {
                throw KeyListError.badKey(file: file, index: i, reason: "keyData: \(error)")
            }
            let period = e.rollingPeriod ?? ENIntervalNumber.perDay
            guard (1...ENIntervalNumber.perDay).contains(period) else {
                throw KeyListError.badKey(file: file, index: i, reason: "rollingPeriod \(period) is outside 1...144")
            }
            var reportType: ReportType? = nil
            if let r = e.reportType {
                guard let t = ReportType(rawValue: r) else {
                    throw KeyListError.badKey(file: file, index: i, reason: "reportType \(r) is not 0...5")
                }
                reportType = t
            }
            return DiagnosisKey(key: tek, rollingStartIntervalNumber: ENIntervalNumber(e.rollingStartIntervalNumber),
                                rollingPeriod: period, transmissionRiskLevel: e.transmissionRiskLevel,
                                reportType: reportType, daysSinceOnsetOfSymptoms: e.daysSinceOnsetOfSymptoms)
        }
    }

    public static func read(_ url: URL) throws -> [DiagnosisKey] {
        try decode(Data(contentsOf: url), file: url.path)
    }

    /// The `keys create` array.
    public static func encode(_ keys: [DiagnosisKey]) throws -> Data {
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
