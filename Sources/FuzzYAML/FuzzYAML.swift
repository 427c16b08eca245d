import FuzzSupport
import YAMLReader

// Fuzz target for the YAML reader (libyaml events -> node tree, marks, tags, repeated keys,
// nesting bound, scalar resolution) on arbitrary bytes: gaend's config is the input.
//
// Built with `-sanitize=fuzzer -DFUZZING` (tools/fuzz/run.sh FuzzYAML SECONDS) libFuzzer calls
// `LLVMFuzzerTestOneInput`; in a normal build the target replays the files given as arguments
// (scripts/test.sh replays tools/fuzz/corpus/FuzzYAML).

/// Any input is either refused with a YAMLError or read into a tree whose invariants hold.
func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
    let root: YAMLNode?
    do throws(YAMLError) {
        root = try YAML.compose(utf8: bytes, maximumDepth: 16)
    } catch {
        precondition(error.mark.map { $0.line >= 1 && $0.column >= 1 } ?? true, "error mark out of range: \(error)")
        return
    }
    guard let root else { return }
    // Walked with an explicit stack: the depth bound is what makes recursion safe elsewhere.
    var pending: [(YAMLNode, Int)] = [(root, 0)]
    // An upper bound of libyaml's line count: it breaks lines at \n, \r, NEL, LS and PS.
    var lines = 1
    for b in bytes where b == UInt8(ascii: "\n") || b == UInt8(ascii: "\r") || b == 0x85 || b == 0xA8 || b == 0xA9 { lines += 1 }
    while let (node, depth) = pending.popLast() {
        precondition(depth <= 17, "nesting beyond the bound")
        let mark = node.mark
        precondition(mark.line >= 1 && mark.column >= 1 && mark.line <= lines + 1, "mark out of range: \(mark)")
        switch node {
        case .scalar(let s):
            precondition(s.end.line > s.start.line || (s.end.line == s.start.line && s.end.column >= s.start.column), "scalar ends before it starts")
            if let i = s.int { precondition(s.double == Double(i), "int and double disagree on '\(s.string)'") }
            if s.bool != nil { precondition(s.int == nil && !s.isNull, "'\(s.string)' is two types") }
            if s.style != .plain && s.tag == nil { precondition(s.bool == nil && s.int == nil && s.double == nil && !s.isNull, "quoted '\(s.string)' resolved") }
        case .mapping(let m):
            var keys = Set<String>()
            for e in m.entries {
                if let k = e.key.string { precondition(keys.insert(k).inserted, "repeated key '\(k)' was taken") }
                pending.append((e.key, depth + 1))
                pending.append((e.value, depth + 1))
            }
        case .sequence(let s):
            for item in s.items { pending.append((item, depth + 1)) }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzYAML(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    fuzzOne(UnsafeBufferPointer(start: start, count: start == nil ? 0 : count))
    return 0
}

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer brings its own main(); only the ordinary build
// gets an entry point, the corpus replayer.
#if !FUZZING
@main struct FuzzYAMLMain { static func main() { FuzzEntry.main(name: "FuzzYAML", fuzzYAML) } }
#endif
