import Foundation
import Testing

/// gaenctl as a D-Bus client, run as a user would, against the canned daemon.
@Suite("gaenctl over D-Bus", .serialized)
struct GaenctlBusTests {
    static var gaenctl: String {
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("gaenctl").path
        }
        return Bundle.main.bundleURL.appendingPathComponent("gaenctl").path
    }

    @Test("status --json prints the node's properties; --bus works before or after the subcommand")
    func status() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address)
        defer { daemon.close() }
        let json = try await runTool([Self.gaenctl, "--bus", bus.address, "status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == """
            {"advertisementCount":3,"enabled":true,"lastScanTime":1700000000000,"provideDiagnosisKeysRemaining":6,\
            "scanCount":12,"sightingCount":345,"status":["active"],"trialMode":false,"version":"0.1.0"}
            """)
        let text = try await runTool([Self.gaenctl, "status", "--bus", bus.address])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("sightings:      345"))
    }

    @Test("without a daemon on the bus, status fails with the bus's error name")
    func noDaemon() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let r = try await runTool([Self.gaenctl, "--bus", bus.address, "status"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("org.freedesktop.DBus.Error.ServiceUnknown"), "\(r.stderr)")
    }
}
