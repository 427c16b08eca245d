import ArgumentParser
import CLISupport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import HCIHost
import Logging

/// `gaenctl radio ...`: drive a Bluetooth controller directly through HCI, without the daemon
/// (board bring-up, tests). Subcommands live in their own files (RadioProbe.swift, ...).
package struct Radio: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        abstract: "Drive a Bluetooth controller directly through HCI (no daemon).",
        discussion: "Controller addresses: hciN | hci:N | serial:/dev/ttyX[:baud] | tcp:HOST:PORT | unix:PATH (see docs/radio.md).",
        subcommands: [RadioProbe.self, RadioAdvertise.self, RadioScan.self]
    )

    package init() {}
}

/// Options every radio subcommand shares.
struct RadioControllerOptions: ParsableArguments {
    @Option(name: .long, help: "Controller address: hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH.")
    var controller: String

    @Option(name: .long, help: "Seconds to wait for each HCI command's completion.")
    var commandTimeout: Double = 2

    @Flag(name: .long, help: "Log the HCI dialogue (btmon style) to standard error.")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("Write every HCI packet, both directions, to FILE as btsnoop (btmon -r, Wireshark).", valueName: "FILE"))
    var capture: String?

    @Option(name: .long, help: ArgumentHelp("Rotate the capture to FILE.1 at this size (MiB).", valueName: "MIB"))
    var captureMaxMb: Int = CaptureSettings.defaultMaxBytes >> 20

    func validate() throws {
        _ = try address()
        try NumericOption.check(commandTimeout, "--command-timeout", 0.001...3600)
        guard (1...4096).contains(captureMaxMb) else { throw ValidationError("--capture-max-mb must be 1...4096") }
    }

    /// The controller's connector, recording into `--capture` when given.
    func connector() throws -> any HCITransportConnector {
        let plain = SystemTransportConnector(address: try address())
        guard let capture else { return plain }
        do {
            let writer = try BTSnoopWriter(settings: CaptureSettings(path: capture, maxBytes: captureMaxMb << 20))
            CaptureRegistry.keep(writer)
            return CapturingConnector(plain, writer: writer)
        } catch {
            throw CLIFailure("--capture \(capture): \(error)")
        }
    }

    func address() throws -> ControllerAddress {
        do {
            return try ControllerAddress(parsing: controller)
        } catch let e as ControllerAddressError {
            throw ValidationError(e.description)
        }
    }

    var timeout: Duration { .milliseconds(Int64(commandTimeout * 1000)) }

    /// Logs go to standard error so that standard output carries only JSON.
    func logger() -> Logger {
        var logger = Logger(label: "gaenctl.radio") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .trace : .warning
        return logger
    }
}

extension RadioControllerOptions {
    /// Connects and brings the controller up; a failure is one clear line naming the controller.
    func startSession() async throws -> (HCIControllerSession, Logger) {
        let log = self.logger()
        var configuration = HCISessionConfiguration()
        configuration.commandTimeout = timeout
        let session = HCIControllerSession(connector: try connector(),
                                           configuration: configuration, logger: log)
        do { _ = try await session.start() } catch { throw CLIFailure("cannot use controller \(controller): \(error)") }
        return (session, log)
    }

    /// A started session under a radio owner (the same owner gaend uses).
    func startRadio(clock: any NodeClock, configuration: RadioOwner.Configuration) async throws -> (RadioOwner, Logger) {
        let (session, log) = try await startSession()
        let radio = RadioOwner(clock: clock, configuration: configuration, logger: log)
        await radio.attach(session)
        return (radio, log)
    }
}

/// Captures gaenctl opened, flushed to disk before the process exits (`GaenCtl.main` calls
/// `closeAll`), whichever way the command ends.
/// Ctrl-C or SIGTERM (a radio command left running) also flushes them before exiting.
package enum CaptureRegistry {
    private static let state = Mutex<(writers: [BTSnoopWriter], sources: [DispatchSourceSignal])>(([], []))
    static func keep(_ w: BTSnoopWriter) {
        state.withLock { state in
            state.writers.append(w)
            guard state.sources.isEmpty else { return }
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                s.setEventHandler {
                    closeAll()
                    exit(128 + sig)
                }
                s.resume()
                state.sources.append(s)
            }
        }
    }
    package static func closeAll() {
        state.withLock { state in
            for w in state.writers { w.close() }
            state.writers = []
        }
    }
}
