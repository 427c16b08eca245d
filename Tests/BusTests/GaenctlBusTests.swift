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
            {"advertisementCount":3,"advertisingAddress":"3A:11:22:33:44:55","advertisingOnAir":true,"busName":"org.gaend",\
            "calibrationConfidence":2,"clockSync":"synchronized (kernel NTP state)",\
            "controller":{"address":"DC:A6:32:01:02:03","hciSubversion":291,"hciVersion":9,"hciVersionName":"5.0",\
            "lmpSubversion":24857,"lmpVersion":9,"lmpVersionName":"5.0","manufacturer":305,"manufacturerName":"Cypress Semiconductor",\
            "name":"hci0"},"currentRpi":"00112233445566778899aabbccddeeff","droppedScans":2,"droppedSightings":30,\
            "enabled":true,"lastScanTime":1700000000000,"matching":true,"node":"board-3","provideDiagnosisKeysRemaining":6,"quarantinedRecords":1,\
            "radioFailures":2,"reportsDropped":0,"reportsIgnored":40,"rssiCorrection":5,"scanCount":12,"scanningOnAir":false,\
            "sightingCount":345,"site":"bus 7","status":["active"],"trialMode":false,"txPower":-30,"version":"0.1.0"}
            """)
        let text = try await runTool([Self.gaenctl, "status", "--bus", bus.address])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("sightings:      345"))
        #expect(text.stdout.contains("quarantined:    1 store record(s)"))
        #expect(text.stdout.contains("dropped:        2 scan(s), 30 sighting(s)"))
        #expect(text.stdout.contains("on air:         advertising yes, scanning no"), "\(text.stdout)")
        #expect(text.stdout.contains("(2 radio operations failed and were retried)"), "\(text.stdout)")
        #expect(text.stdout.contains("controller:     hci0, address DC:A6:32:01:02:03, Cypress Semiconductor (company 0x0131), HCI 5.0, LMP 5.0\n"),
                "\(text.stdout)")
        #expect(text.stdout.contains("advertising:    from 3A:11:22:33:44:55 (random, non-resolvable), RPI 00112233445566778899aabbccddeeff\n"),
                "\(text.stdout)")
        #expect(text.stdout.contains("calibration:    TX power -30 dBm, RSSI correction 5 dB, confidence medium\n"), "\(text.stdout)")
        #expect(text.stdout.contains("labels:         node board-3, site bus 7"), "\(text.stdout)")
        #expect(text.stdout.contains("matching:       yes (provided key files are being matched; a new upload gets Busy)\n"), "\(text.stdout)")
    }

    @Test("status of an older gaend (interface revision 2) leaves the field checks out")
    func statusOfOlderDaemon() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address, revision: 2)
        defer { daemon.close() }
        let json = try await runTool([Self.gaenctl, "--bus", bus.address, "status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        for key in ["controller", "advertisingAddress", "currentRpi", "txPower", "node"] {
            #expect(!json.stdout.contains("\"\(key)\""), "\(key) in \(json.stdout)")
        }
        let text = try await runTool([Self.gaenctl, "--bus", bus.address, "status"])
        #expect(text.status == 0 && text.stdout.contains("sightings:      345") && !text.stdout.contains("controller:"), "\(text.stdout)")
    }

    @Test("without a daemon on the bus, status fails saying so, with the bus's error name")
    func noDaemon() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let r = try await runTool([Self.gaenctl, "--bus", bus.address, "status"])
        #expect(r.status == 1)
        #expect(r.stderr == "gaenctl status: gaend is not running on the bus \(bus.address): neither org.gaend nor any org.gaend.* name has an owner (org.freedesktop.DBus.Error.ServiceUnknown)\n", "\(r.stderr)")
        // A name given with --name is called as it is: the bus answers.
        let named = try await runTool([Self.gaenctl, "--bus", bus.address, "--name", "hci3", "status"])
        #expect(named.status == 1)
        #expect(named.stderr.contains("org.freedesktop.DBus.Error.ServiceUnknown") && named.stderr.contains("org.gaend.hci3"), "\(named.stderr)")
    }

    @Test("two instances: --name (full or short, before or after the command) picks one; without it gaenctl lists both")
    func instances() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let hci0 = try await CannedDaemon(address: bus.address, name: "org.gaend.hci0", sightings: 100)
        defer { hci0.close() }
        let hci1 = try await CannedDaemon(address: bus.address, name: "org.gaend.hci1", sightings: 200)
        defer { hci1.close() }

        for args in [["--name", "org.gaend.hci1", "status", "--json"], ["status", "--json", "--name", "hci1"]] {
            let r = try await runTool([Self.gaenctl, "--bus", bus.address] + args)
            #expect(r.status == 0, "\(r.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            #expect(object?["busName"] as? String == "org.gaend.hci1" && object?["sightingCount"] as? Int == 200, "\(r.stdout)")
        }
        let text = try await runTool([Self.gaenctl, "status", "--bus", bus.address, "--name", "hci0"])
        #expect(text.status == 0 && text.stdout.contains("at org.gaend.hci0") && text.stdout.contains("sightings:      100"), "\(text.stdout)")

        let both = try await runTool([Self.gaenctl, "--bus", bus.address, "status"])
        #expect(both.status == 1)
        #expect(both.stderr == "gaenctl status: several gaend instances on this bus: org.gaend.hci0, org.gaend.hci1; choose one with --name\n",
                "\(both.stderr)")
        let start = try await runTool([Self.gaenctl, "start", "--bus", bus.address])
        #expect(start.status == 1 && start.stderr.contains("several gaend instances"), "\(start.stderr)")

        let bad = try await runTool([Self.gaenctl, "--bus", bus.address, "--name", "org..x", "status"])
        #expect(bad.status != 0 && bad.stderr.contains("--name: 'org..x' is not a D-Bus well-known name: it has an empty element"), "\(bad.stderr)")
    }
}
