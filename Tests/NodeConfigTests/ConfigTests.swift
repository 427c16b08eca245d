import Foundation
import Testing
@testable import NodeConfig

@Suite struct ConfigTests {
    static let example: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/gaend.conf.example")

    @Test func shippedExampleParsesToTheDefaults() throws {
        let s = try ConfigLoader.load(path: Self.example.path)
        #expect(s == GaendSettings())
    }

    @Test func settingsAreRead() throws {
        let s = try ConfigLoader.parse("""
            controller: tcp:127.0.0.1:9001
            trial: true
            scanning: {mode: continuous, duration_seconds: 2.5}
            store: {retention_days: 21}
            calibration: {tx_power: -25, rssi_correction: 7, calibration_confidence: high}
            trust:
              - {id: "310", version: v1, public_key_file: /k.pem}
            """)
        #expect(s.controller == .tcp(host: "127.0.0.1", port: 9001))
        #expect(s.scanning.mode == .continuous && s.scanning.durationSeconds == 2.5)
        #expect(s.store.retentionDays == 21)
        #expect(s.calibration.metadata.bytes.hexString == "5ce70000")
        #expect(s.trust == [TrustedKeySetting(keyId: "310", keyVersion: "v1", publicKeyFile: "/k.pem")])
        #expect(s.rateLimits.enabled && !s.effective.rateLimits.enabled)
        #expect(s.effective.research.enabled && s.effective.research.allowCurrentKeyExport)
    }

