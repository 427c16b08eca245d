import ENProtocol
import Foundation
import HCIProtocol
import Logging
import ServiceLifecycle
import Synchronization
import Testing
@testable import BLEDaemon

/// The systemd watchdog is fed by the radio path's own liveness (schedule heartbeat, radio
/// owner, controller session), not by anything that waits behind long work.
@Suite("Watchdog: the radio path's liveness", .serialized)
struct WatchdogLivenessTests {
    let logger = Logger(label: "test.watchdog")

    /// WATCHDOG=1 datagrams that arrived in the last `seconds` (older ones drained first).
    func feeds(_ listener: SystemdNotifierTests.Listener, during seconds: Double) async throws -> Int {
        func drain() -> Int {
            var n = 0, buf = [UInt8](repeating: 0, count: 512)
            while recv(listener.fd, &buf, buf.count, Int32(MSG_DONTWAIT)) > 0 { n += 1 }
            return n
        }
        _ = drain()
        try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        return drain()
    }

    @Test("a wedged controller session stops the watchdog's feeding; a big matching run and an export into a pipe nobody reads do not")
    func radioPathFeedsTheWatchdog() async throws {
        let dir = try TempStoreDir()
        var s = GaendSettings()
        s.controller = "unix:" + dir.url.appendingPathComponent("scripted").path
        s.stateDirectory = dir.url.path
        s.storeKeyFile = dir.keyPath
        s.trial = true
        let clock = ManualClock(wall: 1_700_000_000, monotonic: 100)
        // The radio path: a scripted controller, its session and the radio owner on the node's clock.
        let connector = ScriptedConnector()
        let session = HCIControllerSession(connector: connector, configuration: HCISessionConfiguration(), logger: logger)
        try await session.start()
        let radio = RadioService.makeRadio(settings: s, clock: clock, logger: logger)
        await radio.attach(session)
        let node = try GaenNode(settings: s, logger: logger, clock: clock, sync: FixedClockSync(.synchronized(source: "test")), radio: radio)
        try await node.enable() // the schedule runs: the first rotation is on air
        try await waitUntil { await radio.snapshot.advertisingOnAir }

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let listener = try SystemdNotifierTests.Listener(path: path)
        // WATCHDOG_USEC 400 ms: fed every 200 ms while live.
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000", "WATCHDOG_PID": "\(getpid())"])
        let watchdog = WatchdogService(check: RadioPathCheck(radio: radio, schedule: node.heartbeat, clock: clock), notifier: notifier, logger: logger)
        let feeding = Task { try await watchdog.run() }
        #expect(try await feeds(listener, during: 1) >= 3)

        // Long work elsewhere: matching 500,000 keys against 3,000 sightings, and a research
        // export held by a reader that never reads.
        let day = UTCDay(unixSeconds: 1_700_000_000)
        var sightings: [RecordedSighting] = []
        for i in 0..<3_000 {
            sightings.append(RecordedSighting(time: 1_699_999_000 + Double(i) * 0.1, rpi: try RollingProximityIdentifier(bytes: Data(repeating: UInt8(i % 251), count: 16)),
                                              aem: try AssociatedEncryptedMetadata(bytes: Data([1, 2, 3, 4])), rssi: -60))
        }
        _ = try node.store.recordScan(RecordedScan(start: 1_699_999_000, end: 1_699_999_400, sightings: sightings))
        var keys: [DiagnosisKey] = []
        for i in 0..<500_000 {
            var bytes = Data(count: 16)
            withUnsafeBytes(of: UInt64(i).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
            keys.append(DiagnosisKey(key: try TemporaryExposureKey(bytes: bytes), rollingStartIntervalNumber: day.firstInterval))
        }
        let file = try KeyExportWriter.exportBin(header: KeyExportHeader(startTimestamp: 0, endTimestamp: 1, region: "t"), keys: keys)
        _ = try await node.exposure.acceptKeyFiles([file], trust: KeyExportTrustSet())
        let matching = Task { _ = try await node.exposure.runMatching(); return ContinuousClock.now }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let out = try CallerDescriptor(taking: fds[1], what: "the export's descriptor")
        let transfers = CallerTransfers()
        let context = node.research.exportContext
        let exportEnded = Mutex(false)
        let export = Task {
            defer { exportEnded.withLock { $0 = true } }
            return try await transfers.run("test.export") { flag in
                try ResearchRecords.writeSightings(context, from: 0, to: 2_000_000_000, format: "csv") { try out.write($0, idleTimeout: 60, cancel: flag) }
            }
        }
        // Fed in every half second the matching run lasts (at least one whole one).
        var windows = 0
        while await node.snapshot.matching {
            let fed = try await feeds(listener, during: 0.5)
            if await node.snapshot.matching {
                #expect(fed >= 2, "window \(windows)")
                windows += 1
            }
        }
        _ = try await matching.value
        #expect(windows >= 1)
        #expect(try await feeds(listener, during: 0.5) >= 2)
        #expect(exportEnded.withLock { $0 } == false) // still held by the reader that never reads

        // The controller session wedges (a write that never returns): no more feeding.
        connector.current.wedgeWrites()
        let rotation = Task { await radio.advertise(Beacon(address: BDAddress(littleEndian: [9, 8, 7, 6, 5, 0x3F]), advertisingData: [2, 1, 0x1A])) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await feeds(listener, during: 1.5) == 0)
        // Unwedged, it is fed again.
        connector.current.unwedgeWrites()
        await rotation.value
        #expect(try await feeds(listener, during: 1) >= 2)

        feeding.cancel()
        _ = try? await feeding.value
        await transfers.cancelAllAndWait()
        _ = try? await export.value
        close(fds[0])
        try await node.disable()
        await radio.stop()
        await node.shutdown()
    }
}
