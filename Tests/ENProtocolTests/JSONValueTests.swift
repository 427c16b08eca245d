import ENProtocol
import Foundation
import Testing

/// The one JSON value type: what the readers parse and what gaenctl's output writes.
@Suite struct JSONValueTests {
    @Test func quotesStringsAsJSONSerializationReadsThem() throws {
        let samples = ["", "plain", "quote \" and \\ backslash", "lines\n\r\t", "\u{0}\u{1}\u{1f}\u{7f}", "é 日本 🙂", "/slash"]
        for s in samples {
            let quoted = JSONValue.quoted(s)
            let back = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
            #expect(back == [s], "\(quoted)")
        }
        #expect(JSONValue.quoted("a\u{1}\n\"") == #""a\u0001\n\"""#)
    }

    @Test func writesSortedCompactJSON() throws {
        let v = JSONValue.object(["b": .array([.int(3), .double(2), .double(0.5), .double(.nan), .bool(true), .null]), "a": .string("x")])
        #expect(v.serialized() == #"{"a":"x","b":[3,2.0,0.5,null,true,null]}"#)
    }

    @Test func parsesNumbersAsDoublesAndReadsThemBack() throws {
        let v = try JSONValue.parse(Data(#"{"n": 3, "f": 0.25, "t": true, "s": "x", "l": [null]}"#.utf8))
        guard case let .object(o) = v else { Issue.record("not an object"); return }
        #expect(o["n"] == .double(3) && o["n"]?.integer == 3 && o["f"]?.number == 0.25)
        #expect(o["t"]?.number == 1 && o["s"]?.number == nil && o["l"] == .array([.null]))
        #expect(JSONValue.int(7).integer == 7 && JSONValue.int(7).number == 7)
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(Data("{".utf8)) }
    }
}
