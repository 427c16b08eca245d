import Foundation
import HCIHost
import Testing
@testable import NodeConfig

/// The controller settings of gaend's config: the same parsers as the HCI host's own.
@Suite("Controller settings in the config")
struct ControllerConfigTests {
    @Test func configUsesTheSameParser() throws {
        #expect(try ConfigLoader.parse("controller: serial:/dev/ttyAMA0:1000000").controller == .serial(path: "/dev/ttyAMA0", baud: 1_000_000))
        let e = try #require(throws: ConfigError.self) { try ConfigLoader.parse("controller: bt0") }
        #expect(e.description.contains("a controller address"))
        #expect(e.description.contains("unknown transport"))
    }

    @Test func configCaptureBlock() throws {
        let s = try ConfigLoader.parse("capture:\n  file: /var/log/gaend/hci0.btsnoop\n  max_size_mb: 4\n  keep: 3\n")
        #expect(s.capture == CaptureSettings(path: "/var/log/gaend/hci0.btsnoop", maxBytes: 4 << 20, keep: 3))
        #expect(try ConfigLoader.parse("trial: false").capture == nil)
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("capture:\n  max_size_mb: 4\n") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("capture:\n  fil: x\n") }
    }
}

@Suite("Controller selection (controllers:)")
struct ControllerSelectionTests {
    @Test func defaultTakesEveryController() throws {
        #expect(try ConfigLoader.parse("trial: false").controllers == .all)
        #expect(try ConfigLoader.parse("controllers: all").controllers.includes(.hci(index: 7)))
    }

    @Test func listTakesOnlyThose() throws {
        let s = try ConfigLoader.parse("controllers: [hci0, \"hci:2\"]")
        #expect(s.controllers.includes(.hci(index: 0)) && s.controllers.includes(.hci(index: 2)))
        #expect(!s.controllers.includes(.hci(index: 1)))
        #expect(!s.controllers.includes(.tcp(host: "127.0.0.1", port: 9)))
    }

    @Test func badEntriesAreErrors() {
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("controllers: [serial:/dev/ttyS0]") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("controllers: some") }
    }
}