    @Test func typoIsAnErrorWithLineAndSuggestion() {
        #expect(throws: ConfigError.unknownSetting(path: "<config>", line: 2, setting: "scaning", suggestion: "scanning")) {
            try ConfigLoader.parse("bus: session\nscaning: {mode: fixed}\n")
        }
        #expect(throws: ConfigError.unknownSetting(path: "<config>", line: 1, setting: "store.retention", suggestion: "store.retention_days")) {
            try ConfigLoader.parse("store: {retention: 3}")
        }
    }

    @Test func valuesAreCheckedWithSpecificErrors() {
        #expect(throws: ConfigError.outOfRange(path: "<config>", line: 1, setting: "scanning.duration_seconds", value: "10.0", allowed: "2.0...4.0")) {
            try ConfigLoader.parse("scanning: {duration_seconds: 10}")
        }
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 1, setting: "trial", expected: "true or false")) {
            try ConfigLoader.parse("trial: sometimes")
        }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("scanning: {mode: sometimes}") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("advertising: {rotation_min_minutes: 20, rotation_max_minutes: 10}") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("a: [unclosed") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("- just\n- a list\n") }
    }

    @Test func busNameIsReadAndChecked() throws {
        #expect(GaendSettings().busName == "org.gaend")
        #expect(try ConfigLoader.parse("bus_name: org.gaend.hci1\n").busName == "org.gaend.hci1")
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 2, setting: "bus_name",
                                              expected: "a D-Bus well-known name such as org.gaend.hci0; 'hci1' needs at least two dot-separated elements (e.g. org.gaend.hci0)")) {
            try ConfigLoader.parse("bus: session\nbus_name: hci1\n")
        }
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 1, setting: "bus_name",
                                              expected: "a D-Bus well-known name such as org.gaend.hci0; ':1.5' starts with ':', which marks a connection's unique name, not a well-known name")) {
            try ConfigLoader.parse("bus_name: ':1.5'")
        }
        #expect(throws: ConfigError.unknownSetting(path: "<config>", line: 1, setting: "bsu_name", suggestion: "bus_name")) {
            try ConfigLoader.parse("bsu_name: org.gaend.hci1")
        }
    }

    @Test func trustArgumentsParse() throws {
        #expect(try TrustedKeySetting(argument: "310:v1=/a.pem") == TrustedKeySetting(keyId: "310", keyVersion: "v1", publicKeyFile: "/a.pem"))
        #expect(try TrustedKeySetting(argument: "310=/a.pem") == TrustedKeySetting(keyId: "310", keyVersion: nil, publicKeyFile: "/a.pem"))
        #expect(throws: ConfigError.self) { try TrustedKeySetting(argument: "=/a.pem") }
        #expect(throws: ConfigError.self) { try TrustedKeySetting(argument: "310:=/a.pem") }
        #expect(throws: ConfigError.self) { try TrustedKeySetting(argument: "310") }
    }

    @Test func missingOrHugeFileIsClear() throws {
        #expect(throws: ConfigError.self) { try ConfigLoader.load(path: "/nonexistent/gaend.conf") }
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID()).conf")
        try Data(repeating: 0x20, count: ConfigLoader.maximumFileSize + 1).write(to: big)
        defer { try? FileManager.default.removeItem(at: big) }
        #expect(throws: ConfigError.tooLarge(path: big.path, bytes: ConfigLoader.maximumFileSize + 1, limit: ConfigLoader.maximumFileSize)) {
            try ConfigLoader.load(path: big.path)
        }
    }

    func syntaxError(_ text: String) -> String? {
        do {
            _ = try ConfigLoader.parse(text, path: "g.conf")
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func yamlErrorsNameTheLineAndColumn() {
        #expect(syntaxError("bus: session\nscanning:\n  mode: fixed\n duration_seconds: 3\n")
                == "g.conf: not valid YAML: line 4, column 2: did not find expected key (while parsing a block mapping at line 1, column 1)")
        #expect(syntaxError("trial: true\nbus: session\ntrial: false\n")
                == "g.conf: not valid YAML: line 3, column 1: key 'trial' is repeated (first at line 1, column 1); YAML keys are unique")
        #expect(syntaxError("scanning:\n  period_min_seconds: &p 240\n  period_max_seconds: *p\n")
                == "g.conf: not valid YAML: line 3, column 23: alias '*p' is not supported; write the value out in full")
        #expect(syntaxError("research:\n  site: !env SITE\n")?.hasPrefix("g.conf: not valid YAML: line 2, column 9: unsupported tag '!env'") == true)
        #expect(syntaxError("bus: session\n---\nbus: system\n") == "g.conf: not valid YAML: line 2, column 1: a second document starts here; only one is read")
        #expect(syntaxError("controller: hci0\u{7}\n") == "g.conf: not valid YAML: line 1, column 17: control characters are not allowed (0x7)")
    }

    @Test func quotedValuesAreTextAndTheErrorSaysSo() throws {
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 1, setting: "trial", expected: "true or false (unquoted: in quotes it is text)")) {
            try ConfigLoader.parse("trial: \"true\"")
        }
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 1, setting: "store.retention_days", expected: "a whole number (unquoted: in quotes it is text)")) {
            try ConfigLoader.parse("store: {retention_days: '21'}")
        }
        #expect(throws: ConfigError.wrongType(path: "<config>", line: 2, setting: "time_scale", expected: "a number")) {
            try ConfigLoader.parse("bus: session\ntime_scale: fast\n")
        }
        // Strings take any scalar; YAML 1.1's yes/no are booleans; explicit tags decide.
        let s = try ConfigLoader.parse("""
            research: {site: 42, node: 'yes', enabled: yes}
            trial: Off
            calibration: {tx_power: !!int "-25", metadata_version: 1.0}
            store: {retention_days: 0x0e}
            bus_name: !!str org.gaend.x
            """)
        #expect(s.research.site == "42" && s.research.node == "yes" && s.research.enabled && !s.trial)
        #expect(s.calibration.txPower == -25 && s.calibration.metadataMinorVersion == 0 && s.store.retentionDays == 14)
        #expect(s.busName == "org.gaend.x")
    }

    @Test("Node and site names with control characters are refused at load, naming the setting and the line")
    func namesWithControlCharactersAreRefused() throws {
        // A carriage return would break a metrics line, a NUL every D-Bus string (GetAll).
        // The site: printable text; the node: the one board-name rule (docs/provision.md). Both
        // name the value escaped.
        for (yaml, shown, allowed) in [(#"research: {node: "a\rb"}"#, #"'a\rb'"#, "allowed a letter or digit"),
                                       (#"research: {node: "a\0b"}"#, #"'a\u{0}b'"#, "allowed a letter or digit"),
                                       (#"research: {site: "x\e[31my"}"#, #"'x\u{1b}[31my'"#, "allowed printable characters only"),
                                       (#"research: {site: "a\nb"}"#, #"'a\nb'"#, "allowed printable characters only")] {
            #expect {
                try ConfigLoader.parse(yaml + "\n")
            } throws: { e in
                let text = "\(e)"
                return text.hasPrefix("<config>:1: 'research.") && text.contains("is \(shown), \(allowed)")
            }
        }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("research: {site: \(String(repeating: "n", count: 257))}\n") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("research: {node: 'board 7'}\n") }
        // Any printable text stays a site: spaces, accents, quotes.
        let s = try ConfigLoader.parse("research: {node: 'board-7', site: 'bus 7 é \"x\"'}\n")
        #expect(s.research.node == "board-7" && s.research.site == "bus 7 é \"x\"")
    }

    @Test func anEmptyDocumentKeepsTheDefaults() throws {
        for text in ["", "# nothing\n", "---\n", "--- # empty\n...\n", "\u{FEFF}# with a byte-order mark\n"] {
            #expect(try ConfigLoader.parse(text) == GaendSettings(), "\(text)")
        }
        #expect(try ConfigLoader.parse("\u{FEFF}bus: session\r\ntrial: true\r\n").trial)
    }

    @Test func aHugeFileIsRefusedUnreadAndADeviceIsReadOnlyToTheLimit() throws {
        // A sparse 8 GiB file: refused by its size (reading it would take minutes and 8 GiB).
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("sparse-\(UUID()).conf")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: big) }
        #expect(truncate(big.path, 8 << 30) == 0)
        #expect(throws: ConfigError.tooLarge(path: big.path, bytes: 8 << 30, limit: ConfigLoader.maximumFileSize)) {
            try ConfigLoader.load(path: big.path)
        }
        // A device has no size: it is read up to one byte past the limit.
        #expect(throws: ConfigError.tooLarge(path: "/dev/zero", bytes: ConfigLoader.maximumFileSize + 1, limit: ConfigLoader.maximumFileSize)) {
            try ConfigLoader.load(path: "/dev/zero")
        }
        #expect(throws: ConfigError.unreadable(path: "/nonexistent/gaend.conf", reason: "No such file or directory")) {
            try ConfigLoader.load(path: "/nonexistent/gaend.conf")
        }
        #expect(throws: ConfigError.unreadable(path: "/", reason: "Is a directory")) { try ConfigLoader.load(path: "/") }
        let latin1 = FileManager.default.temporaryDirectory.appendingPathComponent("latin1-\(UUID()).conf")
        try Data("bus: session\nresearch:\n  site: caf".utf8 + [0xE9, 0x0A]).write(to: latin1)
        defer { try? FileManager.default.removeItem(at: latin1) }
        #expect(throws: ConfigError.syntax(path: latin1.path, reason: "not UTF-8 text (line 3, column 12: byte 0xe9)")) {
            try ConfigLoader.load(path: latin1.path)
        }
    }
}
