import NodeConfig
import PlatformSupport
import ENProtocol
import Foundation
@testable import HCIHost
import HCIProtocol
import Logging
import NodeTestSupport
import PlatformSupport
import ServiceLifecycle
import Synchronization
import Testing
@testable import BLEDaemon

/// The systemd watchdog is fed by the radio path's own liveness (schedule heartbeat, radio
/// owner, controller session), not by anything that waits behind long work.
@Suite("Watchdog: the radio path's liveness", .serialized)
struct WatchdogLivenessTests {
    let logger = Logger(label: "test.watchdog")

    /// WATCHDOG_USEC of these tests: systemd kills a service not fed for this long.
    /// Short for a test, yet long enough that a loaded machine's scheduling delay of a second
    /// (seen at load 14 on 2 cores, two test runs side by side) is not a missed feed.
    static let watchdogSeconds = 4.0

    /// Records when each WATCHDOG=1 arrives on the notify socket (a thread of its own, so the
    /// times do not depend on the cooperative pool the code under test shares).
    final class FeedLog: @unchecked Sendable {
        let listener: SystemdNotifierTests.Listener
        private let times = Mutex<[ContinuousClock.Instant]>([])
        private let stopped = Mutex(false)
        private var thread: Thread?

        init(_ listener: SystemdNotifierTests.Listener) {
            self.listener = listener
            var tv = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(listener.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let fd = listener.fd
            let t = Thread { [self] in
                var buf = [UInt8](repeating: 0, count: 512)
                while !stopped.withLock({ $0 }) {
                    let n = recv(fd, &buf, buf.count, 0)
                    if n > 0, String(decoding: buf[0..<n], as: UTF8.self) == "WATCHDOG=1" { times.withLock { $0.append(.now) } }
                }
            }
            thread = t
            t.start()
        }

        func stop() { stopped.withLock { $0 = true } }

        /// Feeds in `from...to`.
        func feeds(from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> [ContinuousClock.Instant] {
            times.withLock { $0.filter { $0 >= from && $0 <= to } }
        }

        /// The longest time in `from...to` without a feed (what systemd's watchdog measures).
        func longestGap(from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> Double {
            let points = [from] + feeds(from: from, to: to) + [to]
            return zip(points, points.dropFirst()).map { a, b in
                let d = b - a
                return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            }.max() ?? 0
        }
    }

    @Test("a wedged controller session stops the watchdog's feeding; a big matching run and an export into a pipe nobody reads do not")
    func radioPathFeedsTheWatchdog() async throws {
        let dir = try TempStoreDir()
        var s = GaendSettings()
        s.controller = .unix(path: dir.url.appendingPathComponent("scripted").path)
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
        let log = FeedLog(try SystemdNotifierTests.Listener(path: path))
        // Fed every WATCHDOG_USEC / 2 while live; never a gap of WATCHDOG_USEC (systemd's kill).
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "\(Int(Self.watchdogSeconds * 1_000_000))",
                                                     "WATCHDOG_PID": "\(getpid())"])
        let watchdog = WatchdogService(check: RadioPathCheck(radio: radio, schedule: node.heartbeat, clock: clock), notifier: notifier, logger: logger)
        let feeding = Task { try await watchdog.run() }
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(Self.watchdogSeconds))
        #expect(log.feeds(from: started, to: .now).count >= 1)

        // Long work elsewhere: matching 500,000 keys against 3,000 sightings, and a research
        // export held by a reader that never reads.
        let day = UTCDay(unixSeconds: 1_700_000_000)
        var sightings: [Sighting] = []
        for i in 0..<3_000 {
            sightings.append(Sighting(time: 1_699_999_000 + Double(i) * 0.1, rpi: try RollingProximityIdentifier(bytes: Data(repeating: UInt8(i % 251), count: 16)),
                                              aem: try AssociatedEncryptedMetadata(bytes: Data([1, 2, 3, 4])), rssi: -60))
        }
        _ = try node.store.recordScan(Scan(start: 1_699_999_000, end: 1_699_999_400, sightings: sightings))
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
        // Fed all through the matching run and the stalled export: no gap systemd would kill for.
        let longWork = ContinuousClock.now
        let matched = try await matching.value
        try await Task.sleep(for: .seconds(Self.watchdogSeconds)) // the export alone, still stalled
        #expect(exportEnded.withLock { $0 } == false) // still held by the reader that never reads
        #expect(log.longestGap(from: longWork, to: .now) < Self.watchdogSeconds, "matching ran \(matched - longWork)")

        // The controller session wedges (a write that never returns): no more feeding.
        connector.current.wedgeWrites()
        let rotation = Task { await radio.advertise(Beacon(address: BDAddress(littleEndian: [9, 8, 7, 6, 5, 0x3F]), advertisingData: [2, 1, 0x1A])) }
        // A check already under way may still feed once; from then on nothing for longer than
        // systemd waits.
        try await Task.sleep(for: .seconds(Self.watchdogSeconds / 2 + 0.2))
        let wedged = ContinuousClock.now
        try await Task.sleep(for: .seconds(Self.watchdogSeconds * 1.5))
        #expect(log.feeds(from: wedged, to: .now).isEmpty)
        // Unwedged, it is fed again.
        connector.current.unwedgeWrites()
        await rotation.value
        let unwedged = ContinuousClock.now
        // The question asked while wedged must come back before a new one is asked, and the
        // feed waits for the next check: allow a few intervals (in CI, one fixed interval of
        // 2 s was once not enough).
        var fedAgain = false
        while !fedAgain && ContinuousClock.now - unwedged < .seconds(Self.watchdogSeconds * 4) {
            try await Task.sleep(for: .milliseconds(100))
            fedAgain = !log.feeds(from: unwedged, to: .now).isEmpty
        }
        #expect(fedAgain)
        log.stop()

