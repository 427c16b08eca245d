import Foundation

/// Times as users type them: Unix seconds (`1700000000`, `1700000000.25`) or ISO 8601
/// (`2026-11-20T08:00:00Z`, with fractional seconds, with an offset such as `+01:00`, or a
/// bare date `2026-11-20`, meaning its midnight UTC). Every gaenctl option that takes a time
/// reads it through here, so they all accept the same forms.
public enum TimeInput {
    public struct Invalid: Error, CustomStringConvertible {
        public let text: String
        public var description: String {
            "'\(text)' is neither Unix seconds (e.g. 1700000000.5) nor an ISO 8601 time (e.g. 2026-11-20T08:00:00Z, 2026-11-20T09:00:00.25+01:00, 2026-11-20)"
        }
    }

    /// Unix seconds of `text`.
    public static func parse(_ text: String) throws -> Double {
        let s = text.trimmingCharacters(in: .whitespaces)
        if let v = Double(s), v.isFinite, s.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true,
           !s.contains("e"), !s.contains("E") {
            return v
        }
        for options in formats {
            let f = ISO8601DateFormatter()
            f.formatOptions = options
            if let d = f.date(from: s) { return d.timeIntervalSince1970 }
        }
        throw Invalid(text: text)
    }

    static let formats: [ISO8601DateFormatter.Options] = [
        [.withInternetDateTime],
        [.withInternetDateTime, .withFractionalSeconds],
        [.withFullDate],
    ]
}
