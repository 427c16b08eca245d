import ArgumentParser
import DBusCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaenApp
import GaendClient
import GaendAPI
import GaenMetrics
import PlatformSupport
import TrialFormats

/// `gaenctl metrics`: the node's state in the Prometheus text exposition format, for
/// node_exporter's textfile collector (gaend opens no listening socket; a timer writes the file).
package struct MetricsCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the node's state as Prometheus metrics (text exposition format).",
        discussion: """
            One GetAll of org.gaend.ExposureNotification1, so every counter is what `gaenctl status` \
            says at the same moment. Every series carries the labels controller (the instance: hci0 \
            of org.gaend.hci0), node and site (research.node, research.site); none carries an address \
            or an RPI. With -o FILE the file is replaced atomically (a temporary file in the same \
            directory, renamed; mode 0644), as node_exporter's textfile collector reads it \
            (systemd/gaend-metrics@.timer writes /var/lib/prometheus/node-exporter/gaend-INSTANCE.prom). \
            When gaend does not answer, gaend_up is 0 (with the labels of the file it replaces, if any) \
            and the command exits 1. Metric names and alerts: docs/fleet.md.
            """
    )

    package init() {}

    @OptionGroup var bus: BusOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE (atomically) instead of standard output.", valueName: "FILE"))
    var output: String?

    @Option(help: ArgumentHelp("The app's state directory, for its last sync and risk (default: /var/lib/gaend-app/NAME when it exists).",
                               valueName: "DIR"))
    var appState: String?

    package func run() async throws {
        let text: String
        var failure: String?
        do {
            let client = try await bus.connectToGaend()
            defer { client.bus.close() }
            let status = try await client.status()
            // The app half's status file, when the node runs it (unreadable: a note, no app metrics).
            let directory = appState ?? AppPaths.stateDirectory(nil, instance: client.destination, environment: [:])
            var app: AppStatus?
            do { app = try AppStatus.read(directory: directory) } catch { printError("gaenctl metrics: note: \(directory): \(error)") }
            text = MetricsExposition(status: status, busName: client.destination, app: app).text
        } catch {
            failure = "\(error)"
            text = MetricsExposition.down(labels: previousLabels() ?? MetricsExposition.labels(controller: bus.name.map(MetricsExposition.instance) ?? "", node: "", site: ""))
        }
        if let output {
            do { try AtomicOutputFile.write(Data(text.utf8), to: output, mode: 0o644, durable: false) } catch {
                printError("gaenctl metrics: \(error)")
                throw ExitCode(1)
            }
        } else {
            print(text, terminator: "")
        }
        if let failure {
            printError("gaenctl metrics: gaend does not answer (gaend_up 0): \(failure)")
            throw ExitCode(1)
        }
    }

    /// The label set of `gaend_up` in the file being replaced, so that a node that stopped
    /// answering keeps its series' identity (node, site) in the alert.
    private func previousLabels() -> String? {
        // Bounded, and only a regular file (SmallFile): a FIFO in its place is not waited on.
        guard let output, let bytes = try? SmallFile.read(output, limit: 1 << 20), let text = String(validating: bytes, as: UTF8.self) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("gaend_up{") {
            guard let end = line.lastIndex(of: "}") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: "gaend_up".count)...end])
        }
        return nil
    }
}

