import DBusCore
import DBusNames
import GaendAPI
import Foundation
import GaendClient
import NodeConfig
import Testing

@Suite("Well-known bus names and choosing a gaend instance", .serialized)
struct BusNameTests {
    @Test("names the D-Bus specification allows", arguments: [
        "org.gaend", "org.gaend.hci0", "org.gaend.hci1", "a.b", "org.gaend.hci-1_x", "_x.Y-2", "a." + String(repeating: "b", count: 253),
    ])
    func valid(_ name: String) throws {
        try WellKnownName.validate(name)
    }

    @Test("a bad name says which rule it breaks")
    func invalid() {
        let cases: [(String, WellKnownNameError)] = [
            ("", .empty),
            ("gaend", .tooFewElements),
            ("hci0", .tooFewElements),
            (":1.42", .uniqueName),
            ("org..gaend", .emptyElement),
            (".org.gaend", .emptyElement),
            ("org.gaend.", .emptyElement),
            ("org.gaend.0hci", .elementStartsWithDigit(element: "0hci")),
            ("org.gaend.hci/0", .invalidCharacter(element: "hci/0", character: "/")),
            ("org.gaend hci0.x", .invalidCharacter(element: "gaend hci0", character: " ")),
            ("org.gä", .invalidCharacter(element: "gä", character: "ä")),
            ("a." + String(repeating: "b", count: 254), .tooLong(bytes: 256)),
        ]
        for (name, error) in cases {
            #expect(throws: error, "\(name)") { try WellKnownName.validate(name) }
        }
        #expect(WellKnownNameError.tooFewElements.description == "needs at least two dot-separated elements (e.g. org.gaend.hci0)")
        #expect(WellKnownNameError.elementStartsWithDigit(element: "0hci").description == "has element '0hci' starting with a digit")
    }

    @Test("the config's default bus name is the API's (the config target links no D-Bus target, so it writes the name out)")
    func configDefaultIsTheAPIName() {
        #expect(GaendSettings().busName == GaendBus.busName)
    }

    @Test("a name is within a prefix when it is the prefix or below it, as dbus-daemon's own_prefix")
    func prefix() {
        #expect(WellKnownName.isWithin("org.gaend", prefix: "org.gaend"))
        #expect(WellKnownName.isWithin("org.gaend.hci0", prefix: "org.gaend"))
        #expect(!WellKnownName.isWithin("org.gaendx", prefix: "org.gaend"))
        #expect(!WellKnownName.isWithin("org.gaen", prefix: "org.gaend"))
    }

    @Test("--name: a suffix without dots stands for org.gaend.SUFFIX; a full name is kept")
    func expand() throws {
        #expect(try GaendDiscovery.expand("hci1") == "org.gaend.hci1")
        #expect(try GaendDiscovery.expand("org.gaend.hci1") == "org.gaend.hci1")
        #expect(try GaendDiscovery.expand("org.gaend") == "org.gaend")
        #expect(try GaendDiscovery.expand("com.example.Node") == "com.example.Node")
        #expect(throws: GaendDiscoveryError.invalidName("0", .elementStartsWithDigit(element: "0"))) { try GaendDiscovery.expand("0") }
        #expect(throws: GaendDiscoveryError.invalidName("", .empty)) { try GaendDiscovery.expand("") }
        #expect(throws: GaendDiscoveryError.invalidName("org..x", .emptyElement)) { try GaendDiscovery.expand("org..x") }
    }

    @Test("discovery: none is 'not running', one is chosen, org.gaend comes first, several are listed")
    func discovery() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let client = try BusClient(bus: .address(bus.address), timeout: .seconds(10))
        defer { client.close() }
        var owners: [BusConnection] = []
        defer { owners.forEach { $0.close() } }
        func own(_ name: String) async throws {
            let c = try BusConnection.connect(.address(bus.address))
            owners.append(c)
            try await c.requestName(name)
        }

        // Names that only look alike are not gaend.
        try await own("org.gaendx.hci0")
        try await own("org.example.Other")
        await #expect(throws: GaendDiscoveryError.notRunning(bus: bus.address)) { try await GaendDiscovery.discover(on: client) }

        // Nor are the app half's own names (org.gaend.App1, org.gaend.App1.NAME).
        try await own("org.gaend.App1.hci1")
        try await own("org.gaend.App1")
        await #expect(throws: GaendDiscoveryError.notRunning(bus: bus.address)) { try await GaendDiscovery.discover(on: client) }

        try await own("org.gaend.hci1")
        #expect(try await GaendDiscovery.discover(on: client) == "org.gaend.hci1")

        try await own("org.gaend.hci0")
        await #expect(throws: GaendDiscoveryError.severalInstances(["org.gaend.hci0", "org.gaend.hci1"])) {
            try await GaendDiscovery.discover(on: client)
        }
        #expect(GaendDiscoveryError.severalInstances(["org.gaend.hci0", "org.gaend.hci1"]).description
                == "several gaend instances on this bus: org.gaend.hci0, org.gaend.hci1; choose one with --name")
        // An explicit name needs no discovery.
        #expect(try await GaendDiscovery.resolve("hci0", on: client) == "org.gaend.hci0")

        try await own("org.gaend")
        #expect(try await GaendDiscovery.discover(on: client) == "org.gaend")
    }
}

