import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Protobuf text format (what `protoc --encode`/`--decode` and the apps' repositories write):
/// `name: value`, `name { ... }` (or `name: { ... }`, `<...>`), `#` comments, repeated fields as
/// repeated names. Values are kept as written (numbers, enum names, quoted strings); the caller
/// maps them onto its message. No schema: only what a configuration file needs.
public indirect enum TextProtoValue: Sendable, Equatable {
    case scalar(String)
    case message(TextProtoMessage)
}

public struct TextProtoMessage: Sendable, Equatable {
    /// Each field with the line it was written on (errors name it).
    public var fields: [(name: String, value: TextProtoValue, line: Int)] = []

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
                let fieldLine = line
                skipSpace()
                var colon = false
                if i < bytes.count, bytes[i] == UInt8(ascii: ":") { colon = true; i += 1; skipSpace() }
                guard i < bytes.count else { throw fail("field '\(name)' has no value") }
                if bytes[i] == UInt8(ascii: "{") || bytes[i] == UInt8(ascii: "<") {
                    let close = bytes[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: ">")
                    i += 1
                    m.fields.append((name, .message(try message(closing: close)), fieldLine))
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
                            m.fields.append((name, .message(try message(closing: close)), fieldLine))
                        } else {
                            m.fields.append((name, .scalar(try scalar(name)), fieldLine))
                        }
                    }
                } else {
                    guard colon else { throw fail("field '\(name)': expected ':' or '{'") }
                    m.fields.append((name, .scalar(try scalar(name)), fieldLine))
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

/// How unknown fields are treated: an error naming the field and its line (the default: a field
/// the tool does not know is a value it would silently leave out), or a warning.
public struct UnknownFieldPolicy: Sendable {
    public var allow: Bool
    public private(set) var warnings: [String] = []
    public init(allow: Bool = false) { self.allow = allow }
    mutating func record(_ message: String, file: String) throws {
        guard allow else { throw RiskError.malformedParameters(file: file, detail: message + " (--allow-unknown-fields reads the file without it)") }
        warnings.append("\(file): \(message): left out")
    }
}

/// A text-format message's fields by the names a schema knows. The apps served their
/// configurations with the .proto's names in more than one spelling (cwa-server's snake_case
/// `app_defined_1`, `days_since_last_exposure`; the apps' camelCase `appDefined_1`,
/// `daysSinceLastExposure`; protobuf JSON's `appDefined1`), so names are compared with case and
/// underscores ignored, which maps each of these to one field and no two fields of one message
/// to the same key.
struct TextProtoFields {
    let path: String
    private var values: [String: [(value: TextProtoValue, line: Int)]] = [:]

    static func key(_ name: String) -> String { String(name.lowercased().filter { $0 != "_" }) }

    /// `known`: fields read; `ignored`: fields of the message the engines do not read (kept quiet);
    /// `repeated`: fields that may appear more than once.
    init(_ m: TextProtoMessage, path: String, known: [String], ignored: [String] = [], repeated: Set<String> = [],
         file: String, policy: inout UnknownFieldPolicy) throws {
        self.path = path
        var canonical: [String: String] = [:]
        for k in known + ignored { canonical[Self.key(k)] = k }
        let quiet = Set(ignored)
        for f in m.fields {
            guard let name = canonical[Self.key(f.name)] else {
                try policy.record("line \(f.line): unknown field '\(f.name)' in \(path.isEmpty ? "the top level" : path) (known: \(known.joined(separator: ", ")))",
                                  file: file)
                continue
            }
            if quiet.contains(name) { continue }
            if let first = values[name]?.first, !repeated.contains(name) {
                throw RiskError.malformedParameters(file: file, detail: "line \(f.line): \(Self.join(path, name)) given again (first on line \(first.line)); it is not a repeated field")
            }
            values[name, default: []].append((f.value, f.line))
        }
    }

    static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    func scalar(_ name: String, file: String) throws -> (String, Int)? {
        guard let v = values[name]?.first else { return nil }
        guard case let .scalar(s) = v.value else {
            throw RiskError.malformedParameters(file: file, detail: "line \(v.line): \(Self.join(path, name)): expected a value, got a message")
        }
        return (s, v.line)
    }

    func messages(_ name: String, file: String) throws -> [(TextProtoMessage, Int)] {
        try (values[name] ?? []).map { v in
            guard case let .message(m) = v.value else {
                throw RiskError.malformedParameters(file: file, detail: "line \(v.line): \(Self.join(path, name)): expected a message { ... }, got a value")
            }
            return (m, v.line)
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
/// Field names in any of the spellings the apps served (TextProtoFields); risk levels are the
/// proto's `RiskLevel` by its full name (RISK_LEVEL_LOWEST), its short name as the apps'
/// generated code printed it (LOWEST), or the number. Each message's fields are listed from the
/// lowest-risk bucket up, the order of the framework's v1 level values; an unset field is 0, as
/// protobuf reads it (a printer of proto3 leaves such fields out). Increased risk starts at the
/// `min` of the risk class labelled HIGH. Unknown fields are an error naming the field and its
/// line (`policy` may make them warnings).
extension CWAv1Configuration {
    static let riskLevelNames = ["UNSPECIFIED", "LOWEST", "LOW", "LOW_MEDIUM", "MEDIUM", "MEDIUM_HIGH", "HIGH", "VERY_HIGH", "HIGHEST"]
    static let bucketFields: [(message: String, fields: [String])] = [
        ("transmission", (1...8).map { "app_defined_\($0)" }),
        ("duration", ["eq_0_min", "gt_0_le_5_min", "gt_5_le_10_min", "gt_10_le_15_min", "gt_15_le_20_min", "gt_20_le_25_min",
                      "gt_25_le_30_min", "gt_30_min"]),
        ("days_since_last_exposure", ["ge_14_days", "ge_12_lt_14_days", "ge_10_lt_12_days", "ge_8_lt_10_days", "ge_6_lt_8_days",
                                      "ge_4_lt_6_days", "ge_2_lt_4_days", "ge_0_lt_2_days"]),
        // `lt_10_dbm` was renamed `le_10_dbm` (cwa-server, 2020-07-08): both spellings are read.
        ("attenuation", ["gt_73_dbm", "gt_63_le_73_dbm", "gt_51_le_63_dbm", "gt_33_le_51_dbm", "gt_27_le_33_dbm", "gt_15_le_27_dbm",
                         "gt_10_le_15_dbm", "le_10_dbm"]),
    ]
    /// Top-level fields of the app configuration that hold no risk parameter (app versions,
    /// features, countries, key download and detection settings): known, not read.
    static let ignoredTopLevel = ["appVersion", "appFeatures", "supportedCountries", "iosKeyDownloadParameters",
                                  "androidKeyDownloadParameters", "iosExposureDetectionParameters", "androidExposureDetectionParameters"]

    public static func decode(textFormat data: Data, file: String) throws -> CWAv1Configuration {
        var policy = UnknownFieldPolicy()
        return try decode(textFormat: data, file: file, policy: &policy)
    }

    public static func decode(textFormat data: Data, file: String, policy: inout UnknownFieldPolicy) throws -> CWAv1Configuration {
        func bad(_ line: Int?, _ field: String, _ detail: String) -> RiskError {
            RiskError.malformedParameters(file: file, detail: (line.map { "line \($0): " } ?? "") + "\(field): \(detail)")
        }
        let parsed: TextProtoMessage
        do { parsed = try TextProto.parse(data) } catch let e as TextProtoError {
            throw RiskError.malformedParameters(file: file, detail: "protobuf text format, \(e)")
        }
        func fields(_ m: TextProtoMessage, _ path: String, _ known: [String], ignored: [String] = [], repeated: Set<String> = []) throws -> TextProtoFields {
            try TextProtoFields(m, path: path, known: known, ignored: ignored, repeated: repeated, file: file, policy: &policy)
        }
        func number(_ f: TextProtoFields, _ name: String, default d: Double? = nil) throws -> Double {
            guard let (s, line) = try f.scalar(name, file: file) else {
                if let d { return d }
                throw bad(nil, TextProtoFields.join(f.path, name), "missing")
            }
            guard let v = Double(s), v.isFinite else { throw bad(line, TextProtoFields.join(f.path, name), "expected a number, got '\(s)'") }
            return v
        }
        func integer(_ f: TextProtoFields, _ name: String, default d: Int? = nil) throws -> Int {
            let v = try number(f, name, default: d.map(Double.init))
            guard v == v.rounded(), abs(v) < 1e9 else { throw bad(try f.scalar(name, file: file)?.1, TextProtoFields.join(f.path, name), "expected an integer, got \(v)") }
            return Int(v)
        }
        func message(_ f: TextProtoFields, _ name: String) throws -> TextProtoMessage {
            guard let m = try f.messages(name, file: file).first?.0 else { throw bad(nil, TextProtoFields.join(f.path, name), "missing") }
            return m
        }
        let root = try fields(parsed, "", ["minRiskScore", "riskScoreClasses", "exposureConfig", "attenuationDuration"], ignored: ignoredTopLevel)
        let minRiskScore = try integer(root, "minRiskScore")
        let exposure = try fields(try message(root, "exposureConfig"), "exposureConfig", bucketFields.map(\.message),
                                  ignored: ["transmission_weight", "duration_weight", "days_weight", "attenuation_weight"])
        var values: [String: [Int]] = [:]
        for (name, bucketNames) in bucketFields {
            let path = "exposureConfig.\(name)"
            var known = bucketNames
            if name == "attenuation" { known.append("lt_10_dbm") }
            let m = try fields(try message(exposure, name), path, known)
            values[name] = try bucketNames.map { f in
                let given = try m.scalar(f, file: file) ?? (f == "le_10_dbm" ? try m.scalar("lt_10_dbm", file: file) : nil)
                // An unset field is RISK_LEVEL_UNSPECIFIED (0), as protobuf reads it.
                guard let (s, line) = given else { return 0 }
                let short = s.hasPrefix("RISK_LEVEL_") ? String(s.dropFirst("RISK_LEVEL_".count)) : s
                if let v = riskLevelNames.firstIndex(of: short) { return v }
                if let v = Int(s), (0...8).contains(v) { return v }
                throw bad(line, "\(path).\(f)", "expected a RiskLevel (LOWEST ... HIGHEST, RISK_LEVEL_LOWEST ... RISK_LEVEL_HIGHEST, or 0...8), got '\(s)'")
            }
        }
        let ad = try fields(try message(root, "attenuationDuration"), "attenuationDuration",
                            ["thresholds", "weights", "defaultBucketOffset", "riskScoreNormalizationDivisor"])
        let th = try fields(try message(ad, "thresholds"), "attenuationDuration.thresholds", ["lower", "upper"])
        let w = try fields(try message(ad, "weights"), "attenuationDuration.weights", ["low", "mid", "high"])
        // Unset numbers are 0, as protobuf reads them.
        let thresholds = [try integer(th, "lower", default: 0), try integer(th, "upper", default: 0)]
        let weights = try ["low", "mid", "high"].map { try number(w, $0, default: 0) }
        let offset = Double(try integer(ad, "defaultBucketOffset", default: 0))
        let divisor = Double(try integer(ad, "riskScoreNormalizationDivisor"))
        var high: TextProtoFields?
        if let classes = try root.messages("riskScoreClasses", file: file).first?.0 {
            let c = try fields(classes, "riskScoreClasses", ["risk_classes"], repeated: ["risk_classes"])
            for (m, _) in try c.messages("risk_classes", file: file) {
                let rc = try fields(m, "riskScoreClasses.risk_classes", ["label", "min", "max", "url"])
                if try rc.scalar("label", file: file)?.0.uppercased() == "HIGH" { high = rc }
            }
        }
        guard let high else {
            throw bad(nil, "riskScoreClasses", "no risk_classes labelled HIGH (its min is the increased-risk threshold)")
        }
        let increased = try number(high, "min", default: 0)
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
