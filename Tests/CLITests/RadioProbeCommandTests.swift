import Foundation
import NodeTestSupport
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
    @Test(.enabled(if: BumbleControllers.available, "python3 with bumble is not installed (pip install bumble==0.0.236); skipping"))
    func probePrintsOneJSONObject() throws {
        let bumble = try BumbleControllers(serving: .pty)
        defer { bumble.stop() }
        let path = bumble.path

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
