import ENProtocol
import Foundation
import Testing
@testable import NodeConfig

/// `gaenctl calibrate --config`: the line-level edit of gaend's YAML config.
@Suite struct CalibrationConfigEditorTests {
    static let update = CalibrationUpdate(rssiCorrection: -5, calibrationConfidence: .high, txPower: -18)

    /// A temporary directory removed at the end of the test.
    final class TempDir {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-cal-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }
        func file(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    func settings(_ text: String) throws -> GaendSettings { try ConfigLoader.parse(text) }

    @Test func valuesAreReplacedInPlaceKeepingCommentsAndEveryOtherLine() throws {
        let text = """
            # site board
            controller: tcp:127.0.0.1:9   # the virtual one
            calibration:
              # measured 2026-11-01
              tx_power: -30       # AEM
              rssi_correction: 3  # old
              calibration_confidence: "lowest"
              metadata_version: "1.1"
            research:
              site: bus-7

            """
        let out = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update)
        #expect(out == """
            # site board
            controller: tcp:127.0.0.1:9   # the virtual one
            calibration:
              # measured 2026-11-01
              tx_power: -18       # AEM
              rssi_correction: -5  # old
              calibration_confidence: high
              metadata_version: "1.1"
            research:
              site: bus-7

            """)
        let s = try settings(out)
        #expect(s.calibration.txPower == -18 && s.calibration.rssiCorrection == -5 && s.calibration.calibrationConfidence == .high)
        #expect(s.research.site == "bus-7" && s.controller == .tcp(host: "127.0.0.1", port: 9))
    }

    @Test func missingKeysAreAddedInsideTheBlockWithItsIndentation() throws {
        let text = "calibration:\n    metadata_version: \"1.0\"  # no confidence on air\n# the end\nbus: session\n"
        let out = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: CalibrationUpdate(rssiCorrection: 4, calibrationConfidence: .medium))
        #expect(out == "calibration:\n    metadata_version: \"1.0\"  # no confidence on air\n    rssi_correction: 4\n    calibration_confidence: medium\n# the end\nbus: session\n")
        let s = try settings(out)
        #expect(s.calibration.rssiCorrection == 4 && s.calibration.txPower == -30 && s.calibration.metadataMinorVersion == 0)
        #expect(s.bus == "session")
    }

    @Test func aMissingBlockIsAppendedAndAnEmptyFileGetsJustTheBlock() throws {
        let out = try CalibrationConfigEditor.edit("# only a comment\nbus: session", path: "c.yaml", update: Self.update)
        #expect(out == "# only a comment\nbus: session\ncalibration:\n  rssi_correction: -5\n  calibration_confidence: high\n  tx_power: -18\n")
        #expect(try settings(out).bus == "session")
        for empty in [nil, "", "# nothing set yet\n"] as [String?] {
            let made = try CalibrationConfigEditor.edit(empty, path: "c.yaml", update: Self.update)
            #expect(made == (empty ?? "") + "calibration:\n  rssi_correction: -5\n  calibration_confidence: high\n  tx_power: -18\n")
            #expect(try settings(made).calibration.rssiCorrection == -5)
        }
    }

    @Test func theShippedExampleIsEditedInItsThreeLines() throws {
        let example = try String(contentsOf: ConfigTests.example, encoding: .utf8)
        let out = try CalibrationConfigEditor.edit(example, path: "example", update: Self.update)
        let before = example.split(separator: "\n", omittingEmptySubsequences: false)
        let after = out.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(before.count == after.count)
        let changed = zip(before, after).filter { $0 != $1 }.map { String($0.1) }
        #expect(changed == ["  tx_power: -18", "  rssi_correction: -5", "  calibration_confidence: high"])
    }

    @Test func crlfFilesKeepTheirLineEnds() throws {
        let text = "bus: session\r\ncalibration:\r\n  rssi_correction: 1\r\n"
        let out = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update)
        #expect(out == "bus: session\r\ncalibration:\r\n  rssi_correction: -5\r\n  calibration_confidence: high\r\n  tx_power: -18\r\n")
    }

    @Test func aDocumentMarkerAndAByteOrderMarkStay() throws {
        let text = "\u{FEFF}---\nbus: session\ncalibration:\n  rssi_correction: 1 # x\n...\n"
        let out = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update)
        #expect(out == "\u{FEFF}---\nbus: session\ncalibration:\n  rssi_correction: -5 # x\n  calibration_confidence: high\n  tx_power: -18\n...\n")
        // An empty document gets the block after its marker.
        #expect(try CalibrationConfigEditor.edit("---\n", path: "c.yaml", update: Self.update)
                == "---\ncalibration:\n  rssi_correction: -5\n  calibration_confidence: high\n  tx_power: -18\n")
    }

    @Test("layouts the line edit cannot do safely are refused", arguments: [
        "calibration: {tx_power: -20, rssi_correction: 0}\n",
        "{bus: session, calibration: {rssi_correction: 0}}\n",
        "calibration:\n  rssi_correction: !!int 3\n",
        "calibration:\n  calibration_confidence: >-\n    low\n",
        "calibration:\n  rssi_correction:\n    3\n",
        "calibration: &c\n  rssi_correction: 3\n",
        "calibration:\n  calibration_confidence: &c low\n",
        "calibration:\n  calibration_confidence: \"hi\\\n    gh\"\n",
        "--- !!map\ncalibration:\n  rssi_correction: 3\n",
        "bus: x\u{2028}\ncalibration:\n  rssi_correction: 3\n",
        "bus: session\rcalibration:\r  rssi_correction: 3\r",
    ])
    func unusualLayoutsAreRefused(text: String) throws {
        #expect(throws: CalibrationConfigEditError.self) { try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update) }
        // ... but each of them does load in gaend (it is the layout, not the content, that is refused).
        _ = try ConfigLoader.parse(text)
    }

    @Test("a config that does not load now is not touched", arguments: [
        "calibration:\n  rssi_corection: 3\n",
        "calibration:\n",
        "calibration: [1, 2]\n",
        "a: [unclosed\n",
        "- a list\n",
    ])
    func brokenConfigsAreRefused(text: String) throws {
        do {
            _ = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update)
            Issue.record("edited a config that does not load")
        } catch let e as CalibrationConfigEditError {
            guard case .configDoesNotLoad = e else { Issue.record("\(e)"); return }
        }
    }

    /// Configs stitched from fragments (odd layouts, comments, quoting, block scalars, CRLF,
    /// lone CR, LS, tabs, non-ASCII): the edit never traps; when it gives a text, that text
    /// loads as the old settings plus the calibration and keeps every line that holds no
    /// calibration value, in order.
    @Test func generatedConfigsAreEditedOrRefusedNeverDamaged() throws {
        struct SplitMix64: RandomNumberGenerator { // the same configs every run
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            mutating func next() -> UInt64 {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            }
        }
        var rng = SplitMix64()
        func next(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        func pick(_ a: [String]) -> String { a[next(a.count)] }
        let others = ["bus: session", "trial: yes", "research:\n  site: bus-7\n  node: 'é'", "store: {retention_days: 21}", "# a comment",
                      "", "  # indented comment", "time_scale: 2 # fast", "controller: \"hci0\""]
        let odd = ["\tbus: x", "---", "...", "calibration: {rssi_correction: 1}", "x\u{2028}", "bus: a\rtrial: no", "calibration: &c",
                   "  rssi_correction: 2", "trial: yes"]
        let values: [String: [String]] = [
            "rssi_correction": ["3", "-7   ", "0 # old", "|\n      4", "!!int -2", "\n      6", "1\r"],
            "tx_power": ["-20 # measured", "!!int -22", "-30", "&t -25"],
            "calibration_confidence": ["'low'", "high", "\"hi\\\n      gh\"", "lowest # c", "\"medium\""],
            "metadata_version": ["\"1.1\"", "'1.0'", "1.1"],
        ]
        var edited = 0, refused = 0
        for _ in 0..<3000 {
            var lines = (0..<next(3)).map { _ in pick(others) }
            if next(5) > 0 {
                let indent = String(repeating: " ", count: 2 * (1 + next(2)))
                lines.append("calibration:" + (next(4) == 0 ? "  # block" : ""))
                for key in values.keys.sorted().filter({ _ in next(2) == 0 }).shuffled(using: &rng) {
                    if next(4) == 0 { lines.append(indent + "# about " + key) }
                    lines.append(indent + key + ": " + pick(values[key]!))
                }
            }
            lines += (0..<next(3)).map { _ in pick(others) }
            if next(4) == 0 { lines.insert(pick(odd), at: next(lines.count + 1)) }
            let text = lines.joined(separator: next(4) == 0 ? "\r\n" : "\n") + (next(3) > 0 ? "\n" : "")
            let out: String
            do { out = try CalibrationConfigEditor.edit(text, path: "c.yaml", update: Self.update) } catch is CalibrationConfigEditError {
                refused += 1
                continue
            }
            edited += 1
            let before = try ConfigLoader.parse(text)
            #expect(try ConfigLoader.parse(out) == CalibrationConfigEditor.expected(before, Self.update), "\(text.debugDescription)")
            // Every line without a calibration value is still there, in order.
            // (Compared without a final "\r": the last line gains its line end when a block is appended.)
            func rows(_ t: String) -> [String] {
                t.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String($0.last == "\r" ? $0.dropLast() : $0[...]) }
            }
            var rest = rows(out)[...]
            // A replaced value keeps its comment.
            for line in rows(text) where line.contains(" # ") {
                let comment = line[line.range(of: " # ")!.lowerBound...]
                #expect(rows(out).contains { $0.hasSuffix(comment) }, "comment \(comment.debugDescription) lost: \(text.debugDescription) -> \(out.debugDescription)")
            }
            for line in rows(text) where !["rssi_correction", "tx_power", "calibration_confidence"].contains(where: { line.contains($0) }) {
                guard let at = rest.firstIndex(of: line) else {
                    Issue.record("line \(String(line).debugDescription) lost from \(text.debugDescription) -> \(out.debugDescription)")
                    break
                }
                rest = rest[(at + 1)...]
            }
        }
        print("generated configs: \(edited) edited, \(refused) refused")
        #expect(edited > 300 && refused > 300, "edited \(edited), refused \(refused)")
    }

    @Test func aCorrectionGaendCannotTakeIsRefusedBeforeWriting() throws {
        #expect(throws: CalibrationConfigEditError.self) {
            try CalibrationConfigEditor.edit("bus: session\n", path: "c.yaml", update: CalibrationUpdate(rssiCorrection: 140, calibrationConfidence: .high))
        }
    }

    @Test func applyReplacesTheFileAtomicallyKeepingItsModeAndLink() throws {
        let dir = try TempDir()
        let real = dir.file("gaend.conf"), link = dir.file("link.conf")
        try "bus: session  # keep me\n".write(toFile: real, atomically: false, encoding: .utf8)
        chmod(real, 0o640)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let s = try CalibrationConfigEditor.apply(Self.update, toFileAt: link)
        #expect(s.calibration.rssiCorrection == -5 && s.bus == "session")
        #expect(try ConfigLoader.load(path: real) == s)
        #expect(try String(contentsOfFile: real, encoding: .utf8).hasPrefix("bus: session  # keep me\ncalibration:\n"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == real)
        var info = stat()
        #expect(stat(real, &info) == 0 && info.st_mode & 0o7777 == 0o640)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["gaend.conf", "link.conf"])

        let fresh = dir.file("new.conf")
        try CalibrationConfigEditor.apply(Self.update, toFileAt: fresh)
        #expect(try ConfigLoader.load(path: fresh).calibration.txPower == -18)
    }

    @Test("a refused edit leaves the file byte for byte", arguments: [
        "calibration: {rssi_correction: 0}  # flow\n",
        "calibration:\n  rssi_corection: 3\n",
        "bus: session\ncalibration:\n  rssi_correction: |\n    3\n",
    ])
    func refusalLeavesTheFile(text: String) throws {
        let dir = try TempDir()
        let path = dir.file("gaend.conf")
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: CalibrationConfigEditError.self) { try CalibrationConfigEditor.apply(Self.update, toFileAt: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(text.utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["gaend.conf"])
    }
}
