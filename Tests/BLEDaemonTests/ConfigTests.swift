import Foundation
import Testing
@testable import BLEDaemon

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
        #expect(s.controller == "tcp:127.0.0.1:9001")
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
}
