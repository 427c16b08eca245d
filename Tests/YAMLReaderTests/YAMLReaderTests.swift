import Testing
import YAMLReader

@Suite struct YAMLReaderTests {
    func compose(_ text: String) throws -> YAMLNode {
        guard let node = try YAML.compose(text) else { throw YAMLError(problem: "no document") }
        return node
    }

    func error(_ text: String) -> YAMLError? {
        do throws(YAMLError) {
            _ = try YAML.compose(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func blockAndFlowCollectionsWithMarks() throws {
        let root = try compose("""
            # comment
            a: 1
            list:
              - x
              - 'y'
            flow: {k: [1, "two"]}
            """)
        guard case .mapping(let m) = root else { Issue.record("\(root)"); return }
        #expect(m.style == .block && m.start == YAMLMark(line: 2, column: 1))
        #expect(m.entries.map { $0.key.string } == ["a", "list", "flow"])
        #expect(m.entries[0].key.mark == YAMLMark(line: 2, column: 1) && m.entries[0].value.mark == YAMLMark(line: 2, column: 4))
        guard case .sequence(let list)? = m["list"] else { Issue.record("list"); return }
        #expect(list.style == .block && list.items.map(\.string) == ["x", "y"])
        #expect(list.items[1].scalar?.style == .singleQuoted && list.items[1].mark == YAMLMark(line: 5, column: 5))
        guard case .mapping(let flow)? = m["flow"], case .sequence(let inner)? = flow["k"] else { Issue.record("flow"); return }
        #expect(flow.style == .flow && inner.style == .flow && flow.start == YAMLMark(line: 6, column: 7))
        #expect(inner.items.map(\.int) == [1, nil] && inner.items[1].string == "two")
    }

    @Test func scalarEndsExcludeCommentsAndIncludeQuotes() throws {
        let root = try compose("a: plain value   # note\nb: \"q # not a comment\"  # note\nc: 'it''s'\n")
        guard case .mapping(let m) = root else { return }
        let a = try #require(m["a"]?.scalar), b = try #require(m["b"]?.scalar), c = try #require(m["c"]?.scalar)
        #expect(a.string == "plain value" && a.start.column == 4 && a.end == YAMLMark(line: 1, column: 15))
        #expect(b.string == "q # not a comment" && b.start.column == 4 && b.end == YAMLMark(line: 2, column: 23))
        #expect(c.string == "it's" && c.end == YAMLMark(line: 3, column: 11))
    }

    @Test func columnsCountUnicodeScalars() throws {
        let root = try compose("né: é\nx: 1\n")
        guard case .mapping(let m) = root else { return }
        #expect(m.entries[0].value.mark == YAMLMark(line: 1, column: 5))
        #expect(m.entries[0].value.scalar?.end == YAMLMark(line: 1, column: 6))
    }

    @Test func plainScalarsResolveByTheCoreSchemaAndQuotedOnesAreStrings() throws {
        let root = try compose("""
            - true
            - False
            - yes
            - OFF
            - "true"
            - 'no'
            - 42
            - -17
            - +5
            - 0x1F
            - 0o17
            - 010
            - 1.5
            - -2e3
            - .5
            - 5.
            - .inf
            - -.Inf
            - .nan
            - "3"
            - null
            - ~
            -
            - 'null'
            - 1_000
            - 1:30
            - 0x
            - 1e
            - 9223372036854775808
            - -9223372036854775808
            - !!str 3
            - !!int "7"
            - !!bool "yes"
            - !!null ""
            - !!float 2
            - |
              true
            """)
        guard case .sequence(let s) = root else { Issue.record("\(root)"); return }
        let v = s.items
        #expect(v[0...3].map(\.bool) == [true, false, true, false])
        #expect(v[4].bool == nil && v[4].string == "true" && v[5].bool == nil)
        #expect(v[6...11].map(\.int) == [42, -17, 5, 31, 15, 10])
        #expect(v[12...15].map(\.double) == [1.5, -2000, 0.5, 5])
        #expect(v[12].int == nil && v[6].double == 42 && v[9].double == 31)
        #expect(v[16].double == .infinity && v[17].double == -.infinity && v[18].double?.isNaN == true)
        #expect(v[19].int == nil && v[19].double == nil && v[19].string == "3")
        #expect(v[20].isNull && v[21].isNull && v[22].isNull && !v[23].isNull && !v[0].isNull)
        #expect(v[24...27].map(\.int) == [nil, nil, nil, nil] && v[24...27].map(\.double) == [nil, nil, nil, nil])
        #expect(v[28].int == nil && v[28].double == 9223372036854775808 && v[29].int == Int.min)
        #expect(v[30].int == nil && v[30].string == "3" && v[30].tag == .str)
        #expect(v[31].int == 7 && v[32].bool == true && v[33].isNull && v[34].double == 2)
        #expect(v[35].bool == nil && v[35].string == "true" && v[35].scalar?.style == .literal)
    }

    @Test func emptyAndCommentOnlyTextsHaveNoDocument() throws {
        #expect(try YAML.compose("") == nil)
        #expect(try YAML.compose("# nothing\n\n   # here\n") == nil)
        #expect(try YAML.compose("---\n")?.isNull == true)
    }

    @Test func libyamlErrorsCarryLineColumnAndContext() throws {
        let e = try #require(error("a: 1\nb: [unclosed\nc: 2\n"))
        #expect(e.mark != nil && e.context != nil, "\(e)")
        #expect(e.description.hasPrefix("line "), "\(e)")
        let indent = try #require(error("a:\n  b: 1\n c: 2\n"))
        #expect(indent.mark?.line == 3, "\(indent)")
        #expect(indent.description == "line 3, column 2: did not find expected key (while parsing a block mapping at line 1, column 1)",
                "\(indent)")
        // The reader's errors (control characters, bad UTF-8) are placed by their byte offset.
        let control = try #require(error("a: 1\nbé: x\u{01}\n"))
        #expect(control.mark == YAMLMark(line: 2, column: 6) && control.problem.contains("control characters"), "\(control)")
        let bad: [UInt8] = Array("a: 1\nb: ".utf8) + [0xFF, 0x0A]
        let invalid = bad.withUnsafeBufferPointer { buffer -> YAMLError? in
            do throws(YAMLError) { _ = try YAML.compose(utf8: buffer); return nil } catch { return error }
        }
        #expect(invalid?.mark == YAMLMark(line: 2, column: 4), "\(String(describing: invalid))")
    }

    @Test func aliasesTagsRepeatedKeysAndSecondDocumentsAreRefusedWithTheirPlace() throws {
        let alias = try #require(error("base: &b {x: 1}\nother: *b\n"))
        #expect(alias.mark == YAMLMark(line: 2, column: 8) && alias.problem.contains("alias '*b'"), "\(alias)")
        let merge = try #require(error("base: &b {x: 1}\nother:\n  <<: *b\n"))
        #expect(merge.problem.contains("alias"), "\(merge)")
        // An anchor alone is harmless.
        guard case .mapping(let anchored) = try compose("a: &x 1\n") else { Issue.record("anchor"); return }
        #expect(anchored["a"]?.anchor == "x" && anchored["a"]?.int == 1)
        let repeated = try #require(error("trial: true\nbus: session\ntrial: false\n"))
        #expect(repeated.mark == YAMLMark(line: 3, column: 1), "\(repeated)")
        #expect(repeated.problem == "key 'trial' is repeated (first at line 1, column 1); YAML keys are unique", "\(repeated)")
        // Keys written differently but equal as text are the same key.
        #expect(error("a: 1\n'a': 2\n") != nil)
        #expect(try compose("a: {x: 1}\nb: {x: 2}\n").scalar == nil) // the same key in two mappings is fine
        let tag = try #require(error("a: !secret 3\n"))
        #expect(tag.mark == YAMLMark(line: 1, column: 4) && tag.problem.hasPrefix("unsupported tag '!secret'"), "\(tag)")
        #expect(error("a: !!binary aGk=\n")?.problem.hasPrefix("unsupported tag '!!binary'") == true)
        #expect(error("a: !!int abc\n")?.problem == "'abc' is not a valid !!int")
        #expect(error("a: !!map 3\n") != nil && error("a: !!seq {x: 1}\n") != nil)
        let second = try #require(error("a: 1\n---\nb: 2\n"))
        #expect(second.mark?.line == 2, "\(second)")
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let e = try #require(error(deep))
        #expect(e.problem == "collections nested deeper than 64 levels" && e.mark == YAMLMark(line: 1, column: 65), "\(e)")
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try YAML.compose(ok) != nil)
        #expect(throws: YAMLError.self) { try YAML.compose(ok, maximumDepth: 63) }
    }

    @Test func crlfAndByteOrderMarkRead() throws {
        let root = try compose("\u{FEFF}a: 1\r\nb: 'two'\r\n")
        guard case .mapping(let m) = root else { return }
        #expect(m["a"]?.int == 1 && m["b"]?.string == "two" && m["b"]?.mark == YAMLMark(line: 2, column: 4))
    }
}
