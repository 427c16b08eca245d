import ArgumentParser
import BLEDaemon
import BoardCommands
import DBusCore
import DBusNames
import Dispatch
import GaendAPI
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
import Logging
import NodeConfig
import PlatformSupport
import ServiceLifecycle
import UnixSignals

/// gaend: the GAEN node daemon. Command-line contract in docs/gaenctl.md ("gaend") and the
/// issue: flags override the config file. The entry point is GaendMain (below).
struct Gaend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gaend",
        abstract: "The GAEN node: advertises rotating RPIs, scans, stores sightings encrypted, serves D-Bus.",
        version: GaendVersion.string)

    @Option(help: ArgumentHelp("YAML config file (gaend.conf(5)); without it /etc/gaend/gaend.conf if present, else built-in defaults.", valueName: "FILE"))
    var config: String?
    @Flag(help: "Only check whether the config's `controllers:` gives --controller to gaend: exit 0 if so, 1 if it stays with bluetoothd, 255 if the config cannot be used (gaend@.service's ExecCondition: skipped on 1, failed on 255).")
    var checkController = false
    @Option(help: ArgumentHelp("Controller: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT, unix:PATH.", valueName: "ADDR"))
    var controller: String?
    @Option(help: ArgumentHelp("State directory holding the store.", valueName: "DIR"))
    var stateDir: String?
    @Option(help: ArgumentHelp("The store's 32-byte key file (default: the systemd credential store-key).", valueName: "FILE"))
    var storeKeyFile: String?
    @Option(help: "D-Bus: system, session, or a D-Bus address.")
    var bus: String?
    @Option(help: ArgumentHelp("Well-known D-Bus name to own (default org.gaend; one per controller, e.g. org.gaend.hci0).", valueName: "NAME"))
    var busName: String?
    @Option(help: ArgumentHelp("Trust a P-256 public key for provided key files; repeatable.", valueName: "ID[:VERSION]=PEMFILE"))
    var trust: [String] = []
    @Flag(help: "Field-trial mode: research interface on, today's key exportable, rate limits off.")
    var trial = false
    // .unconditional: a value such as -1 is taken as the value (and refused with the range),
    // not as an unknown option leaving --time-scale "missing".
    @Option(parsing: .unconditional, help: "Run the whole schedule N times faster than real time (demos, tests): 1...100000.")
    var timeScale: Double?
    @Option(help: ArgumentHelp("A rehearsal's trial clock file (scale and epoch, docs/runbook.md): the node runs on the trial's time, which every process of the trial and this node after a restart read alike. Not with --time-scale.", valueName: "FILE"))
    var trialClock: String?
    @Flag(help: "Advertise and scan without a synchronised system clock.")
    var ignoreClockSync = false
    @Option(help: ArgumentHelp("Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark); rotated to FILE.1 at 16 MiB.", valueName: "FILE"))
    var capture: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func settings() throws -> GaendSettings {
        var s = GaendSettings()
        if let config {
            s = try ConfigLoader.load(path: config)
        } else if FileManager.default.fileExists(atPath: Self.defaultConfigPath) {
            s = try ConfigLoader.load(path: Self.defaultConfigPath)
        }
        if let controller {
            do { s.controller = try ControllerAddress(parsing: controller) } catch { throw NodeError.invalidArgs("controller: \(error)") }
        }
        if let stateDir { s.stateDirectory = stateDir }
        if let storeKeyFile { s.storeKeyFile = storeKeyFile }
        if let bus { s.bus = bus }
        if let busName {
            // A full name, not a suffix: what is owned is exactly what was typed (and what
            // the policy file and `gaenctl --name` talk about).
            do { try WellKnownName.validate(busName) } catch {
                throw ValidationError("--bus-name: '\(busName)' is not a D-Bus well-known name: it \(error)")
            }
            s.busName = busName
        }
        for t in trust { s.trust.append(try TrustedKeySetting(argument: t)) }
        if trial { s.trial = true }
        if let timeScale {
            guard timeScale.isFinite, timeScale >= 1, timeScale <= 100_000 else {
                throw ValidationError("--time-scale must be a number in 1...100000, got \(timeScale)")
            }
            s.timeScale = timeScale
        }
        if let trialClock { s.trialClockFile = trialClock }
        if s.trialClockFile != nil, s.timeScale != 1 {
            throw ValidationError("give --time-scale (time_scale) or --trial-clock (trial_clock), not both: the trial clock has its own scale")
        }
        if ignoreClockSync { s.clock.requireSync = false }
        if let capture {
            var c = s.capture ?? CaptureSettings(path: capture)
            c.path = capture
            s.capture = c
        }
        return s
    }

    /// Read when no --config is given; absent, the built-in defaults apply (an install needs
    /// no config file: the commented example is installed beside it as gaend.conf.example).
    static let defaultConfigPath = "/etc/gaend/gaend.conf"

    var configSource: String {
        config ?? (FileManager.default.fileExists(atPath: Self.defaultConfigPath) ? Self.defaultConfigPath : "built-in defaults (no \(Self.defaultConfigPath))")
    }

    func run() async throws {
        // Before the node's threads start: see Allocator.limitArenas.
        Allocator.limitArenas()
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("--log-level: unknown level '\(logLevel)'") }
        let journal = JournalLogHandler.standardErrorIsJournal()
        // Structured fields through journald's native socket; the stream is the fallback.
        let journalSocket = journal ? JournalSocket(path: ProcessInfo.processInfo.environment["GAEND_JOURNAL_SOCKET"] ?? JournalSocket.defaultPath) : nil
        LoggingSystem.bootstrap { label in
            if journal {
                var h = JournalLogHandler(label: label, socket: journalSocket)
                h.logLevel = level
                return h
            }
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "gaend")
        // One plain line on stderr (the journal keeps it), no log decoration: scripts match it.
        func fail(_ message: String) -> ExitCode {
            Self.writeStandardError("\(journal ? "<3>" : "")gaend: \(message)\n")
            return ExitCode(1)
        }

        let settings: GaendSettings
        do { settings = try self.settings() } catch {
            // As gaend@.service's ExecCondition, any status 1...254 only skips the unit (as for a
            // controller left to bluetoothd): a config that cannot be used must fail it, so that
            // the mistake shows in `systemctl --failed` instead of a silently skipped board.
            if checkController {
                Self.writeStandardError("\(journal ? "<3>" : "")gaend: \(error)\n")
                throw ExitCode(255)
            }
            if let e = error as? ValidationError { throw e }
            throw fail("\(error)")
        }
        if checkController {
            guard settings.controllers.includes(settings.controller) else {
                Self.writeStandardError("gaend: \(settings.controller) is not among the controllers of \(configSource); left to bluetoothd\n")
                throw ExitCode(1)
            }
            return
        }
        let address: BusAddress
        do { address = try BusAddress(parsing: settings.bus) } catch { throw fail("bus: \(error)") }
        var trustSet = KeyExportTrustSet()
        for t in settings.trust {
            let pem: String
            do { pem = try Self.readSmallText(t.publicKeyFile) } catch { throw fail("trust \(t.keyId): \(t.publicKeyFile): \(error)") }
            do {
                trustSet.add(keyId: t.keyId, version: t.keyVersion, key: try P256PublicKey(pem: pem))
            } catch { throw fail("trust \(t.keyId): \(t.publicKeyFile): \(error)") }
        }

        // The composition: one clock for the node and its radio owner; the radio service owns
        // the radio owner and starts it, the node drives it through the schedule.
        let node: GaenNode, radio: RadioService
        do {
            let clock = try settings.makeClock()
            let owner = RadioService.makeRadio(settings: settings, clock: clock, logger: logger)
            node = try GaenNode(settings: settings, logger: logger, clock: clock, radio: owner)
            radio = try RadioService(node: node)
        } catch { throw fail("\(error)") }

        if trustSet.isEmpty { logger.warning("no trusted key set (--trust): provided key files are accepted without a signature check") }
        let connection: BusConnection
        do {
            connection = try BusConnection.connect(address)
            try await connection.requestName(settings.busName)
        } catch {
            await node.shutdown()
            switch error {
            case DBusBindingError.nameTaken(let name):
                throw fail("D-Bus name \(name) is already owned by another process (another gaend on this controller?)")
            case DBusBindingError.nameNotPermitted(let name, let reason):
                throw fail("the bus policy does not let this user own the D-Bus name \(name) (dbus/org.gaend.conf allows user gaend): \(reason)")
            default:
                throw fail("D-Bus \(address): \(error)")
            }
        }
        // 16 calls in progress at most, a uid a few more than its calls passing descriptors
        // (so its other calls still get through), 4 kept for uids with none in progress, and
        // property reads apart (docs/dbus.md, "Limits").
        let limits = DBusCallLimits(maxConcurrentCalls: 16, maxCallsPerUID: min(12, settings.callers.callsInFlight + 2), reservedForOtherCallers: 4)
        let service = BusService(connection: connection, fallbackErrorName: GaendInterfaces.ErrorName.failed, callLimits: limits, logger: logger)
        let bus = NodeBus(service: service, node: node, trust: trustSet, logger: logger)
        let notifier = SystemdNotifier()
        logger.info("gaend started", metadata: [
            "config": "\(configSource)",
            "controller": "\(settings.controller)", "bus": "\(address)", "bus.name": "\(settings.busName)", "state": "\(settings.stateDirectory)",
            "trial": "\(settings.trial)", "time.scale": "\(settings.timeScale)", "trial.clock": "\(settings.trialClockFile ?? "none")",
        ])
        signal(SIGPIPE, SIG_IGN)
        // Started in order (store, radio, exposure, research, bus, watchdog) and stopped in
        // reverse on SIGTERM/SIGINT; a service that fails stops the whole group the same way.
        // A stop that takes longer than 10 s (the unit allows 15) is escalated to cancellation.
        var configuration = ServiceGroupConfiguration(
            services: NodeServices.all(node: node, radio: radio, bus: bus, connection: connection, notifier: notifier, logger: logger).map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(10)
        do { try await ServiceGroup(configuration: configuration).run() } catch { throw fail("\(error)") }
        logger.info("gaend stopped")
    }

    /// Writes `text` to stderr whole (FileHandle is full Foundation's, which gaend does not link).
    static func writeStandardError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            guard let n = try? systemCall("write", { bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }) else { return }
            bytes = bytes.dropFirst(n)
        }
    }

    struct ReadFailure: Error, CustomStringConvertible { var description: String }

    /// A small text file (a PEM key), with the system's reason when it cannot be read
    /// ("cannot read: No such file or directory"), not Foundation's error domain dump.
    static func readSmallText(_ path: String) throws -> String {
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: 1 << 16) } catch {
            switch error {
            case .cannotOpen(let reason), .cannotRead(let reason): throw ReadFailure(description: "cannot read: \(reason)")
            case .notARegularFile: throw ReadFailure(description: "\(error)")
            case .tooLarge: throw ReadFailure(description: "larger than 64 KiB: not a PEM public key")
            }
        }
        guard let text = String(bytes: bytes, encoding: .utf8) else { throw ReadFailure(description: "not UTF-8 text: not a PEM public key") }
        return text
    }
}

