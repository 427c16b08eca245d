/// What a scalar means, by the YAML 1.2 core schema (the one YAML 1.2 parsers resolve plain
/// scalars with), plus YAML 1.1's `yes`/`no`/`on`/`off` booleans, which hand-written configs use
/// and which YAML 1.1 readers (libyaml's users, Yams, PyYAML) have always taken as booleans.
///
/// - Only a plain scalar is resolved from its content; a quoted or block scalar is a string
///   (`"true"`, `'3'`, `"null"` are text), unless it carries an explicit tag.
/// - An explicit tag decides: `!!str 3` is text; `!!int "3"` is the number 3.
/// - Not taken from YAML 1.1: `0`-prefixed octal (`010` is ten here, as in YAML 1.2),
///   sexagesimal `1:30`, `_` digit separators, `y`/`n`.
extension YAMLScalar {
    /// The literal forms of the core schema's null: `~`, `null`, `Null`, `NULL` and nothing.
    public var isNull: Bool {
        switch tag {
        case .null?: return Self.nullForms.contains(string)
        case nil: return style == .plain && Self.nullForms.contains(string)
        default: return false
        }
    }

    /// `true`/`false` (also `True`, `TRUE`, ...) and YAML 1.1's `yes`/`no`/`on`/`off` in the same
    /// three spellings.
    public var bool: Bool? {
        guard resolvable(as: .bool) else { return nil }
        return Self.boolForms[string]
    }

    /// A whole number: `[-+]?[0-9]+`, `0o[0-7]+`, `0x[0-9a-fA-F]+`; nil if it does not fit an Int.
    public var int: Int? {
        guard resolvable(as: .int) else { return nil }
        return Self.integer(string)
    }

    /// A number: the core schema's floats (`1.5`, `-2e3`, `.5`, `.inf`, `-.inf`, `.nan`) and its
    /// integers (`3`, `0x1f`) as doubles.
    public var double: Double? {
        guard resolvable(as: .float) || resolvable(as: .int) else { return nil }
        return Self.float(string) ?? Self.integer(string).map(Double.init)
    }

    /// Whether the content may be read as `type`: the explicit tag says so, or there is none
    /// and the scalar is plain.
    func resolvable(as type: YAMLTag) -> Bool {
        if let tag { return tag == type }
        return style == .plain
    }

    static let nullForms: Set<String> = ["", "~", "null", "Null", "NULL"]

    static let boolForms: [String: Bool] = {
        var forms: [String: Bool] = [:]
        for (word, value) in [("true", true), ("false", false), ("yes", true), ("no", false), ("on", true), ("off", false)] {
            forms[word] = value
            forms[word.prefix(1).uppercased() + word.dropFirst()] = value
            forms[word.uppercased()] = value
        }
        return forms
    }()

    /// `[-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+` (the core schema's int); nil on overflow.
    static func integer(_ text: String) -> Int? {
        let u = Array(text.utf8)
        func digits(_ from: Int, radix: Int) -> Int? {
            guard from < u.count else { return nil }
            var value = 0
            for c in u[from...] {
                let d: Int
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = Int(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = Int(c - UInt8(ascii: "a")) + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = Int(c - UInt8(ascii: "A")) + 10
                default: return nil
                }
                guard d < radix else { return nil }
                let (m, o1) = value.multipliedReportingOverflow(by: radix)
                let (s, o2) = m.addingReportingOverflow(d)
                guard !o1, !o2 else { return nil }
                value = s
            }
            return value
        }
        if u.count > 2, u[0] == UInt8(ascii: "0"), u[1] == UInt8(ascii: "x") { return digits(2, radix: 16) }
        if u.count > 2, u[0] == UInt8(ascii: "0"), u[1] == UInt8(ascii: "o") { return digits(2, radix: 8) }
        let negative = u.first == UInt8(ascii: "-")
        let signed = negative || u.first == UInt8(ascii: "+")
        // Accumulated negatively so that Int.min reads.
        guard let magnitude = digits(signed ? 1 : 0, radix: 10) else {
            if negative, u.count > 1, String(decoding: u[1...], as: UTF8.self) == String(UInt64(Int.max) + 1) { return Int.min }
            return nil
        }
        return negative ? -magnitude : magnitude
    }

    /// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, `[-+]?\.(inf|Inf|INF)`,
    /// `\.(nan|NaN|NAN)` (the core schema's float).
    static func float(_ text: String) -> Double? {
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        let u = Array(text.utf8)
        var i = 0
        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
        func run() -> Int {
            let from = i
            while i < u.count, isDigit(u[i]) { i += 1 }
            return i - from
        }
        if i < u.count, u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: "+") { i += 1 }
        let whole = run()
        var fraction = 0
        if i < u.count, u[i] == UInt8(ascii: ".") {
            i += 1
            fraction = run()
        }
        // `5.` has a whole part; `.5` needs its fraction; `.` alone is nothing.
        guard whole > 0 || fraction > 0 else { return nil }
        if i < u.count, u[i] == UInt8(ascii: "e") || u[i] == UInt8(ascii: "E") {
            i += 1
            if i < u.count, u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: "+") { i += 1 }
            guard run() > 0 else { return nil }
        }
        guard i == u.count else { return nil }
        // The form is checked above; Double(String) reads it correctly rounded (it would also
        // take forms YAML does not, such as "0x1p3" or "infinity", hence the check).
        return Double(text)
    }
}
