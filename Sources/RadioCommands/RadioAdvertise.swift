import ArgumentParser
import CLISupport
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HCIHost
import HCIProtocol
import Logging

/// `gaenctl radio advertise`: GAEN beacons for one TEK with the conformant rotation schedule.
struct RadioAdvertise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Advertise GAEN beacons for a TEK, rotating address, RPI and AEM together.",
        discussion: """
            Prints one JSON line per rotation: {"time","address","rpi","aem","interval"}, where \
            time is protocol time (Unix seconds on the possibly scaled clock) and interval the \
            ENIntervalNumber the RPI was derived from. With --time-scale N the key schedule runs \
            N times faster than real time from now: an interval lasts 600/N seconds and rotations \
            stay at 10-20 minutes of that clock.
            """
    )

    @OptionGroup var options: RadioControllerOptions

    @Option(help: "The TEK as 32 hex digits.")
    var tek: String

    @Option(help: "Stop after this many seconds of real time (default: run until interrupted).")
    var duration: Double?

    @Option(help: "Seconds between watchdog probes of the controller (a probe left unanswered restarts it).")
    var watchdogInterval: Double = 20

    var probeInterval: Duration { .milliseconds(Int64(watchdogInterval * 1000)) }

    @Option(parsing: .unconditional, help: "Calibrated TX power carried in the AEM, dBm (-127...127).")
    var txPower: Int = -30

    @Option(help: "Run the schedule N times faster than real time.")
    var timeScale: Double = 1

    func validate() throws {
        try NumericOption.check(watchdogInterval, "--watchdog-interval", 0.5...NumericOption.day)
        guard timeScale >= 1, timeScale <= 100_000 else { throw ValidationError("--time-scale must be 1...100000") }
        guard (-127...127).contains(txPower) else { throw ValidationError("--tx-power must be -127...127 dBm") }
        if let duration { try NumericOption.check(duration, "--duration", 0.001...(365 * NumericOption.day)) }
    }

    func run() async throws {
        let key: TemporaryExposureKey
        do { key = try TemporaryExposureKey(hex: tek) } catch { throw ValidationError("--tek: \(error)") }
        let clock: any NodeClock = timeScale == 1 ? SystemClock() : try ScaledClock(factor: timeScale)
        var configuration = RadioOwner.Configuration()
        configuration.controllerProbeInterval = probeInterval
        let (radio, logger) = try await options.startRadio(clock: clock, configuration: configuration)
        let metadata = BluetoothMetadata.v1_0(txPower: Int8(txPower))
        // The node's schedule and rotation policy, driving the same radio effects as gaend;
        // only the advertising role is used here.
        let effects = RadioScheduleEffects(
            radio: radio, roles: .advertising,
            beacon: { slot, _ in
                var random = SecureRandom()
                do { return try GAENBeaconFactory().beacon(tek: key, interval: slot.interval, metadata: metadata, random: &random) } catch {
                    logger.error("cannot make a beacon", metadata: ["error": "\(error)"])
                    return nil
                }
            },
            rotated: { b, reading in
                printJSONLine(.object(["time": .double(reading.wall), "address": .string("\(b.beacon.address)"),
                                       "rpi": .string(b.rpi.hexString), "aem": .string(b.aem.hexString),
                                       "interval": .int(Int64(b.interval.rawValue))]))
            })
        try await runSchedule(NodeSchedule(), clock: clock, effects: effects, radio: radio, duration: duration, logger: logger)
    }
}

/// Runs the schedule until `duration` real seconds pass (or forever), then stops it (the scan
/// in progress finishes, advertising stops) and the radio.
func runSchedule(_ schedule: NodeSchedule, clock: any NodeClock, effects: RadioScheduleEffects, radio: RadioOwner,
                 duration: Double?, logger: Logger) async throws {
    let driver = ScheduleDriver(schedule: schedule, clock: clock, sync: FixedClockSync(.waived(by: "gaenctl radio advertise")), effects: effects,
                                syncCheckInterval: nil, logger: logger)
    let running = Task { try await driver.run() }
    if let duration {
        try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
    } else {
        // Until interrupted: SIGINT/SIGTERM end the process; nothing to clean up on the
        // controller that its next user's Reset does not.
        try? await running.value
    }
    running.cancel()
    try? await running.value
    await radio.stop()
}

/// `gaenctl radio scan`: one JSON line per GAEN report.
struct RadioScan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan passively and print every GAEN advertisement received.",
        discussion: """
            Prints one JSON line per report with 0xFD6F service data: {"time","address","rpi", \
            "aem","rssi"} (time in Unix seconds, RSSI in dBm as reported). Exits 0 at the end.
            """
    )

    @OptionGroup var options: RadioControllerOptions

    @Option(help: "Seconds to scan.")
    var duration: Double = 10

    @Option(help: "Seconds between watchdog probes of the controller (a probe left unanswered restarts it).")
    var watchdogInterval: Double = 20

    @Option(help: "Seconds without any report, where the recent rhythm of reports makes that implausible, after which scanning is re-enabled (and then the controller restarted).")
    var scanStallSeconds: Double = 5

    func validate() throws {
        try NumericOption.check(scanStallSeconds, "--scan-stall-seconds", 1...3600)
        try NumericOption.check(watchdogInterval, "--watchdog-interval", 0.5...NumericOption.day)
        guard duration > 0, duration <= 86_400 else { throw ValidationError("--duration must be in (0, 86400] seconds") }
    }

    func run() async throws {
        let clock = SystemClock()
        var configuration = RadioOwner.Configuration()
        configuration.controllerProbeInterval = .milliseconds(Int64(watchdogInterval * 1000))
        configuration.scanStallSeconds = scanStallSeconds
        let (radio, logger) = try await options.startRadio(clock: clock, configuration: configuration)
        let sightings = await radio.liveSightings()
        let printer = Task {
            for await s in sightings {
                printJSONLine(.object(["time": .double(s.time), "address": .string(s.addressText ?? ""),
                                       "rpi": .string(s.rpi.hexString), "aem": .string(s.aem.hexString),
                                       "rssi": .int(Int64(s.rssi))]))
            }
        }
        // The node's continuous scanning (records of up to 300 s back to back) on the same
        // radio owner as gaend: stall recovery and restore after a controller reset included.
        let schedule = NodeSchedule(scan: try ScanPolicy(duration: min(300, max(1, duration)), cadence: .continuous))
        let effects = RadioScheduleEffects(radio: radio, roles: .scanning, beacon: { _, _ in nil })
        try await runSchedule(schedule, clock: clock, effects: effects, radio: radio, duration: duration, logger: logger)
        await printer.value
        let status = await radio.snapshot
        if status.reportsDropped > 0 {
            logger.warning("reports dropped: output could not keep up", metadata: ["radio.dropped": "\(status.reportsDropped)"])
        }
    }
}
