import ENProtocol
import GaenApp
import GaendAPI
import GaendClient
import HCIProtocol

/// The exposition of one status reading: metric families in a fixed order, each with HELP and
/// TYPE, every series labelled with the node's identity.
public struct MetricsExposition {
    public let status: GaendNodeStatus
    public let busName: String
    public var app: AppStatus? = nil

    public init(status: GaendNodeStatus, busName: String, app: AppStatus? = nil) {
        self.status = status
        self.busName = busName
        self.app = app
    }

    /// `hci0` of `org.gaend.hci0`; a name without an instance part gives itself.
    public static func instance(_ name: String) -> String {
        let full = (try? GaendDiscovery.expand(name)) ?? name
        let prefix = GaendBus.busName + "."
        return full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : ""
    }

    /// The controller label: the bus instance (what systemd's gaend@hci0 runs), else the
    /// configured controller when it is a local name (hci0), never a host, port or path.
    public var controllerLabel: String {
        let fromBus = Self.instance(busName)
        if !fromBus.isEmpty { return fromBus }
        let name = status.controller?.name ?? ""
        return name.allSatisfy({ $0.isLetter || $0.isNumber }) ? name : ""
    }

    /// A label value as the text format allows it: backslash, quote and line feed escaped; any
    /// other control character (a carriage return, a NUL from a config) replaced by U+FFFD, for
    /// which the format has no escape and which promtool refuses raw. Scalars, not Characters:
    /// "\r\n" is one Character.
    public static func escape(_ value: String) -> String {
        var out = String.UnicodeScalarView()
        for c in value.unicodeScalars {
            switch c {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\"": out.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            default:
                if c.value < 0x20 || c.value == 0x7F || (0x80...0x9F).contains(c.value) { out.append("\u{FFFD}") } else { out.append(c) }
            }
        }
        return String(out)
    }

    public static func labels(controller: String, node: String, site: String, extra: [(String, String)] = []) -> String {
        let all = [("controller", controller), ("node", node), ("site", site)] + extra
        return "{" + all.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
    }

    /// The exposition of a node that does not answer.
    public static func down(labels: String) -> String {
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

    public static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    public var text: String {
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
            gauge("gaend_app_packages_waiting", "Key packages fetched but not yet provided (nor refused by gaend).", Double(app.packagesWaiting))
            gauge("gaend_app_packages_refused", "Held key packages gaend refused (kept out of provide calls).", Double(app.packagesRefused ?? 0))
            // 0 when nothing waits, so a rule can tell "none" from "since long ago".
            gauge("gaend_app_oldest_waiting_package_timestamp_seconds",
                  "When the oldest package still waiting for gaend was fetched, Unix seconds (0: none waits).",
                  Double(app.oldestWaitingFetchedAt ?? 0))
            gauge("gaend_app_last_provide_timestamp_seconds", "The last ProvideDiagnosisKeys call gaend accepted, Unix seconds (0: none yet).",
                  Double(app.lastProvidedAt ?? 0))
            var refused = Family("gaend_app_packages_refused_total", "counter",
                                 "Key packages refused: at download (signature, size, window, revoked) or by gaend (ProvideDiagnosisKeys).")
            refused.add(with([("by", "app")]), Double(app.refusedDownloadsTotal ?? 0))
            refused.add(with([("by", "gaend")]), Double(app.refusedByGaendTotal ?? 0))
            families.append(refused)
            if let risk = app.risk {
                var f = Family("gaend_app_risk_level", "gauge", "The app's risk level: 1 for the current one.")
                for level in ["low", "high", "unknown"] { f.add(with([("level", level)]), risk.level == level ? 1 : 0) }
                families.append(f)
            }
        }
        return families.map(\.text).joined()
    }
}
