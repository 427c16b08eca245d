#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A parsed JSON document, for the few files read field by field with messages that name the
/// field (mapping files, windows files). FoundationEssentials has no JSONSerialization (issue 12:
/// gaend links no full Foundation), so the document is decoded by JSONDecoder into this tree.
/// `true`/`false` are numbers 1/0 as JSONSerialization's NSNumber made them, so that files
/// accepted before are accepted now.
public enum JSONValue: Sendable, Equatable, Decodable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The document in `data`, or an error saying where the syntax is wrong.
    public static func parse(_ data: Data) throws(JSONSyntaxError) -> JSONValue {
        do { return try JSONDecoder().decode(JSONValue.self, from: data) } catch let DecodingError.dataCorrupted(context) {
            let underlying = context.underlyingError.map { " (\($0))" } ?? ""
            throw JSONSyntaxError(description: context.debugDescription + underlying)
        } catch {
            throw JSONSyntaxError(description: "\(error)")
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    /// The value as a number: numbers, and booleans as 1/0; nil for anything else.
    public var number: Double? {
        switch self {
        case let .number(d): d
        case let .bool(b): b ? 1 : 0
        default: nil
        }
    }

    /// The value as an integer when it is a whole number in Int's range (or a boolean).
    public var integer: Int? {
        guard let d = number, d == d.rounded(), let i = Int(exactly: d) else { return nil }
        return i
    }

    public var description: String {
        switch self {
        case .null: "null"
        case let .bool(b): b ? "1" : "0"
        case let .number(d): d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        case let .string(s): s
        case let .array(a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case let .object(o): "[" + o.keys.sorted().map { "\"\($0)\": \(o[$0]!)" }.joined(separator: ", ") + "]"
        }
    }
}

/// Text that is not JSON.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
