/// Where a node starts or ends in the text, as libyaml counts: lines and columns from 1,
/// columns in Unicode scalars (not bytes, not grapheme clusters).
public struct YAMLMark: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column)" }
}

/// The tags a document may carry explicitly (`!!int 3`). Other tags are refused when the
/// document is read: a config value tagged with something nothing here understands is a mistake
/// to report, not a string to take silently.
public enum YAMLTag: String, Sendable, Hashable {
    case str, int, float, bool, null, map, seq

    /// libyaml's resolved tag (`tag:yaml.org,2002:int` for `!!int`); `!` (non-specific: "not
    /// resolved from its content") reads as `!!str` on a scalar, as no tag on a collection.
    init?(libyaml tag: String, onScalar: Bool) {
        if tag == "!" {
            guard onScalar else { return nil }
            self = .str
            return
        }
        let prefix = "tag:yaml.org,2002:"
        guard tag.hasPrefix(prefix), let known = YAMLTag(rawValue: String(tag.dropFirst(prefix.count))) else { return nil }
        self = known
    }
}

/// A scalar as written: its text (escapes and folding applied, as YAML reads it) and how it was
/// written, which decides what it means: `true`, `3` and `null` are a boolean, a number and
/// nothing only when plain; quoted they are strings (see YAMLScalar+Resolution.swift).
public struct YAMLScalar: Sendable, Hashable {
    public enum Style: Sendable, Hashable { case plain, singleQuoted, doubleQuoted, literal, folded }

    public var string: String
    public var style: Style
    /// An explicit tag (`!!str 3`), nil when the scalar has none.
    public var tag: YAMLTag?
    public var anchor: String?
    /// The first character of the scalar's properties (tag or anchor) or of the scalar itself
    /// (the opening quote of a quoted one).
    public var start: YAMLMark
    /// Just past its last character (the closing quote of a quoted one; a plain scalar ends
    /// before the spaces and comment that follow it).
    public var end: YAMLMark

    public init(_ string: String, style: Style = .plain, tag: YAMLTag? = nil, anchor: String? = nil,
                start: YAMLMark = YAMLMark(line: 1, column: 1), end: YAMLMark = YAMLMark(line: 1, column: 1)) {
        self.string = string
        self.style = style
        self.tag = tag
        self.anchor = anchor
        self.start = start
        self.end = end
    }
}

/// Block (one entry per line, by indentation) or flow (`{a: 1}`, `[1, 2]`).
public enum YAMLCollectionStyle: Sendable, Hashable { case block, flow }

/// A mapping's entries in the order written. Keys are unique: a repeated key is refused when
/// the document is read (YAML forbids it; a config would otherwise silently keep one of two values).
public struct YAMLMapping: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var key: YAMLNode
        public var value: YAMLNode
    }

    public var entries: [Entry]
    public var style: YAMLCollectionStyle
    public var tag: YAMLTag?
    public var anchor: String?
    public var start: YAMLMark

    /// The value under the scalar key `key`, if any.
    public subscript(key: String) -> YAMLNode? {
        entries.first { $0.key.scalar?.string == key }?.value
    }
}

public struct YAMLSequence: Sendable, Hashable {
    public var items: [YAMLNode]
    public var style: YAMLCollectionStyle
    public var tag: YAMLTag?
    public var anchor: String?
    public var start: YAMLMark
}

/// A node of a YAML document: a scalar, a mapping or a sequence (aliases are refused when the
/// document is read, so every node is written out where it stands).
public indirect enum YAMLNode: Sendable, Hashable {
    case scalar(YAMLScalar)
    case mapping(YAMLMapping)
    case sequence(YAMLSequence)

    /// Where the node starts (its tag or anchor if it has one).
    public var mark: YAMLMark {
        switch self {
        case .scalar(let s): return s.start
        case .mapping(let m): return m.start
        case .sequence(let s): return s.start
        }
    }

    public var tag: YAMLTag? {
        switch self {
        case .scalar(let s): return s.tag
        case .mapping(let m): return m.tag
        case .sequence(let s): return s.tag
        }
    }

    public var anchor: String? {
        switch self {
        case .scalar(let s): return s.anchor
        case .mapping(let m): return m.anchor
        case .sequence(let s): return s.anchor
        }
    }

    public var scalar: YAMLScalar? {
        if case .scalar(let s) = self { return s }
        return nil
    }

    /// A scalar's text, whatever its style or type (a setting that wants a string takes
    /// `310` and `"310"` alike); nil for a collection.
    public var string: String? { scalar?.string }
    public var bool: Bool? { scalar?.bool }
    public var int: Int? { scalar?.int }
    public var double: Double? { scalar?.double }
    public var isNull: Bool { scalar?.isNull ?? false }
}
