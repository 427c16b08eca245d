/// Text that came from outside (a server's index, a file name in an inbox, a config value) made
/// safe to print on a terminal or in a log line: control characters (C0, DEL, C1, and the
/// Unicode line and paragraph separators) are escaped as `\n`, `\u{1b}`..., so a hostile
/// string can neither run terminal escapes nor forge a line of its own.
public enum TextSafety {
    public static func escaped(_ text: String, limit: Int = 512) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit { out += "…"; break }
            count += 1
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\\": out += "\\\\"
            default:
                let v = scalar.value
                if v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || v == 0x2028 || v == 0x2029 || (0x202A...0x202E).contains(v)
                    || (0x2066...0x2069).contains(v) {
                    out += "\\u{" + String(v, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `escaped` in single quotes, for naming a value in a message.
    public static func quoted(_ text: String, limit: Int = 512) -> String { "'" + escaped(text, limit: limit) + "'" }

    /// Whether the text holds nothing `escaped` would change (a name safe to print as it is).
    public static func isPlain(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { s in
            let v = s.value
            return !(v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || v == 0x2028 || v == 0x2029 || (0x202A...0x202E).contains(v)
                     || (0x2066...0x2069).contains(v))
        }
    }
}