/// gaend's entry point: a synchronous main that runs the command on the concurrency pool and
/// parks the main thread, instead of Swift's async main. An async main ends the main thread in
/// dispatch_main(), whose pthread_exit unwinds that thread's stack (a forced unwind), reading
/// ~0.7 MiB of unwind tables (.eh_frame, .eh_frame_hdr) that then stay resident in the idle
/// daemon (scripts/measure-idle.sh). Nothing in gaend runs on the main actor, so the
/// main queue needs no draining. Exit codes are the command's: ArgumentParser exits with the
/// error's code, and a run that returns ends the process with 0 as an async main does.
@main
enum GaendMain {
    static func main() {
        // The board's gaenctl is this binary called by that name (`gaenctl` links to `gaend`):
        // one static Swift runtime and FoundationEssentials for both, which two binaries would
        // each carry (issue 31). A short-lived command: it ends the main thread in
        // dispatch_main, as an async main does (the footprint reason below is the daemon's).
        if PathName.name(of: CommandLine.arguments.first ?? "") == "gaenctl" {
            Task.detached { await BoardGaenCtl.main() }
            dispatchMain()
        }
        // Started before the main thread blocks its signals: the pool's first threads are made
        // from this one and inherit its mask, as under dispatch_main.
        Task.detached {
            await Gaend.main()
            exit(0)
        }
        parkMainThread()
    }

    /// What dispatch_main() does to the main thread before it leaves, without leaving: block
    /// the asynchronous signals (SIGTERM and SIGINT go to ServiceLifecycle's dispatch sources,
    /// a process-directed signal to a thread that has not blocked it), then wait for ever.
    /// Faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS) and SIGPIPE/SIGPROF stay
    /// deliverable, as dispatch_main leaves them.
    static func parkMainThread() -> Never {
        var mask = sigset_t()
        sigfillset(&mask)
        for fault in [SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE, SIGPROF] { sigdelset(&mask, fault) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        while true { pause() }
    }
}
