/// The one rule for a trial board's name, wherever it appears: gaend's `research.node`, the
/// user of `gaenctl app submit --user` and of `gaenctl collect`, the server's htpasswd user, the
/// inbox and collection paths nginx matches (deploy/server/nginx/locations/*.conf spell the same
/// rule as a regex), the inventory of `gaenctl trial provision`.
///
/// A letter or digit, then up to 63 letters, digits, `_` or `-`: a name that is a URL path
/// segment, an htpasswd user, a file name and a Prometheus label value as it is, with nothing
/// to escape. No `.`: a dotted name reads as a host name (or `..` as a parent directory), and
/// the inbox regex never allowed it.
public enum BoardName {
    public static let maximumLength = 64
    /// The rule in words, for error messages.
    public static let rule = "a letter or digit, then up to 63 letters, digits, '_' or '-'"
    /// The rule as a POSIX/PCRE regex (nginx's locations spell it the same way).
    public static let pattern = "[A-Za-z0-9][A-Za-z0-9_-]{0,63}"

    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maximumLength, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// Why `name` is not a board name, nil when it is one.
    public static func problem(_ name: String) -> String? {
        isValid(name) ? nil : "'\(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }.joined())' is not a board name (\(rule))"
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
    }
}
