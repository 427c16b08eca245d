#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON document as a tree, read and written. Read: the few files read field by field with
/// messages that name the field (mapping files, windows files); FoundationEssentials has no
/// JSONSerialization (gaend links no full Foundation), so JSONDecoder decodes the document into
/// this tree, every number as `.double`. Written: gaenctl's stable output contracts, with
/// object keys sorted so that output is byte for byte reproducible (Codable cannot express
/// heterogeneous objects tidily), integers as integers and other numbers with a point.
public enum JSONValue: Sendable, Equatable, Decodable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// A number written as an integer ("3"); parsing never makes one.
    case int(Int64)
    case double(Double)
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
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    /// The value as a number: numbers, and booleans as 1/0 (as JSONSerialization's NSNumber
    /// made them, so that files accepted before are accepted now); nil for anything else.
    public var number: Double? {
        switch self {
        case let .double(d): d
        case let .int(i): Double(i)
        case let .bool(b): b ? 1 : 0
        default: nil
        }
    }

    /// The value as an integer when it is a whole number in Int's range (or a boolean).
    public var integer: Int? {
        if case let .int(i) = self { return Int(exactly: i) }
        guard let d = number, d == d.rounded(), let i = Int(exactly: d) else { return nil }
        return i
    }

    /// The value for a message (strings bare, booleans as 1/0); `serialized()` is the JSON text.
    public var description: String {
        switch self {
        case .null: "null"
        case let .bool(b): b ? "1" : "0"
        case let .int(i): String(i)
        case let .double(d): d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        case let .string(s): s
        case let .array(a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case let .object(o): "[" + o.keys.sorted().map { "\"\($0)\": \(o[$0]!)" }.joined(separator: ", ") + "]"
        }
    }

    /// The value as compact JSON text, object keys sorted; a number that is not finite as null.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite { out += (d == d.rounded() && abs(d) < 1e15) ? (d == 0 && d.sign == .minus ? "-0.0" : String(Int64(d)) + ".0") : String(d) } else { out += "null" }
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() { if i > 0 { out += "," }; v.write(to: &out) }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                Self.writeString(k, to: &out); out += ":"; o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// `s` as a JSON string literal, quotes included: `"` and `\` escaped, newline, return and
    /// tab as `\n`, `\r`, `\t`, other control characters as `\u00XX`, everything else as is.
    public static func quoted(_ s: String) -> String {
        var out = ""
        writeString(s, to: &out)
        return out
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20: out += "\\u00" + Data([UInt8(u.value)]).hexString
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}

/// Text that is not JSON.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
