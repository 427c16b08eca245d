import ENProtocol
import Foundation

/// The JSON key list that `gaenctl keys create` takes (the shape of a key server's publish
/// request, as in Tests/ENProtocolTests/Fixtures/key-export/two-keys-signed.input.json):
/// `{"temporaryExposureKeys":[{"key": base64, "rollingStartNumber", "rollingPeriod",
/// "transmissionRisk", "reportType"?, "daysSinceOnsetOfSymptoms"?}]}`.
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

    struct Entry: Codable {
        var key: String
        var rollingStartNumber: UInt32
        var rollingPeriod: UInt32?
        var transmissionRisk: Int32?
        var reportType: Int?
        var daysSinceOnsetOfSymptoms: Int32?
    }

    struct Document: Codable {
        var temporaryExposureKeys: [Entry]
    }

    public static func decode(_ data: Data, file: String) throws -> [DiagnosisKey] {
        let doc: Document
        do { doc = try JSONDecoder().decode(Document.self, from: data) } catch {
            throw KeyListError.notAKeyList(file: file, reason: "\(error)")
        }
        return try doc.temporaryExposureKeys.enumerated().map { i, e in
            guard let bytes = Data(base64Encoded: e.key) else {
                throw KeyListError.badKey(file: file, index: i, reason: "key is not base64")
            }
            let tek: TemporaryExposureKey
            do { tek = try TemporaryExposureKey(bytes: bytes) } catch {
                throw KeyListError.badKey(file: file, index: i, reason: "\(error)")
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
            return DiagnosisKey(key: tek, rollingStartIntervalNumber: ENIntervalNumber(e.rollingStartNumber),
                                rollingPeriod: period, transmissionRiskLevel: e.transmissionRisk,
                                reportType: reportType, daysSinceOnsetOfSymptoms: e.daysSinceOnsetOfSymptoms)
        }
    }

    public static func read(_ url: URL) throws -> [DiagnosisKey] {
        try decode(Data(contentsOf: url), file: url.path)
    }

    public static func encode(_ keys: [DiagnosisKey]) throws -> Data {
        let doc = Document(temporaryExposureKeys: keys.map {
            Entry(key: $0.key.bytes.base64EncodedString(), rollingStartNumber: $0.rollingStartIntervalNumber.rawValue,
                  rollingPeriod: $0.rollingPeriod, transmissionRisk: $0.transmissionRiskLevel,
                  reportType: $0.reportType?.rawValue, daysSinceOnsetOfSymptoms: $0.daysSinceOnsetOfSymptoms)
        })
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try enc.encode(doc)
    }
}
