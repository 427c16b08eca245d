import BLEDaemon
import ENProtocol
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The node core's share of idle cost: the schedule driver, key schedule and encrypted store
/// running the nominal schedule (rotations every 10-20 min, a 4 s scan every 210-300 s, one
/// record per scan) with no radio, on a clock `--scale` times faster than real time. Prints
/// CPU seconds per simulated hour and resident memory. Radio and D-Bus costs come on top.
///
/// usage: GaenBench schedule-idle [--scale 120] [--seconds 30] [--reports 5] [--dir DIR]
enum ScheduleIdleBench {
    static func run(_ args: [String]) throws {
        var scale = 120.0, seconds = 30.0, reports = 5
        var base = FileManager.default.temporaryDirectory.path
        var i = 0
        while i < args.count {
            let value = i + 1 < args.count ? args[i + 1] : ""
            switch args[i] {
            case "--scale": scale = Double(value) ?? scale
            case "--seconds": seconds = Double(value) ?? seconds
            case "--reports": reports = Int(value) ?? reports
            case "--dir": base = value
            default: throw BenchError.usage("unknown option \(args[i])")
            }
            i += 2
        }
        let dir = (base as NSString).appendingPathComponent("gaend-idle-\(getpid())")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var random = SecureRandom()
        let key = try StoreKey.random(using: &random)
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        let store = try NodeStore(configuration: StoreConfiguration(path: (dir as NSString).appendingPathComponent("store.sqlite")),
                                  key: key, logger: quiet)
        let clock = try ScaledClock(factor: scale)
        let effects = BenchEffects(store: store, reportsPerScan: reports)
        let driver = ScheduleDriver(schedule: NodeSchedule(), clock: clock, sync: FixedClockSync(.waived), effects: effects, logger: quiet)

        let rss0 = residentKiB()
        let cpu0 = IngestBench.cpuSeconds()
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            defer { done.signal() }
            try await driver.run()
        }
        Thread.sleep(forTimeInterval: seconds)
        task.cancel()
        done.wait()
        let cpu = IngestBench.cpuSeconds() - cpu0
        let hours = seconds * scale / 3600
        let counts = try store.counts()
        try store.close()
        print("schedule-idle: \(String(format: "%.1f", hours)) simulated hours at \(Int(scale))x in \(Int(seconds)) s, no radio")
        print("  rotations \(effects.rotations), scans recorded \(counts.scans), sightings \(counts.sightings), keys \(counts.keys)")
        print(String(format: "  CPU %.3f s in all, %.4f s per simulated hour (%.5f%% of one core at 1x)",
                     cpu, cpu / hours, cpu / hours / 36))
        print("  resident memory: \(rss0) KiB before the driver, \(residentKiB()) KiB after, peak \(peakKiB()) KiB")
    }

    static func residentKiB() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }

    static func peakKiB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss
    }
}

/// Does what the node does per action, minus the radio: derives the advertisement (the day's
/// key from the store) and records each scan with `reportsPerScan` synthetic sightings.
final class BenchEffects: ScheduleEffects, @unchecked Sendable {
    let store: NodeStore
    let source: AdvertisementSource
    let reportsPerScan: Int
    private let lock = NSLock()
    private var rotationCount = 0
    var rotations: Int { lock.withLock { rotationCount } }

    init(store: NodeStore, reportsPerScan: Int) {
        self.store = store
        self.reportsPerScan = reportsPerScan
        source = AdvertisementSource(store: store, metadata: .v1_0(txPower: -30))
    }

    func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        do {
            switch action {
            case .rotate(let slot):
                _ = try source.advertisement(for: slot, now: reading.wall)
                lock.withLock { rotationCount += 1 }
            case .finishScan(let scan):
                var r = StressRecords.scan(number: 1, reports: reportsPerScan)
                r.start = scan.startWall
                r.end = scan.endWall
                try store.recordScan(r)
            case .stopAdvertising, .startScan: break
            }
        } catch {
            FileHandle.standardError.write(Data("schedule-idle: \(error)\n".utf8))
        }
    }
}
