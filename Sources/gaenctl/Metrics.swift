import ArgumentParser
import DBusCore
import Foundation
import GaenApp
import GaendClient
import GaendAPI
import HCIProtocol
import TrialKit

/// `gaenctl metrics`: the node's state in the Prometheus text exposition format, for
/// node_exporter's textfile collector (gaend opens no listening socket; a timer writes the file).
struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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

    @OptionGroup var bus: BusOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE (atomically) instead of standard output.", valueName: "FILE"))
    var output: String?

    @Option(help: ArgumentHelp("The app's state directory, for its last sync and risk (default: /var/lib/gaend-app/NAME when it exists).",
                               valueName: "DIR"))
    var appState: String?

    func run() async throws {
        let text: String
        var failure: String?
        do {
            let client = try await bus.connectToGaend()
            defer { client.bus.close() }
            let status = try await client.status()
            // The app half's status file, when the node runs it (unreadable: a note, no app metrics).
            let directory = appState ?? "/var/lib/gaend-app/" + AppCommand.instanceName(client.destination)
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
        guard let output, let handle = FileHandle(forReadingAtPath: output) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 1 << 20), let text = String(data: data, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("gaend_up{") {
            guard let end = line.lastIndex(of: "}") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: "gaend_up".count)...end])
        }
        return nil
    }
}

/// The exposition of one status reading: metric families in a fixed order, each with HELP and
/// TYPE, every series labelled with the node's identity.
struct MetricsExposition {
    let status: GaendNodeStatus
    let busName: String
    var app: AppStatus? = nil

    /// `hci0` of `org.gaend.hci0`; a name without an instance part gives itself.
    static func instance(_ name: String) -> String {
        let full = (try? GaendDiscovery.expand(name)) ?? name
        let prefix = GaendBus.busName + "."
        return full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : ""
    }

    /// The controller label: the bus instance (what systemd's gaend@hci0 runs), else the
    /// configured controller when it is a local name (hci0), never a host, port or path.
    var controllerLabel: String {
        let fromBus = Self.instance(busName)
        if !fromBus.isEmpty { return fromBus }
        let name = status.controller?.name ?? ""
        return name.allSatisfy({ $0.isLetter || $0.isNumber }) ? name : ""
    }

