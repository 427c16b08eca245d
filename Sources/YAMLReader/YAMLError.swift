import CLibYAML

/// Why a text is not a document the reader takes: where (line and column from 1, as an editor
/// shows them), what, and while reading what (libyaml's context, e.g. "while parsing a block
/// mapping" and where that mapping starts).
public struct YAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var mark: YAMLMark?
    public var problem: String
    public var context: String?
    public var contextMark: YAMLMark?

    public init(mark: YAMLMark? = nil, problem: String, context: String? = nil, contextMark: YAMLMark? = nil) {
        self.mark = mark
        self.problem = problem
        self.context = context
        self.contextMark = contextMark
    }

    /// "line 3, column 5: did not find expected key (while parsing a block mapping at line 1, column 1)"
    public var description: String {
        var text = mark.map { "\($0): \(problem)" } ?? problem
        if let context {
            text += " (" + context + (contextMark.map { " at \($0)" } ?? "") + ")"
        }
        return text
    }

    /// libyaml's error after a failed `yaml_parser_parse`.
    init(parser: yaml_parser_t, input: UnsafeBufferPointer<UInt8>) {
        let problem = parser.problem.map { String(cString: $0) }
        switch parser.error {
        case YAML_MEMORY_ERROR:
            self.init(problem: "out of memory")
        case YAML_READER_ERROR:
            // The reader (bytes -> characters) gives a byte offset and the offending value.
            let value = parser.problem_value >= 0 ? " (0x" + String(parser.problem_value, radix: 16) + ")" : ""
            self.init(mark: Self.mark(atByte: parser.problem_offset, in: input), problem: (problem ?? "unreadable input") + value)
        default: // scanner and parser errors carry marks
            self.init(mark: YAMLMark(parser.problem_mark), problem: problem ?? "not valid YAML",
                      context: parser.context.map { String(cString: $0) },
                      contextMark: parser.context == nil ? nil : YAMLMark(parser.context_mark))
        }
    }

    /// Line and column (in Unicode scalars) of a byte offset into UTF-8 text.
    static func mark(atByte offset: Int, in input: UnsafeBufferPointer<UInt8>) -> YAMLMark {
        var line = 1, column = 1
        for byte in input.prefix(max(0, offset)) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 { // not a UTF-8 continuation byte
                column += 1
            }
        }
        return YAMLMark(line: line, column: column)
    }
}
