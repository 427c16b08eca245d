#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// Configuration files as datasets ship them.
public enum ConfigurationText {
    /// `#` comment lines (a line whose first non-blank character is `#`) blanked out, so JSON
    /// parsers take files that start with a comment header; line numbers stay as they were.
    public static func strippingCommentLines(_ data: Data) -> Data {
        guard data.contains(UInt8(ascii: "#")) else { return data }
        var out = [UInt8]()
        out.reserveCapacity(data.count)
        var atLineStart = true, inComment = false
        for b in data {
            if b == 0x0A { inComment = false; atLineStart = true; out.append(b); continue }
            if inComment { continue }
            if atLineStart {
                if b == 0x20 || b == 0x09 || b == 0x0D { out.append(b); continue }
                atLineStart = false
                if b == UInt8(ascii: "#") { inComment = true; continue }
            }
            out.append(b)
        }
        return Data(out)
    }

    /// A JSON configuration as an engine reads it: comment lines blanked, every key checked
    /// against `known` (dotted paths, as `checkKeyPaths`), then decoded; the caller validates
    /// the values. The warnings name the unknown keys let through by `allowUnknownFields`.
    public static func decodeJSON<T: Decodable>(_ type: T.Type, _ data: Data, known: [String], file: String,
                                                allowUnknownFields: Bool) throws -> (configuration: T, warnings: [String]) {
        let clean = strippingCommentLines(data)
        var policy = UnknownFieldPolicy(allow: allowUnknownFields)
        try checkKeyPaths(clean, known: known, file: file, policy: &policy)
        return (try RiskJSON.decodeParameters(type, from: clean, file: file), policy.warnings)
    }

    /// Checks that every top-level key of a JSON configuration is one the engine reads: a key
    /// the decoder does not know would otherwise be left out without a word (a misspelt
    /// `minimumRiskScore` read as absent). Each unknown key is named with its line.
    public static func checkKeys(_ data: Data, known: [String], file: String, policy: inout UnknownFieldPolicy) throws {
        try checkKeyPaths(data, known: known, file: file, policy: &policy)
    }

    /// The same for nested objects: `known` lists every key by its dotted path
    /// (`riskScore.rssiParameters.intercept`); an object whose path is known is walked, an
    /// unknown key is named by its path and line, with the keys known at its level beside it.
    public static func checkKeyPaths(_ data: Data, known: [String], file: String, policy: inout UnknownFieldPolicy) throws {
        guard case let .object(o)? = try? JSONValue.parse(data) else { return }  // the decoder reports syntax and shape
        let text = String(decoding: data, as: UTF8.self)
        let paths = Set(known)
        func walk(_ object: [String: JSONValue], at prefix: String) throws {
            // The keys known at this level, in the order `known` gives them.
            var names: [String] = []
            for p in known where p.hasPrefix(prefix) {
                let name = String(p.dropFirst(prefix.count).prefix { $0 != "." })
                if !names.contains(name) { names.append(name) }
            }
            for key in object.keys.sorted() {
                let path = prefix + key
                if paths.contains(path) { continue }
                if paths.contains(where: { $0.hasPrefix(path + ".") }) {
                    if case let .object(inner)? = object[key] { try walk(inner, at: path + ".") }
                    continue  // not an object where one is expected: the decoder says so
                }
                var line = 0
                if let r = text.firstRange(of: "\"\(key)\"") { line = text[..<r.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 } }
                let near = names.first { $0.lowercased() == key.lowercased() || EditDistance.between($0.lowercased(), key.lowercased()) <= 2 }
                try policy.record("\(line > 0 ? "line \(line): " : "")unknown key '\(path)'\(near.map { " (did you mean \($0)?)" } ?? "") (known: \(names.joined(separator: ", ")))", file: file)
            }
        }
        try walk(o, at: "")
    }

    public static let gaenV1Keys = ["minimumRiskScore", "attenuationLevelValues", "daysSinceLastExposureLevelValues", "durationLevelValues",
                                    "transmissionRiskLevelValues", "attenuationDurationThresholds", "defaultTransmissionRiskLevel"]
    public static let cwaV1Keys = gaenV1Keys + ["attenuationDurationWeights", "defaultBucketOffset", "riskScoreNormalizationDivisor", "increasedRiskMinutes",
                                                "minimumExposureMinutes", "maximumAverageAttenuationDb", "maximumAgeDays"]
    public static let swissCovidKeys = ["attenuationThresholdLow", "attenuationThresholdMedium", "attenuationFactorLow", "attenuationFactorMedium",
                                        "minDurationForExposure"]

    /// The CWA v1 configuration: JSON (framework v1 names plus the CWA ones) or the app
    /// configuration in protobuf text format (CWAv1Configuration.decode(textFormat:)).
    public static func cwaV1(_ data: Data, file: String) throws -> CWAv1Configuration {
        var policy = UnknownFieldPolicy()
        return try cwaV1(data, file: file, policy: &policy)
    }

    public static func cwaV1(_ data: Data, file: String, policy: inout UnknownFieldPolicy) throws -> CWAv1Configuration {
        let clean = strippingCommentLines(data)
        if TextProto.looksLikeTextFormat(clean) { return try CWAv1Configuration.decode(textFormat: data, file: file, policy: &policy) }
        try checkKeys(clean, known: cwaV1Keys, file: file, policy: &policy)
        return try RiskJSON.decodeParameters(CWAv1Configuration.self, from: clean, file: file)
    }
}
