import CLibYAML

// Why a reader of our own on libyaml rather than Yams (the brief asks for the well-kept library
// unless there is a reason): Yams imports full Foundation (its resolver is built on
// NSRegularExpression, its scalars construct Date, Data, NSNull...), so a daemon whose config is
// read with it links Foundation, FoundationInternationalization and ICU. gaend's footprint goal
// is a daemon that imports FoundationEssentials only and idles in <= 20 MB (scripts/measure-idle.sh:
// those libraries' pages were ~1.5 MiB of the resident figure after the link reordering, ~2.5
// MiB before). libyaml is the C library Yams itself wraps, so the scanning and parsing are the
// same code; what is ours is small: events -> a node tree with marks, scalar type resolution
// (YAML 1.2 core, plain vs quoted) and the refusals a config wants (aliases, unknown tags,
// repeated keys, a second document, deep nesting). It uses the Swift standard library only.

/// Reads one YAML document into a node tree (`compose`), every node with its position.
///
/// What is refused, each with the line and column: anything libyaml rejects (its own message),
/// an alias (`*name`: write the value out; anchors alone are kept but unused), a tag other than
/// the core ones (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq`) or one its
/// content does not fit (`!!int abc`), a key repeated in one mapping, a second document in the
/// stream, and collections nested deeper than `maximumDepth`. The caller bounds the text's size
/// (gaend's config: 1 MiB). Fuzzed by FuzzYAML (`tools/fuzz/run.sh FuzzYAML SECONDS`).
public enum YAML {
    public static let defaultMaximumDepth = 64

    /// The document's root node; nil when the text holds no document (empty, or comments only).
    public static func compose(_ text: String, maximumDepth: Int = defaultMaximumDepth) throws(YAMLError) -> YAMLNode? {
        var text = text
        let result = text.withUTF8 { compose(bytes: $0, maximumDepth: maximumDepth) }
        return try result.get()
    }

    /// The same for UTF-8 bytes (libyaml checks the encoding; a byte-order mark is allowed).
    public static func compose(utf8 bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int = defaultMaximumDepth) throws(YAMLError) -> YAMLNode? {
        try compose(bytes: bytes, maximumDepth: maximumDepth).get()
    }

    /// A collection being read: its entries so far.
    private struct Open {
        var isMapping: Bool
        var style: YAMLCollectionStyle
        var tag: YAMLTag?
        var anchor: String?
        var start: YAMLMark
        var items: [YAMLNode] = []
        var entries: [YAMLMapping.Entry] = []
        var pendingKey: YAMLNode?
        /// Scalar keys seen so far and where.
        var keys: [String: YAMLMark] = [:]

        var node: YAMLNode {
            isMapping ? .mapping(YAMLMapping(entries: entries, style: style, tag: tag, anchor: anchor, start: start))
                : .sequence(YAMLSequence(items: items, style: style, tag: tag, anchor: anchor, start: start))
        }
    }

