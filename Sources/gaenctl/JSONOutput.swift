import Foundation

/// A small JSON value for gaenctl's stable output contracts: keys come out sorted, so output is
/// byte-for-byte reproducible and diffable, which JSONSerialization does not promise for order
/// of keys across platforms unless asked, and Codable cannot express heterogeneous objects tidily.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    func serialized() -> String {
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
            if d.isFinite { out += (d == d.rounded() && abs(d) < 1e15) ? String(format: "%.1f", d) : String(d) } else { out += "null" }
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

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}

/// Writes one JSON line straight to standard output (no stdio buffering), so a consumer
/// reading a pipe sees each line at once.
func printJSONLine(_ value: JSONValue) {
    FileHandle.standardOutput.write(Data((value.serialized() + "\n").utf8))
}

/// A failure of a command (not of its arguments): printed as one line on stderr, exit 1.
struct CLIFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
