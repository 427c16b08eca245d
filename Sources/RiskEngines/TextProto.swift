import ENProtocol
import Foundation

/// Protobuf text format (what `protoc --encode`/`--decode` and the apps' repositories write):
/// `name: value`, `name { ... }` (or `name: { ... }`, `<...>`), `#` comments, repeated fields as
/// repeated names. Values are kept as written (numbers, enum names, quoted strings); the caller
/// maps them onto its message. No schema: only what a configuration file needs.
public indirect enum TextProtoValue: Sendable, Equatable {
    case scalar(String)
    case message(TextProtoMessage)
}

public struct TextProtoMessage: Sendable, Equatable {
    public var fields: [(name: String, value: TextProtoValue)] = []

    public static func == (a: TextProtoMessage, b: TextProtoMessage) -> Bool {
        a.fields.count == b.fields.count && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public func all(_ name: String) -> [TextProtoValue] { fields.filter { $0.name == name }.map(\.value) }
    public func message(_ name: String) -> TextProtoMessage? {
        for f in fields.reversed() where f.name == name { if case let .message(m) = f.value { return m } }
        return nil
    }
    public func scalar(_ name: String) -> String? {
        for f in fields.reversed() where f.name == name { if case let .scalar(s) = f.value { return s } }
        return nil
    }
}

public struct TextProtoError: Error, CustomStringConvertible, Equatable {
    public let line: Int
    public let reason: String
    public var description: String { "line \(line): \(reason)" }
}

public enum TextProto {
    /// Whether `data` looks like text format rather than JSON: its first character outside
    /// comments is a field name.
    public static func looksLikeTextFormat(_ data: Data) -> Bool {
        var inComment = false
        for b in data {
            if inComment { if b == 0x0A { inComment = false }; continue }
            if b == UInt8(ascii: "#") { inComment = true; continue }
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { continue }
            return (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_") || b == UInt8(ascii: "[")
        }
        return false
    }

    public static func parse(_ data: Data) throws -> TextProtoMessage {
        var p = Parser(bytes: [UInt8](data))
        let m = try p.message(closing: nil)
        return m
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0
        var line = 1

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ reason: String) -> TextProtoError { TextProtoError(line: line, reason: reason) }

        mutating func skipSpace() {
            while i < bytes.count {
                let b = bytes[i]
                if b == 0x0A { line += 1; i += 1 } else if b == 0x20 || b == 0x09 || b == 0x0D || b == UInt8(ascii: ",") || b == UInt8(ascii: ";") { i += 1 } else if b == UInt8(ascii: "#") {
                    while i < bytes.count, bytes[i] != 0x0A { i += 1 }
                } else { return }
            }
        }

        static func isIdent(_ b: UInt8) -> Bool {
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
        }

        mutating func identifier() throws -> String {
            skipSpace()
            let start = i
            if i < bytes.count, bytes[i] == UInt8(ascii: "[") {
                // An extension or Any type URL: [name.with/slashes].
                while i < bytes.count, bytes[i] != UInt8(ascii: "]") { i += 1 }
                guard i < bytes.count else { throw fail("'[' never closed") }
                i += 1
                return String(decoding: bytes[start..<i], as: UTF8.self)
            }
            while i < bytes.count, Self.isIdent(bytes[i]) { i += 1 }
            guard i > start else { throw fail("expected a field name, found '\(i < bytes.count ? String(decoding: [bytes[i]], as: UTF8.self) : "end of file")'") }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }

        mutating func message(closing: UInt8?) throws -> TextProtoMessage {
            var m = TextProtoMessage()
            while true {
                skipSpace()
                if i >= bytes.count {
                    if closing != nil { throw fail("message never closed (missing '\(String(decoding: [closing!], as: UTF8.self))')") }
                    return m
                }
                if let closing, bytes[i] == closing { i += 1; return m }
                let name = try identifier()
                skipSpace()
                var colon = false
                if i < bytes.count, bytes[i] == UInt8(ascii: ":") { colon = true; i += 1; skipSpace() }
                guard i < bytes.count else { throw fail("field '\(name)' has no value") }
                if bytes[i] == UInt8(ascii: "{") || bytes[i] == UInt8(ascii: "<") {
                    let close = bytes[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: ">")
                    i += 1
                    m.fields.append((name, .message(try message(closing: close))))
                } else if bytes[i] == UInt8(ascii: "[") {
                    guard colon else { throw fail("field '\(name)': expected ':' before a list") }
                    i += 1
                    while true {
                        skipSpace()
                        guard i < bytes.count else { throw fail("list of '\(name)' never closed") }
                        if bytes[i] == UInt8(ascii: "]") { i += 1; break }
                        if bytes[i] == UInt8(ascii: "{") || bytes[i] == UInt8(ascii: "<") {
                            let close = bytes[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: ">")
                            i += 1
                            m.fields.append((name, .message(try message(closing: close))))
                        } else {
                            m.fields.append((name, .scalar(try scalar(name))))
                        }
                    }
                } else {
                    guard colon else { throw fail("field '\(name)': expected ':' or '{'") }
                    m.fields.append((name, .scalar(try scalar(name))))
                }
            }
        }

        mutating func scalar(_ name: String) throws -> String {
            skipSpace()
            guard i < bytes.count else { throw fail("field '\(name)' has no value") }
            if bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") {
                let q = bytes[i]
                i += 1
                var out: [UInt8] = []
                while true {
                    guard i < bytes.count, bytes[i] != 0x0A else { throw fail("string of '\(name)' never closed") }
                    if bytes[i] == q { i += 1; break }
                    if bytes[i] == UInt8(ascii: "\\"), i + 1 < bytes.count { out.append(bytes[i + 1]); i += 2; continue }
                    out.append(bytes[i]); i += 1
                }
                return String(decoding: out, as: UTF8.self)
            }
            let start = i
            while i < bytes.count, Self.isIdent(bytes[i]) || bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
            guard i > start else { throw fail("field '\(name)': expected a value") }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }
    }
}

/// The Corona-Warn-App's v1 configuration as the app and server distributed it: the
/// `ApplicationConfiguration` message (cwa-server's `applicationConfiguration.proto`) in
/// protobuf text format, e.g.
///
/// ```
/// minRiskScore: 11
/// riskScoreClasses { risk_classes { label: "LOW" min: 0 max: 15 } risk_classes { label: "HIGH" min: 15 max: 72 } }
/// exposureConfig {
///   transmission { app_defined_1: RISK_LEVEL_LOWEST ... app_defined_8: RISK_LEVEL_HIGHEST }
///   duration { eq_0_min: RISK_LEVEL_LOWEST ... gt_30_min: RISK_LEVEL_HIGHEST }
///   days_since_last_exposure { ge_14_days: ... ge_0_lt_2_days: ... }
///   attenuation { gt_73_dbm: ... lt_10_dbm: ... }
/// }
/// attenuationDuration { thresholds { lower: 55 upper: 63 } weights { low: 1.0 mid: 0.5 high: 0.0 }
///                       defaultBucketOffset: 0 riskScoreNormalizationDivisor: 25 }
/// ```
///
/// Risk levels are the proto's `RiskLevel` (RISK_LEVEL_UNSPECIFIED 0, LOWEST 1 ... HIGHEST 8,
/// or the number); each message's fields are listed from the lowest-risk bucket up, the order
/// of the framework's v1 level values. Increased risk starts at the `min` of the risk class
/// labelled HIGH.
extension CWAv1Configuration {
    static let riskLevels = ["RISK_LEVEL_UNSPECIFIED": 0, "RISK_LEVEL_LOWEST": 1, "RISK_LEVEL_LOW": 2, "RISK_LEVEL_LOW_MEDIUM": 3,
                             "RISK_LEVEL_MEDIUM": 4, "RISK_LEVEL_MEDIUM_HIGH": 5, "RISK_LEVEL_HIGH": 6, "RISK_LEVEL_VERY_HIGH": 7,
                             "RISK_LEVEL_HIGHEST": 8]
    static let bucketFields: [(message: String, fields: [String])] = [
        ("transmission", (1...8).map { "app_defined_\($0)" }),
        ("duration", ["eq_0_min", "gt_0_le_5_min", "gt_5_le_10_min", "gt_10_le_15_min", "gt_15_le_20_min", "gt_20_le_25_min",
                      "gt_25_le_30_min", "gt_30_min"]),
        ("days_since_last_exposure", ["ge_14_days", "ge_12_lt_14_days", "ge_10_lt_12_days", "ge_8_lt_10_days", "ge_6_lt_8_days",
                                      "ge_4_lt_6_days", "ge_2_lt_4_days", "ge_0_lt_2_days"]),
        ("attenuation", ["gt_73_dbm", "gt_63_le_73_dbm", "gt_51_le_63_dbm", "gt_33_le_51_dbm", "gt_27_le_33_dbm", "gt_15_le_27_dbm",
                         "gt_10_le_15_dbm", "lt_10_dbm"]),
    ]

