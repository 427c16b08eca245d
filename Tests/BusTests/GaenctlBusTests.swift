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
            "enabled":true,"exposureWindows":7,"failedRotations":1,"keyFiles":4,"lastScanTime":1700000000000,"matching":true,\
            "matchingRuns":2,"matchingTime":1500,"node":"board-3","provideDiagnosisKeysRemaining":6,"quarantinedRecords":1,\
            "radioFailures":2,"reportsDropped":0,"reportsIgnored":40,"rotationCount":3,"rssiCorrection":5,"scanCount":12,"scanningOnAir":false,\
            "secondsOffAir":60,"secondsOnAir":3600,"sightingCount":345,"site":"bus 7","status":["active"],"storeBytes":1048576,\
            "trialMode":false,"txPower":-30,"version":"0.1.0","watchdogFeeds":240}
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

    @Test("metrics: the exposition of the status's reading, labelled controller/node/site, no address or RPI; -o replaces the file atomically")
    func metrics() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address, name: "org.gaend.hci0")
        defer { daemon.close() }
        let r = try await runTool([Self.gaenctl, "--bus", bus.address, "metrics"])
        #expect(r.status == 0, "\(r.stderr)")
        let labels = #"controller="hci0",node="board-3",site="bus 7""#
        for line in ["gaend_up{\(labels)} 1", "gaend_scans_total{\(labels)} 12", "gaend_sightings_total{\(labels)} 345",
                     "gaend_advertisements_total{\(labels)} 3", "gaend_rotations_total{\(labels)} 3",
                     "gaend_rotations_failed_total{\(labels)} 1", "gaend_advertising_on_air_seconds_total{\(labels)} 3600",
                     "gaend_advertising_off_air_seconds_total{\(labels)} 60", "gaend_watchdog_feeds_total{\(labels)} 240",
                     "gaend_matching_duration_seconds_sum{\(labels)} 1.5", "gaend_matching_duration_seconds_count{\(labels)} 2",
                     "gaend_key_files{\(labels)} 4", "gaend_exposure_windows{\(labels)} 7", "gaend_store_size_bytes{\(labels)} 1048576",
                     "gaend_scans_dropped_total{\(labels),cause=\"disk_full\"} 2", "gaend_sightings_dropped_total{\(labels),cause=\"disk_full\"} 30",
                     "gaend_reports_dropped_total{\(labels),cause=\"buffer_full\"} 0", "gaend_quarantined_records{\(labels)} 1",
                     "gaend_last_scan_timestamp_seconds{\(labels)} 1700000000", "gaend_advertising_on_air{\(labels)} 1",
                     "gaend_clock_synchronised{\(labels)} 1", "gaend_status{\(labels),status=\"active\"} 1",
                     "gaend_status{\(labels),status=\"inactive\"} 0", "gaend_build_info{\(labels),version=\"0.1.0\"} 1",
                     "gaend_controller_info{\(labels),manufacturer=\"Cypress Semiconductor\",hci_version=\"5.0\",lmp_version=\"5.0\"} 1",
                     "# TYPE gaend_scans_total counter", "# TYPE gaend_matching_duration_seconds summary"] {
            #expect(r.stdout.split(separator: "\n").contains(Substring(line)), "no line '\(line)' in\n\(r.stdout)")
        }
        // Neither the controller's address, the address on air nor the RPI.
        for secret in ["DC:A6:32:01:02:03", "3A:11:22:33:44:55", "00112233445566778899aabbccddeeff"] {
            #expect(!r.stdout.lowercased().contains(secret.lowercased()), "\(secret) in the exposition")
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") {
            let check = try await runTool(["/usr/bin/promtool", "check", "metrics"], input: r.stdout)
            #expect(check.status == 0, "promtool: \(check.stdout)\(check.stderr)")
        }

        // -o: written atomically with mode 0644; then, with the daemon gone, gaend_up 0 under the
        // same labels, exit 1, and the previous file replaced whole.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("gaend-hci0.prom").path
        let written = try await runTool([Self.gaenctl, "metrics", "--bus", bus.address, "-o", file])
        #expect(written.status == 0 && written.stdout.isEmpty, "\(written.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == r.stdout)
        let mode = (try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o644)
        daemon.close()
        let down = try await runTool([Self.gaenctl, "metrics", "--bus", bus.address, "--name", "hci0", "--timeout", "5", "-o", file])
        #expect(down.status == 1 && down.stderr.contains("gaend does not answer"), "\(down.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == """
            # HELP gaend_up Whether gaend answered on D-Bus (1) or not (0).
            # TYPE gaend_up gauge
            gaend_up{\(labels)} 0

            """)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["gaend-hci0.prom"], "a temporary file left behind")
    }

    @Test("metrics: with the app half's status.json, its last sync, packages and risk level")
    func appMetrics() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address, name: "org.gaend.hci0")
        defer { daemon.close() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("""
            {"formatVersion":1,"lastSync":{"startedAt":1700000000,"finishedAt":1700000042,"server":"https://k.example/",\
            "newPackages":1,"provided":1,"refused":0,"pending":2,"bytes":900,"error":"HTTP 503"},"packagesHeld":5,\
            "packagesProvided":3,"packagesWaiting":2,"risk":{"computedAt":1700000042,"engine":"cwa","level":"high",\
            "windows":4,"detail":"{}"},"highRiskSince":1700000042}
            """.utf8).write(to: dir.appendingPathComponent("status.json"))
        let r = try await runTool([Self.gaenctl, "--bus", bus.address, "metrics", "--app-state", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let labels = #"controller="hci0",node="board-3",site="bus 7""#
        for line in ["gaend_app_last_sync_timestamp_seconds{\(labels)} 1700000042", "gaend_app_last_sync_success{\(labels)} 0",
                     "gaend_app_packages_held{\(labels)} 5", "gaend_app_packages_waiting{\(labels)} 2",
                     "gaend_app_risk_level{\(labels),level=\"high\"} 1", "gaend_app_risk_level{\(labels),level=\"low\"} 0"] {
            #expect(r.stdout.split(separator: "\n").contains(Substring(line)), "no line '\(line)' in\n\(r.stdout)")
        }
        // No app status: no app metrics.
        let none = try await runTool([Self.gaenctl, "--bus", bus.address, "metrics", "--app-state", dir.appendingPathComponent("none").path])
        #expect(none.status == 0 && !none.stdout.contains("gaend_app_"), "\(none.stdout)")
        // The default state directory is ROOT/<instance>: GAEND_APP_STATE_ROOT moves ROOT (the
        // tests' isolation from a machine's /var/lib/gaend-app rests on it).
        let root = dir.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("hci0"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: dir.appendingPathComponent("status.json"), to: root.appendingPathComponent("hci0/status.json"))
        let moved = try await runTool(["/usr/bin/env", "GAEND_APP_STATE_ROOT=\(root.path)", Self.gaenctl, "--bus", bus.address, "metrics"])
        #expect(moved.status == 0 && moved.stdout.contains("gaend_app_packages_held{\(labels)} 5"), "\(moved.stdout)")
        let isolated = try await runTool([Self.gaenctl, "--bus", bus.address, "metrics"])
        #expect(isolated.status == 0 && !isolated.stdout.contains("gaend_app_"), "\(isolated.stdout)")
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
        #expect(named.stderr == "gaenctl status: gaend is not running as org.gaend.hci3 on the bus \(bus.address): the name has no owner (org.freedesktop.DBus.Error.ServiceUnknown)\n", "\(named.stderr)")
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
