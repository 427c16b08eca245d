import BLEDaemon
import BenchSupport
import ENProtocol
import Foundation
import Synchronization
import HCIHost
import Logging
import GaenStore
#if canImport(Glibc)
import Glibc
#endif

/// The node core's share of idle cost: the schedule driver, the radio effects gaend runs
/// (`RadioScheduleEffects` on a `RadioOwner`, HCI commands and reports encoded and decoded
/// against an in-process controller), the key schedule and the encrypted store, running the
/// nominal schedule (rotations every 10-20 min, a 4 s scan every 210-300 s, one record per
/// scan with `--reports` GAEN reports) on a clock `--scale` times faster than real time.
/// Prints CPU seconds per simulated hour and resident memory. The radio link itself and
/// D-Bus costs come on top.
///
/// usage: GaenStoreBench schedule-idle [--scale 120] [--seconds 30] [--reports 5] [--dir DIR]
enum ScheduleIdleBench {
    static func run(_ args: [String]) throws {
        var scale = 120.0, seconds = 30.0, reports = 5
        var base = FileManager.default.temporaryDirectory.path
        try parseBenchOptions(args, [
            "--scale": { scale = Double($0) ?? scale },
            "--seconds": { seconds = Double($0) ?? seconds },
            "--reports": { reports = Int($0) ?? reports },
            "--dir": { base = $0 },
        ])
        // The benchmarks' entry point is synchronous; this one runs actors.
        let result = ResultBox()
        let done = DispatchSemaphore(value: 0)
        Task { [scale, seconds, reports, base] in
            do { try await measure(scale: scale, seconds: seconds, reports: reports, base: base) } catch { result.error = error }
            done.signal()
        }
        done.wait()
        if let error = result.error { throw error }
    }

    static func measure(scale: Double, seconds: Double, reports: Int, base: String) async throws {
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
        let controller = try BenchController(reportsPerScan: reports)
        let session = HCIControllerSession(connector: controller, logger: quiet)
        try await session.start()
        let radio = RadioOwner(clock: clock, logger: quiet)
        await radio.attach(session)
        let counts = BenchCounts()
        let effects = RadioScheduleEffects(
            radio: radio,
            beacon: { slot, reading in
                do {
                    let tek = try store.key(for: slot.day, now: reading.wall)
                    var random = SecureRandom()
                    counts.rotated()
                    return try GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: .v1_0(txPower: -30), random: &random)
                } catch {
                    FileHandle.standardError.write(Data("schedule-idle: \(error)\n".utf8))
                    return nil
                }
            },
            scanned: { scan in
                var record = scan
                record.rssiCorrection = 0
                do { try store.recordScan(record) } catch {
                    FileHandle.standardError.write(Data("schedule-idle: \(error)\n".utf8))
                }
            })
        let driver = ScheduleDriver(schedule: NodeSchedule(), clock: clock, sync: FixedClockSync(.waived(by: "the benchmark")), effects: effects, logger: quiet)

        let rss0 = residentKiB()
        let cpu0 = ProcessUsage.cpuSeconds()
        let task = Task { try await driver.run() }
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        task.cancel()
        try? await task.value
        let status = await radio.snapshot
        await radio.stop()
        let cpu = ProcessUsage.cpuSeconds() - cpu0
        let hours = seconds * scale / 3600
        let stored = try store.counts()
        try store.close()
        print("schedule-idle: \(String(format: "%.1f", hours)) simulated hours at \(Int(scale))x in \(Int(seconds)) s, in-process controller")
        print("  rotations \(counts.rotations) (on air \(status.rotations), failed operations \(status.failedOperations), addresses refused \(controller.refused)), scans recorded \(stored.scans), sightings \(stored.sightings), keys \(stored.keys)")
        print(String(format: "  CPU %.3f s in all, %.4f s per simulated hour (%.5f%% of one core at 1x)",
                     cpu, cpu / hours, cpu / hours / 36))
        print("  resident memory: \(rss0) KiB before the driver, \(residentKiB()) KiB after, peak \(ProcessUsage.peakKiB()) KiB")
    }

    static func residentKiB() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
}

final class ResultBox: @unchecked Sendable { var error: (any Error)? }

/// Beacons made, counted from the effects' closure.
final class BenchCounts: Sendable {
    private let n = Mutex(0)
    func rotated() { n.withLock { $0 += 1 } }
    var rotations: Int { n.withLock { $0 } }
}