        feeding.cancel()
        _ = try? await feeding.value
        await transfers.cancelAllAndWait()
        _ = try? await export.value
        close(fds[0])
        try await node.disable()
        await radio.stop()
        await node.shutdown()
    }

    @Test("started beside a CPU hog on every core, the node's watchdog is fed from the start on and the radio owner answers")
    func fedFromTheStartUnderCPULoad() async throws {
        // Spinning threads at the daemon's own priority, twice as many as there are cores.
        let stopHogs = CancelFlag()
        var hogs: [Thread] = []
        for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
            let t = Thread {
                var x: UInt64 = 1
                while !stopHogs.isCancelled { for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1 } }
                if x == 0 { print(x) }
            }
            t.start()
            hogs.append(t)
        }
        defer { stopHogs.cancel() }

        let dir = try TempStoreDir()
        var s = GaendSettings()
        s.controller = .unix(path: dir.url.appendingPathComponent("scripted").path)
        s.stateDirectory = dir.url.path
        s.storeKeyFile = dir.keyPath
        s.trial = true
        let collected = CapturedLog(level: .notice)
        let logger = collected.logger
        let clock = ManualClock(wall: 1_700_000_000, monotonic: 100)
        let radio = RadioService.makeRadio(settings: s, clock: clock, logger: logger)
        let node = try GaenNode(settings: s, logger: logger, clock: clock, sync: FixedClockSync(.synchronized(source: "test")), radio: radio)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let log = FeedLog(try SystemdNotifierTests.Listener(path: path))
        defer { log.stop() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "\(Int(Self.watchdogSeconds * 1_000_000))",
                                                     "WATCHDOG_PID": "\(getpid())"])
        let check = RadioPathCheck(radio: radio, schedule: node.heartbeat, clock: clock)
        // As gaend starts: the watchdog at once, the controller session in the background
        // (the radio owner's own loop), the schedule on it.
        let started = ContinuousClock.now
        let feeding = Task { try await WatchdogService(check: check, notifier: notifier, logger: logger).run() }
        await radio.start(connector: ScriptedConnector(), configuration: HCISessionConfiguration())
        try await node.enable()
        try await Task.sleep(for: .seconds(Self.watchdogSeconds * 3))
        let end = ContinuousClock.now
        let onAir = await radio.snapshot.advertisingOnAir
        feeding.cancel()
        _ = try? await feeding.value
        stopHogs.cancel()

        #expect(onAir)
        #expect(check.radioHasAnswered)
        // Fed within a watchdog interval of the start, and never a gap systemd would kill for.
        let first = try #require(log.feeds(from: started, to: end).first)
        #expect(first - started < .seconds(Self.watchdogSeconds / 2 + 0.5), "first feed after \(first - started)")
        #expect(log.longestGap(from: started, to: end) < Self.watchdogSeconds)
        let notLive = collected.records.filter { $0.level >= .warning && $0.message.contains("radio path") }
        #expect(notLive.isEmpty, "\(notLive)")
        try await node.disable()
        await radio.stop()
        await node.shutdown()
    }

    @Test("opening a controller never holds a cooperative thread: opens blocked in connect(2) leave the pool free")
    func openingLeavesThePoolFree() throws {
        // A unix socket whose backlog is full: a connect(2) to it blocks until the listener
        // accepts or goes away (what HCIDEVDOWN does while the kernel powers a new controller on).
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-open-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in Array(path.utf8).enumerated() { raw[i] = b }
        }
        let size = socklen_t(MemoryLayout<sockaddr_un>.size)
        #expect(withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, size) } } == 0)
        #expect(listen(listener, 0) == 0)
        var fillers: [Int32] = []
        while fillers.count < 64 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
            if rc != 0 { close(fd); break }
            fillers.append(fd)
        }
        // More opens than the pool has threads, all blocked in connect(2).
        let connector = SystemTransportConnector(address: .unix(path: path))
        let width = ProcessInfo.processInfo.activeProcessorCount + 2
        final class Count: Sendable {
            let value = Mutex(0)
        }
        let ended = Count()
        for _ in 0..<width {
            Task.detached {
                _ = try? await connector.connect()
                ended.value.withLock { $0 += 1 }
            }
        }
        usleep(300_000)
        let probe = DispatchSemaphore(value: 0)
        let asked = ContinuousClock.now
        Task.detached { probe.signal() }
        let ran = probe.wait(timeout: .now() + 5) == .success
        let took = ContinuousClock.now - asked
        // The listener goes: every blocked connect ends (refused).
        close(listener)
        unlink(path)
        let deadline = ContinuousClock.now + .seconds(20)
        while ended.value.withLock({ $0 }) < width, ContinuousClock.now < deadline { usleep(20_000) }
        for fd in fillers { close(fd) }
        #expect(ended.value.withLock { $0 } == width)
        #expect(ran && took < .seconds(2), "a task waited \(took) for a cooperative thread")
    }
}