/// The gaend binary's bus name: config key, flag, validation, and a name already owned.
@Suite("gaend --bus-name", .serialized)
struct GaendBusNameTests {
    static var gaend: String {
        URL(fileURLWithPath: GaenctlBusTests.gaenctl).deletingLastPathComponent().appendingPathComponent("gaend").path
    }

    /// One gaend on `bus` with its own state directory and key; the controller address is a
    /// closed port, so the node serves D-Bus with `controller-missing` and touches no radio.
    final class Daemon: @unchecked Sendable {
        let process = Process()
        let directory: URL
        let errURL: URL

        init(bus: PrivateBus, config: String, arguments: [String]) throws {
            directory = bus.directory.appendingPathComponent("gaend-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let key = directory.appendingPathComponent("store.key")
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            #expect(FileManager.default.createFile(atPath: key.path, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600]))
            let conf = directory.appendingPathComponent("gaend.conf")
            try ("controller: tcp:127.0.0.1:1\n" + config).write(to: conf, atomically: true, encoding: .utf8)
            errURL = directory.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: GaendBusNameTests.gaend)
            process.arguments = ["--config", conf.path, "--state-dir", directory.appendingPathComponent("state").path,
                                 "--store-key-file", key.path, "--bus", bus.address, "--ignore-clock-sync"] + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: errURL)
            try process.run()
        }

        var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

        /// Waits for the process to exit; nil if it is still running after `seconds`.
        func exitStatus(within seconds: Double) async -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(50)) }
            return process.isRunning ? nil : process.terminationStatus
        }

        func kill() {
            // SIGKILL: a child of the test runner may inherit a mask that keeps SIGTERM pending.
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Asks the bus from another process (an in-process client polling here would wake the
    /// "gaend.dbus" threads the idle-loop test counts).
    func hasOwner(_ name: String, _ bus: PrivateBus) async throws -> Bool {
        let r = try await runTool(["/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                   "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)"])
        guard r.status == 0 else { throw TestFailure("NameHasOwner: \(r.stderr)") }
        return r.stdout.contains("boolean true")
    }

    func waitForName(_ name: String, _ bus: PrivateBus, _ daemon: Daemon) async throws {
        // Generous: the unit suite runs in parallel on every core, and a starved child takes long.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if try await hasOwner(name, bus) { return }
            if !daemon.process.isRunning { throw TestFailure("gaend exited: \(daemon.stderr)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        // A last look: the poll itself can be starved past the deadline when every core is busy.
        if try await hasOwner(name, bus) { return }
        throw TestFailure("gaend did not own \(name) in time: \(daemon.stderr)")
    }

    @Test("bus_name from the config, --bus-name over it, and a name already owned stops the second gaend with a clear line",
          .enabled(if: FileManager.default.isExecutableFile(atPath: GaendBusNameTests.gaend), "gaend not built"))
    func configFlagAndTaken() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }

        let fromConfig = try Daemon(bus: bus, config: "bus_name: org.gaend.hci0\n", arguments: [])
        defer { fromConfig.kill() }
        try await waitForName("org.gaend.hci0", bus, fromConfig)

        let fromFlag = try Daemon(bus: bus, config: "bus_name: org.gaend.hci0\n", arguments: ["--bus-name", "org.gaend.hci1"])
        defer { fromFlag.kill() }
        try await waitForName("org.gaend.hci1", bus, fromFlag)
        #expect(try await !hasOwner(GaendBus.busName, bus))

        let taken = try Daemon(bus: bus, config: "", arguments: ["--bus-name", "org.gaend.hci1"])
        defer { taken.kill() }
        #expect(await taken.exitStatus(within: 30) == 1)
        #expect(taken.stderr.contains(
            "gaend: D-Bus name org.gaend.hci1 is already owned by another process (another gaend on this controller?)"),
            "\(taken.stderr)")
        #expect(fromFlag.process.isRunning && fromConfig.process.isRunning)
    }

    @Test("a bad name is refused before start, naming the flag or setting and the rule",
          .enabled(if: FileManager.default.isExecutableFile(atPath: GaendBusNameTests.gaend), "gaend not built"))
    func badNames() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let flag = try Daemon(bus: bus, config: "", arguments: ["--bus-name", "hci0"])
        defer { flag.kill() }
        #expect(await flag.exitStatus(within: 30) == 64)  // ArgumentParser's usage error
        #expect(flag.stderr.contains("--bus-name: 'hci0' is not a D-Bus well-known name: it needs at least two dot-separated elements"),
                "\(flag.stderr)")
        let config = try Daemon(bus: bus, config: "bus_name: org.gaend.0\n", arguments: [])
        defer { config.kill() }
        #expect(await config.exitStatus(within: 30) == 1)
        #expect(config.stderr.contains("'bus_name' must be a D-Bus well-known name such as org.gaend.hci0; 'org.gaend.0' has element '0' starting with a digit"),
                "\(config.stderr)")
    }
}