    public static func decode(textFormat data: Data, file: String) throws -> CWAv1Configuration {
        func bad(_ field: String, _ detail: String) -> RiskError { RiskError.malformedParameters(file: file, detail: "\(field): \(detail)") }
        let root: TextProtoMessage
        do { root = try TextProto.parse(data) } catch let e as TextProtoError {
            throw RiskError.malformedParameters(file: file, detail: "protobuf text format, \(e)")
        }
        func number(_ m: TextProtoMessage, _ name: String, _ path: String) throws -> Double {
            guard let s = m.scalar(name) else { throw bad(path, "missing") }
            guard let v = Double(s), v.isFinite else { throw bad(path, "expected a number, got '\(s)'") }
            return v
        }
        func integer(_ m: TextProtoMessage, _ name: String, _ path: String, default d: Int? = nil) throws -> Int {
            guard m.scalar(name) != nil || d == nil else { return d! }
            let v = try number(m, name, path)
            guard v == v.rounded(), abs(v) < 1e9 else { throw bad(path, "expected an integer, got \(v)") }
            return Int(v)
        }
        let minRiskScore = try integer(root, "minRiskScore", "minRiskScore")
        guard let exposure = root.message("exposureConfig") else { throw bad("exposureConfig", "missing") }
        var values: [String: [Int]] = [:]
        for (message, fields) in bucketFields {
            guard let m = exposure.message(message) else { throw bad("exposureConfig.\(message)", "missing") }
            values[message] = try fields.map { f in
                // An unset field is RISK_LEVEL_UNSPECIFIED (0), as protobuf reads it.
                guard let s = m.scalar(f) else { return 0 }
                if let v = riskLevels[s] { return v }
                if let v = Int(s), (0...8).contains(v) { return v }
                throw bad("exposureConfig.\(message).\(f)", "expected a RiskLevel (RISK_LEVEL_LOWEST ... RISK_LEVEL_HIGHEST or 0...8), got '\(s)'")
            }
        }
        guard let ad = root.message("attenuationDuration") else { throw bad("attenuationDuration", "missing") }
        guard let th = ad.message("thresholds") else { throw bad("attenuationDuration.thresholds", "missing") }
        guard let w = ad.message("weights") else { throw bad("attenuationDuration.weights", "missing") }
        let thresholds = [try integer(th, "lower", "attenuationDuration.thresholds.lower"), try integer(th, "upper", "attenuationDuration.thresholds.upper")]
        // Unset weights are 0, as protobuf reads them.
        let weights = try ["low", "mid", "high"].map { w.scalar($0) == nil ? 0 : try number(w, $0, "attenuationDuration.weights.\($0)") }
        let offset = Double(try integer(ad, "defaultBucketOffset", "attenuationDuration.defaultBucketOffset", default: 0))
        let divisor = Double(try integer(ad, "riskScoreNormalizationDivisor", "attenuationDuration.riskScoreNormalizationDivisor"))
        let classes = root.message("riskScoreClasses")?.all("risk_classes").compactMap { v -> TextProtoMessage? in
            if case let .message(m) = v { return m } else { return nil }
        } ?? []
        guard let high = classes.first(where: { $0.scalar("label")?.uppercased() == "HIGH" }) else {
            throw bad("riskScoreClasses", "no risk_classes labelled HIGH (its min is the increased-risk threshold)")
        }
        let increased = try number(high, "min", "riskScoreClasses.risk_classes[HIGH].min")
        let v1 = GAENv1Configuration(minimumRiskScore: minRiskScore, attenuationLevelValues: values["attenuation"]!,
                                     daysSinceLastExposureLevelValues: values["days_since_last_exposure"]!,
                                     durationLevelValues: values["duration"]!, transmissionRiskLevelValues: values["transmission"]!,
                                     attenuationDurationThresholds: thresholds)
        let c = CWAv1Configuration(v1: v1, attenuationDurationWeights: weights, defaultBucketOffset: offset,
                                   riskScoreNormalizationDivisor: divisor, increasedRiskMinutes: increased)
        try c.validate()
        return c
    }
}
