extension String {
    /// The string without leading and trailing tabs and Unicode space separators (Zs): what
    /// Foundation's `trimmingCharacters(in: .whitespaces)` removed, scalar by scalar. (ENProtocol's
    /// own: it imports no platform layer.)
    func trimmingWhitespaces() -> String {
        func blank(_ u: Unicode.Scalar) -> Bool { u == "\t" || u.properties.generalCategory == .spaceSeparator }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !blank($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !blank($0) })!
        return String(scalars[first...last])
    }
}

extension String {
    /// Every `scalar` replaced by `replacement`, scalar by scalar (a "\r\n" is one Character but
    /// two scalars).
    func replacing(scalar: Unicode.Scalar, with replacement: String) -> String {
        guard unicodeScalars.contains(scalar) else { return self }
        var out = String.UnicodeScalarView()
        for u in unicodeScalars {
            if u == scalar { out.append(contentsOf: replacement.unicodeScalars) } else { out.append(u) }
        }
        return String(out)
    }
}
