/// The rows of a quoted CSV file (RFC 4180): fields split on commas, rows on LF, CR or CRLF, a
/// field that starts with '"' runs to the next lone '"', and "" inside it is one '"'.
///
/// Our own instead of CSV.swift because that library imports full Foundation, which gaend must
/// not link (the idle daemon's footprint, scripts/measure-idle.sh). It reads
/// exactly what CSV.swift 2.5 (the reader used before, trimFields off) read, including its
/// leniencies, so that files accepted before give the same rows: a quoted field's closing '"'
/// followed by anything but a comma, a line end or '"' keeps the '"' and drops that character;
/// an unterminated quoted field ends at the end of the file; a '"' inside an unquoted field is
/// an ordinary character. Only files with a '"' come here (SightingsFile.parseCSV): speed is
/// the byte splitter's business.
struct CSVRows: IteratorProtocol {
    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
    private let bytes: [UInt8]
    private var i = 0

    /// `text` is valid Unicode, so its UTF-8 can be split on ASCII bytes.
    init(_ text: String) { bytes = Array(text.utf8) }

    mutating func next() -> [String]? {
        guard i < bytes.count else { return nil }
        var row: [String] = []
        while true {
            // A comma just before the end of the file ends the row with an empty field.
            guard i < bytes.count else { row.append(""); return row }
            let (field, endOfRow) = bytes[i] == Self.quote ? quotedField() : plainField()
            row.append(field)
            if endOfRow { return row }
        }
    }

    /// Skips a line end at `i` if it is CR LF's LF (after a CR was taken).
    private mutating func skipLF() {
        if i < bytes.count, bytes[i] == Self.lf { i += 1 }
    }

    private mutating func plainField() -> (String, Bool) {
        let start = i
        while i < bytes.count {
            let c = bytes[i]
            if c == Self.comma || c == Self.cr || c == Self.lf {
                let field = text(start..<i)
                i += 1
                if c == Self.comma { return (field, false) }
                if c == Self.cr { skipLF() }
                return (field, true)
            }
            i += 1
        }
        return (text(start..<i), true)
    }

    private mutating func quotedField() -> (String, Bool) {
        i += 1 // the opening quote
        var field: [UInt8] = []
        while i < bytes.count {
            let c = bytes[i]
            i += 1
            guard c == Self.quote else { field.append(c); continue }
            guard i < bytes.count else { break }
            let after = bytes[i]
            i += 1
            switch after {
            case Self.comma: return (String(decoding: field, as: UTF8.self), false)
            case Self.cr: skipLF(); return (String(decoding: field, as: UTF8.self), true)
            case Self.lf: return (String(decoding: field, as: UTF8.self), true)
            case Self.quote: field.append(Self.quote)
            default:
                // CSV.swift's leniency: the quote stays, the character after it (a whole
                // Unicode scalar) is dropped.
                field.append(Self.quote)
                while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
            }
        }
        return (String(decoding: field, as: UTF8.self), true)
    }

    private func text(_ range: Range<Int>) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }
}