    static func escape(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func labels(controller: String, node: String, site: String, extra: [(String, String)] = []) -> String {
        let all = [("controller", controller), ("node", node), ("site", site)] + extra
        return "{" + all.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
    }

    /// The exposition of a node that does not answer.
    static func down(labels: String) -> String {
        var out = Family("gaend_up", "gauge", "Whether gaend answered on D-Bus (1) or not (0).")
        out.add(labels, 0)
        return out.text
    }

    struct Family {
        let name: String
        var lines: [String]
        init(_ name: String, _ type: String, _ help: String) {
            self.name = name
            lines = ["# HELP \(name) \(help)", "# TYPE \(name) \(type)"]
        }
        mutating func add(_ labels: String, _ value: Double, suffix: String = "") {
            lines.append("\(name)\(suffix)\(labels) \(MetricsExposition.number(value))")
        }
        var text: String { lines.joined(separator: "\n") + "\n" }
    }

    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    var text: String {
        let s = status
        let node = s.node ?? "", site = s.site ?? ""
        let base = Self.labels(controller: controllerLabel, node: node, site: site)
        func with(_ extra: [(String, String)]) -> String { Self.labels(controller: controllerLabel, node: node, site: site, extra: extra) }
        var families: [Family] = []
        func gauge(_ name: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            var f = Family(name, "gauge", help)
            f.add(base, value)
            families.append(f)
        }
        func counter(_ name: String, _ help: String, _ value: UInt64?, labels: [(String, String)] = []) {
            guard let value else { return }
            var f = Family(name, "counter", help)
            f.add(with(labels), Double(value))
            families.append(f)
        }
        func flag(_ b: Bool?) -> Double? { b.map { $0 ? 1 : 0 } }

        gauge("gaend_up", "Whether gaend answered on D-Bus (1) or not (0).", 1)
        var build = Family("gaend_build_info", "gauge", "gaend's version (value 1).")
        build.add(with([("version", s.version)]), 1)
        families.append(build)
        if let c = s.controller {
            var info = Family("gaend_controller_info", "gauge", "The Bluetooth controller's manufacturer and Core versions (value 1; its address is never a label).")
            info.add(with([("manufacturer", c.manufacturerName ?? (c.manufacturer.map { CompanyIdentifier.name($0) } ?? "")),
                           ("hci_version", c.hciVersion.map { CoreVersion.name($0) } ?? ""),
                           ("lmp_version", c.lmpVersion.map { CoreVersion.name($0) } ?? "")]), 1)
            families.append(info)
        }
        gauge("gaend_enabled", "Whether the node is started (Start/Stop).", flag(s.enabled))
        gauge("gaend_trial_mode", "Whether the node runs in field-trial mode.", flag(s.trialMode))
        var states = Family("gaend_status", "gauge", "The node's status conditions: 1 for each that holds.")
        for name in GaendStatus.all { states.add(with([("status", name)]), s.status.contains(name) ? 1 : 0) }
        families.append(states)
        gauge("gaend_clock_synchronised", "Whether the system clock is synchronised (no clock-unsynchronised status).",
              flag(!s.status.contains(GaendStatus.clockUnsynchronised)))
        gauge("gaend_advertising_on_air", "Whether the controller confirmed the beacon on air.", flag(s.advertisingOnAir))
        gauge("gaend_scanning_on_air", "Whether the controller confirmed scanning on (off between periodic scans).", flag(s.scanningOnAir))
        counter("gaend_advertisements_total", "Beacons (address, RPI, AEM) the schedule made since gaend started.", s.advertisementCount)
        counter("gaend_rotations_total", "Beacons the controller confirmed on air since gaend started.", s.rotationCount)
        counter("gaend_rotations_failed_total", "Radio operations that failed while the wanted beacon was not on air (retried).", s.failedRotations)
        counter("gaend_radio_failures_total", "Radio operations that failed and were retried.", s.radioFailures)
        counter("gaend_advertising_on_air_seconds_total", "Seconds the wanted beacon was on air (node clock).", s.secondsOnAir)
        counter("gaend_advertising_off_air_seconds_total", "Seconds a beacon was wanted but not on air (node clock).", s.secondsOffAir)
        counter("gaend_scans_total", "Scans completed and recorded since gaend started.", s.scanCount)
        counter("gaend_sightings_total", "Exposure notification advertisements recorded since gaend started.", s.sightingCount)
        gauge("gaend_last_scan_timestamp_seconds", "End of the last recorded scan, Unix seconds (0: none since gaend started).",
              Double(s.lastScanTime) / 1000)
        counter("gaend_reports_ignored_total", "Advertising reports without 0xFD6F service data (counted, not kept).", s.reportsIgnored)
        if s.droppedScans != nil || s.reportsDropped != nil {
            var scans = Family("gaend_scans_dropped_total", "counter", "Scan records dropped, by cause.")
            if let d = s.droppedScans { scans.add(with([("cause", "disk_full")]), Double(d)) }
            var sightings = Family("gaend_sightings_dropped_total", "counter", "Sightings dropped, by cause.")
            if let d = s.droppedSightings { sightings.add(with([("cause", "disk_full")]), Double(d)) }
            var reports = Family("gaend_reports_dropped_total", "counter", "Advertising reports dropped, by cause.")
            if let d = s.reportsDropped { reports.add(with([("cause", "buffer_full")]), Double(d)) }
            families += [scans, sightings, reports].filter { $0.lines.count > 2 }
        }
        gauge("gaend_quarantined_records", "Store records that failed authentication or did not decode, set aside.", s.quarantinedRecords.map { Double($0) })
        gauge("gaend_store_size_bytes", "Bytes the store's files take on disk.", s.storeBytes.map { Double($0) })
        gauge("gaend_provide_diagnosis_keys_remaining", "ProvideDiagnosisKeys calls left today (4294967295: no limit).",
              Double(s.provideDiagnosisKeysRemaining))
        gauge("gaend_matching", "Whether provided key files are being matched.", flag(s.matching))
        if let runs = s.matchingRuns, let ms = s.matchingTime {
            var f = Family("gaend_matching_duration_seconds", "summary", "Matching runs and their time (node clock).")
            f.add(base, Double(ms) / 1000, suffix: "_sum")
            f.add(base, Double(runs), suffix: "_count")
            families.append(f)
        }
        gauge("gaend_key_files", "Provided key files the last matching run matched against.", s.keyFiles.map { Double($0) })
        gauge("gaend_exposure_windows", "Exposure windows the last matching run stored.", s.exposureWindows.map { Double($0) })
        counter("gaend_watchdog_feeds_total", "Notifications sent to the systemd watchdog since gaend started.", s.watchdogFeeds)
        gauge("gaend_calibration_tx_power_dbm", "The TX power the AEM carries.", s.txPower.map { Double($0) })
        gauge("gaend_calibration_rssi_correction_db", "The RSSI correction added to every sighting.", s.rssiCorrection.map { Double($0) })
        gauge("gaend_calibration_confidence", "The calibration's confidence (0 lowest .. 3 high).", s.calibrationConfidence.map { Double($0) })
        if let app {
            // The app half (gaenctl app sync): its last run, what it holds, the risk level.
            if let sync = app.lastSync {
                gauge("gaend_app_last_sync_timestamp_seconds", "End of the app's last key sync run, Unix seconds.", Double(sync.finishedAt))
                gauge("gaend_app_last_sync_success", "Whether the app's last key sync run completed (1) or stopped with an error (0).",
                      sync.error.isEmpty ? 1 : 0)
            }
            gauge("gaend_app_packages_held", "Key packages the app holds.", Double(app.packagesHeld))
            gauge("gaend_app_packages_waiting", "Key packages listed or fetched but not yet provided.", Double(app.packagesWaiting))
            if let risk = app.risk {
                var f = Family("gaend_app_risk_level", "gauge", "The app's risk level: 1 for the current one.")
                for level in ["low", "high", "unknown"] { f.add(with([("level", level)]), risk.level == level ? 1 : 0) }
                families.append(f)
            }
        }
        return families.map(\.text).joined()
    }
}