    private static func compose(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) -> Result<YAMLNode?, YAMLError> {
        // libyaml wants an input pointer even for no bytes; no bytes is no document.
        // A UTF-8 byte-order mark is skipped here: told the encoding, libyaml would read it as
        // a character of the first line and indent that line by one.
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let bytes = bytes.starts(with: bom) ? UnsafeBufferPointer(rebasing: bytes[3...]) : bytes
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .success(nil) }
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else { return .failure(YAMLError(problem: "out of memory")) }
        defer { yaml_parser_delete(parser) }
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, base, bytes.count)

        var stack: [Open] = []
        var root: YAMLNode?
        var documents = 0
        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(parser, &event) == 1 else { return .failure(YAMLError(parser: parser.pointee, input: bytes)) }
            defer { yaml_event_delete(&event) }
            let start = YAMLMark(event.start_mark), end = YAMLMark(event.end_mark)
            let finished: YAMLNode
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return .success(root)
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                guard documents == 1 else {
                    return .failure(YAMLError(mark: start, problem: "a second document starts here; only one is read"))
                }
                continue
            case YAML_ALIAS_EVENT:
                let name = string(event.data.alias.anchor) ?? ""
                return .failure(YAMLError(mark: start, problem: "alias '*\(name)' is not supported; write the value out in full"))
            case YAML_SCALAR_EVENT:
                let d = event.data.scalar
                let text = d.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: d.length), as: UTF8.self) } ?? ""
                let style: YAMLScalar.Style
                switch d.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: style = .literal
                case YAML_FOLDED_SCALAR_STYLE: style = .folded
                default: style = .plain
                }
                let tag: YAMLTag?
                switch Self.tag(d.tag, onScalar: true, at: start) {
                case .success(let t): tag = t
                case .failure(let e): return .failure(e)
                }
                let scalar = YAMLScalar(text, style: style, tag: tag, anchor: string(d.anchor), start: start, end: end)
                if let tag, let problem = mismatch(scalar, tag) { return .failure(YAMLError(mark: start, problem: problem)) }
                finished = .scalar(scalar)
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                guard stack.count < maximumDepth else {
                    return .failure(YAMLError(mark: start, problem: "collections nested deeper than \(maximumDepth) levels"))
                }
                let tagPointer = isMapping ? event.data.mapping_start.tag : event.data.sequence_start.tag
                let anchorPointer = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
                let flow = isMapping ? event.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                    : event.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                let tag: YAMLTag?
                switch Self.tag(tagPointer, onScalar: false, at: start) {
                case .success(let t): tag = t
                case .failure(let e): return .failure(e)
                }
                if let tag, tag != (isMapping ? .map : .seq) {
                    return .failure(YAMLError(mark: start, problem: "a \(isMapping ? "mapping" : "sequence") cannot be tagged !!\(tag.rawValue)"))
                }
                stack.append(Open(isMapping: isMapping, style: flow ? .flow : .block, tag: tag, anchor: string(anchorPointer), start: start))
                continue
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                // libyaml pairs start and end events; a mismatch would be its bug.
                guard let open = stack.popLast() else { return .failure(YAMLError(mark: start, problem: "unbalanced collection end")) }
                finished = open.node
            default: // stream start, document end
                continue
            }

            // The finished node goes into the collection being read (or is the root).
            guard !stack.isEmpty else {
                root = finished
                continue
            }
            let top = stack.count - 1
            if !stack[top].isMapping {
                stack[top].items.append(finished)
            } else if let key = stack[top].pendingKey {
                stack[top].entries.append(YAMLMapping.Entry(key: key, value: finished))
                stack[top].pendingKey = nil
            } else {
                if case .scalar(let k) = finished {
                    if let first = stack[top].keys[k.string] {
                        return .failure(YAMLError(mark: k.start, problem: "key '\(k.string)' is repeated (first at \(first)); YAML keys are unique"))
                    }
                    stack[top].keys[k.string] = k.start
                }
                stack[top].pendingKey = finished
            }
        }
    }

    /// Why `scalar`'s content does not fit its explicit tag, or nil if it does.
    private static func mismatch(_ scalar: YAMLScalar, _ tag: YAMLTag) -> String? {
        let fits: Bool
        switch tag {
        case .str: fits = true
        case .int: fits = scalar.int != nil
        case .float: fits = scalar.double != nil
        case .bool: fits = scalar.bool != nil
        case .null: fits = scalar.isNull
        case .map, .seq: return "a scalar cannot be tagged !!\(tag.rawValue)"
        }
        return fits ? nil : "'\(scalar.string)' is not a valid !!\(tag.rawValue)"
    }

    private static func tag(_ pointer: UnsafeMutablePointer<yaml_char_t>?, onScalar: Bool, at mark: YAMLMark) -> Result<YAMLTag?, YAMLError> {
        guard let name = string(pointer) else { return .success(nil) }
        if let tag = YAMLTag(libyaml: name, onScalar: onScalar) { return .success(tag) }
        if name == "!" { return .success(nil) }
        let shown = name.hasPrefix("tag:yaml.org,2002:") ? "!!" + name.dropFirst("tag:yaml.org,2002:".count) : name
        return .failure(YAMLError(mark: mark, problem: "unsupported tag '\(shown)' (known: !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"))
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}

extension YAMLMark {
    /// libyaml counts from 0.
    init(_ mark: yaml_mark_t) {
        self.init(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }
}
