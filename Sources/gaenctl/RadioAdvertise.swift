import ArgumentParser
import BLEDaemon
import ENProtocol
import Foundation
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
        guard watchdogInterval >= 0.5 else { throw ValidationError("--watchdog-interval must be at least 0.5 seconds") }
        guard timeScale >= 1, timeScale <= 100_000 else { throw ValidationError("--time-scale must be 1...100000") }
        guard (-127...127).contains(txPower) else { throw ValidationError("--tx-power must be -127...127 dBm") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
    }

    func run() async throws {
        let key: TemporaryExposureKey
        do { key = try TemporaryExposureKey(hex: tek) } catch { throw ValidationError("--tek: \(error)") }
        let (session, logger) = try await options.startSession()
        let advertiser = BeaconAdvertiser(session: session, logger: logger)
        let clock = RadioClock.system(scale: timeScale)
        let until = duration.map { clock.now() + $0 * timeScale }

        // A controller reset (reconnect after EOF or Hardware Error) clears advertising: show
        // the same beacon again so the address/RPI pairing stays intact.
        let restorer = Task {
            for await event in session.events {
                if case .reconnected = event { try? await advertiser.restore() }
            }
        }
        let watchdog = Task { await ControllerWatchdog(probeInterval: probeInterval).run(session: session, logger: logger) }
        defer { restorer.cancel(); watchdog.cancel() }
        do {
            try await GAENAdvertisingRotation().run(
                advertiser: advertiser, clock: clock, metadata: .v1_0(txPower: Int8(txPower)), logger: logger,
                keyForDay: { _ in key }, until: until,
                onRotation: { b, t in
                    printJSONLine(.object(["time": .double(t), "address": .string("\(b.beacon.address)"),
                                           "rpi": .string(b.rpi.hexString), "aem": .string(b.aem.hexString),
                                           "interval": .int(Int64(b.interval.rawValue))]))
                })
        } catch {
            try? await advertiser.stop()
            await session.stop()
            throw CLIFailure("advertising failed: \(error)")
        }
        try? await advertiser.stop()
        await session.stop()
    }
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

    func validate() throws {
        guard duration > 0, duration <= 86_400 else { throw ValidationError("--duration must be in (0, 86400] seconds") }
    }

    func run() async throws {
        let (session, logger) = try await options.startSession()
        let scanner = Scanner(session: session, logger: logger, now: { Date().timeIntervalSince1970 })
        await scanner.start()
        let reports: AsyncStream<TimedReport>
        do { reports = try await scanner.scanContinuously() } catch {
            await session.stop()
            throw CLIFailure("cannot start scanning: \(error)")
        }
        // Watchdogs: a controller that stops answering is restarted; scanning that goes silent
        // is re-enabled, and restarted with the controller if that does not help. After any
        // controller reset, scanning is enabled again.
        let monitor = ScanMonitor()
        let restorer = Task {
            for await event in session.events {
                if case .reconnected = event {
                    try? await scanner.resumeContinuous()
                    await monitor.restartWindow(at: Date().timeIntervalSince1970)
                }
            }
        }
        let watchdog = Task { await ControllerWatchdog(probeInterval: .milliseconds(Int64(watchdogInterval * 1000))).run(session: session, logger: logger) }
        let stallWatch = Task {
            var reenabled = false
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                let now = Date().timeIntervalSince1970
                guard await monitor.isStalled(now: now) else { continue }
                if !reenabled {
                    logger.warning("scanning went silent; enabling it again")
                    try? await scanner.resumeContinuous()
                    reenabled = true
                } else {
                    logger.error("scanning still silent; restarting the controller")
                    await session.restart(reason: "scanning silent")
                    reenabled = false
                }
                await monitor.restartWindow(at: now)
            }
        }
        defer { restorer.cancel(); watchdog.cancel(); stallWatch.cancel() }
        let printer = Task {
            for await r in reports {
                await monitor.report(at: r.time)
                guard let s = Sighting(r) else { continue }
                printJSONLine(.object(["time": .double(s.time), "address": .string("\(s.address)"),
                                       "rpi": .string(s.rpi.hexString), "aem": .string(s.aem.hexString),
                                       "rssi": .int(Int64(s.rssi))]))
            }
        }
        try? await Task.sleep(for: .seconds(duration))
        await scanner.stop()
        await printer.value
        await session.stop()
    }
}

/// Shares the stall detector between the report printer and the watchdog loop.
actor ScanMonitor {
    private var detector = ScanStallDetector()
    func report(at time: Double) { detector.report(at: time) }
    func isStalled(now: Double) -> Bool { detector.isStalled(now: now) }
    func restartWindow(at time: Double) { detector.restartWindow(at: time) }
}
