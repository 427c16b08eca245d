import Foundation
import Testing

/// `gaenctl radio probe` as a user runs it: clear errors, and JSON from a virtual controller.
@Suite("gaenctl radio probe")
struct RadioProbeCommandTests {
    @Test func kernelControllerOnAMachineWithoutBluetoothIsAClearError() throws {
        let r = try CLI.run("gaenctl", ["radio", "probe", "--controller", "hci0"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        // Here the kernel has no Bluetooth; on a board without root it is a permission error.
        #expect(r.stderr.contains("EAFNOSUPPORT") || r.stderr.contains("permission denied") || r.stderr.contains("busy"), "\(r.stderr)")
    }

    @Test func badAddressIsAUsageError() throws {
        let r = try CLI.run("gaenctl", ["radio", "probe", "--controller", "bt:0"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("invalid controller address 'bt:0'"))
    }

    @Test func refusedConnectionIsAClearError() throws {
        let r = try CLI.run("gaenctl", ["radio", "probe", "--controller", "tcp:127.0.0.1:1"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("connection refused"))
    }

    /// Stock Bumble controllers serve the first controller on a pty, reached as `serial:`.
    @Test(.enabled(if: bumbleAvailable(), "python3 with bumble is not installed (pip install bumble==0.0.236); skipping"))
    func probePrintsOneJSONObject() throws {
        let path = "/tmp/gaend-cli-\(UUID().uuidString.prefix(8))"
        let bumble = Process()
        bumble.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        bumble.arguments = ["python3", "-m", "bumble.apps.controllers", "pty:\(path)", "pty:\(path)-2"]
        bumble.standardOutput = FileHandle.nullDevice
        bumble.standardError = FileHandle.nullDevice
        try bumble.run()
        defer {
            // SIGKILL: SIGTERM is not delivered to children of the test runner.
            kill(bumble.processIdentifier, SIGKILL)
            bumble.waitUntilExit()
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-2")
        }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: path), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }

        let r = try CLI.run("gaenctl", ["radio", "probe", "--controller", "serial:\(path)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == 1, "one JSON object on one line")
        let facts = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect(facts["controller"] as? String == "serial:\(path)")
        #expect(facts["hciVersion"] as? String == "5.0")
        #expect(facts["lmpVersion"] as? String == "5.0")
        #expect(facts["manufacturerId"] as? Int == 0xFFFF)
        #expect(facts["address"] as? String == "00:00:00:00:00:00")
        #expect((facts["leFeatures"] as? [String])?.contains("LE Extended Advertising") == true)
        #expect(facts["advertisingTxPowerDbm"] as? Int == 0)
    }
}

private func bumbleAvailable() -> Bool {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", "import bumble.apps.controllers"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
}
