import ArgumentParser
import DBusCore
import ENProtocol
import GaendAPI
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
import HCIProtocol
import NodeConfig
import PlatformSupport

/// `gaenctl status`: the node's state from org.gaend.ExposureNotification1's properties.
package struct Status: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        abstract: "Show gaend's state: enabled, status, counts of advertisements, scans and sightings.",
        discussion: """
            With --json prints one object {"busName","version","enabled","status":[...],"trialMode", \
            "advertisementCount","scanCount","sightingCount","lastScanTime","provideDiagnosisKeysRemaining", \
            "quarantinedRecords","droppedScans","droppedSightings","clockSync","advertisingOnAir","scanningOnAir", \
            "radioFailures","reportsIgnored","reportsDropped","controller":{"name","address","manufacturer", \
            "manufacturerName","hciVersion","hciVersionName","hciSubversion","lmpVersion","lmpVersionName", \
            "lmpSubversion"},"advertisingAddress","currentRpi","txPower","rssiCorrection","calibrationConfidence", \
            "node","site","matching","rotationCount","failedRotations","secondsOnAir","secondsOffAir", \
            "watchdogFeeds","matchingRuns","matchingTime","keyFiles","exposureWindows","storeBytes"} \
            (busName: the name it talked to, see --name; lastScanTime in ms since the Unix epoch, \
            0 if none; quarantinedRecords: store records that failed authentication (skipped), committed \
            records found lost at a start, and damaged stores set aside (docs/store.md); \
            droppedScans/droppedSightings: lost while the disk was full; advertisingOnAir/scanningOnAir: \
            the controller confirmed them; radioFailures: radio operations retried; reportsIgnored: \
            non-GAEN reports; reportsDropped: reports lost to full buffers; the last nine are absent \
            from an older gaend; controller: the controller's facts, only name while it is missing; \
            advertisingAddress: the random address on air now, null when nothing is; currentRpi: \
            the RPI on air (hex), in trial mode only, else null; the calibration in use and the \
            export labels; matching: provided key files are being matched (a new upload gets Busy); \
            these are absent from a gaend before interface revision 3; the counters from rotationCount \
            on, revision 4, are those of `gaenctl metrics`: matchingTime in ms, secondsOnAir/secondsOffAir \
            on the node clock, keyFiles/exposureWindows of the last matching run). \
            With the app beside gaend (gaenctl app sync, docs/key-server.md): its last sync, the \
            packages held and the risk level, from its status.json (--app-state, default \
            /var/lib/gaend-app/NAME when it exists); with --json as "app":{"lastSync", \
            "packagesHeld","packagesProvided","packagesWaiting","riskLevel","riskEngine", \
            "riskComputedAt","highRiskSince"}. \
            Checking a board: a scanner (a phone app such as nRF Connect, or `gaenctl radio scan` \
            on another board) shows the advertising address and, in trial mode, the RPI in its \
            0xFD6F service data. See docs/dbus.md.
            """
    )

    package init() {}

    @OptionGroup var bus: BusOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: ArgumentHelp("The app's state directory, for its last sync and risk (default: /var/lib/gaend-app/NAME when it exists).",
                               valueName: "DIR"))
    var appState: String?

    /// The app's status, when there is one (an unreadable file is a note, not a failure of status).
    private func appStatus(_ destination: String) -> AppStatus? {
        let directory = appState ?? AppPaths.stateDirectory(nil, instance: destination, environment: [:])
        do { return try AppStatus.read(directory: directory) } catch {
            printError("gaenctl status: note: \(directory): \(error)")
            return nil
        }
    }

    private func optionalFields(_ s: GaendNodeStatus) -> [String: JSONValue] {
        var o: [String: JSONValue] = [:]
        if let q = s.quarantinedRecords { o["quarantinedRecords"] = .int(Int64(q)) }
        if let d = s.droppedScans { o["droppedScans"] = .int(Int64(clamping: d)) }
        if let d = s.droppedSightings { o["droppedSightings"] = .int(Int64(clamping: d)) }
        if let c = s.clockSync { o["clockSync"] = .string(c) }
        if let b = s.advertisingOnAir { o["advertisingOnAir"] = .bool(b) }
        if let b = s.scanningOnAir { o["scanningOnAir"] = .bool(b) }
        if let n = s.radioFailures { o["radioFailures"] = .int(Int64(clamping: n)) }
        if let n = s.reportsIgnored { o["reportsIgnored"] = .int(Int64(clamping: n)) }
        if let n = s.reportsDropped { o["reportsDropped"] = .int(Int64(clamping: n)) }
        if let c = s.controller { o["controller"] = Self.json(c) }
        // Revision 3 fields: null when the daemon has them but nothing applies.
        if s.txPower != nil {
            o["advertisingAddress"] = s.advertisingAddress.map { .string($0) } ?? .null
            o["currentRpi"] = s.currentRPI.map { .string($0.hexString) } ?? .null
        }
        if let n = s.txPower { o["txPower"] = .int(Int64(n)) }
        if let n = s.rssiCorrection { o["rssiCorrection"] = .int(Int64(n)) }
        if let n = s.calibrationConfidence { o["calibrationConfidence"] = .int(Int64(n)) }
        if let n = s.node { o["node"] = .string(n) }
        if let b = s.matching { o["matching"] = .bool(b) }
        if let n = s.site { o["site"] = .string(n) }
        let counters: [(String, UInt64?)] = [
            ("rotationCount", s.rotationCount), ("failedRotations", s.failedRotations), ("secondsOnAir", s.secondsOnAir),
            ("secondsOffAir", s.secondsOffAir), ("watchdogFeeds", s.watchdogFeeds), ("matchingRuns", s.matchingRuns),
            ("matchingTime", s.matchingTime), ("keyFiles", s.keyFiles.map(UInt64.init)),
            ("exposureWindows", s.exposureWindows.map(UInt64.init)), ("storeBytes", s.storeBytes),
        ]
        for (key, value) in counters { if let value { o[key] = .int(Int64(clamping: value)) } }
        return o
    }

    static func json(_ c: GaendController) -> JSONValue {
        var o: [String: JSONValue] = ["name": .string(c.name)]
        if let a = c.address { o["address"] = .string(a) }
        if let m = c.manufacturer { o["manufacturer"] = .int(Int64(m)) }
        if let m = c.manufacturerName { o["manufacturerName"] = .string(m) }
        if let v = c.hciVersion { o["hciVersion"] = .int(Int64(v)); o["hciVersionName"] = .string(CoreVersion.name(v)) }
        if let v = c.hciSubversion { o["hciSubversion"] = .int(Int64(v)) }
        if let v = c.lmpVersion { o["lmpVersion"] = .int(Int64(v)); o["lmpVersionName"] = .string(CoreVersion.name(v)) }
        if let v = c.lmpSubversion { o["lmpSubversion"] = .int(Int64(v)) }
        if let p = c.problem { o["problem"] = .string(p) }
        return .object(o)
    }

    /// The field-check lines (controller, address on air, calibration, labels); none from a
    /// gaend before interface revision 3.
    static func fieldLines(_ s: GaendNodeStatus) -> [String] {
        var lines: [String] = []
        if let c = s.controller {
            var text = c.name
            if let a = c.address { text += ", address \(a)" } else { text += " (not answering: \(c.problem ?? "no answer yet"))" }
            if let id = c.manufacturer {
                text += ", \(c.manufacturerName ?? "unknown") (company 0x\(CFormat.string("%04X", id)))"
            }
            if let h = c.hciVersion { text += ", HCI \(CoreVersion.name(h))" }
            if let l = c.lmpVersion { text += ", LMP \(CoreVersion.name(l))" }
            lines.append("controller:     \(text)")
        }
        if s.txPower != nil {
            var text = s.advertisingAddress.map { "from \($0) (random, non-resolvable)" } ?? "nothing on air"
            if let rpi = s.currentRPI { text += ", RPI \(rpi.hexString)" }
            lines.append("advertising:    \(text)")
        }
        if let tx = s.txPower, let rssi = s.rssiCorrection, let conf = s.calibrationConfidence {
            lines.append("calibration:    TX power \(tx) dBm, RSSI correction \(rssi) dB, confidence \(CalibrationConfidence.name(ofLevel: conf))")
        }
        if let node = s.node, let site = s.site {
            lines.append("labels:         node \(node.isEmpty ? "(none)" : node), site \(site.isEmpty ? "(none)" : site)")
        }
        return lines
    }

    package func run() async throws {
        try await withDaemon("status", bus) { client in
            let s = try await client.status()
            if json {
                print(JSONValue.object([
                    "busName": .string(client.destination),
                    "version": .string(s.version), "enabled": .bool(s.enabled),
                    "status": .array(s.status.map { .string($0) }), "trialMode": .bool(s.trialMode),
                    "advertisementCount": .int(Int64(clamping: s.advertisementCount)),
                    "scanCount": .int(Int64(clamping: s.scanCount)),
                    "sightingCount": .int(Int64(clamping: s.sightingCount)),
                    "lastScanTime": .int(s.lastScanTime),
                    "provideDiagnosisKeysRemaining": .int(Int64(s.provideDiagnosisKeysRemaining)),
                ].merging(optionalFields(s)) { a, _ in a }.merging(appStatus(client.destination).map { ["app": AppStatusText.json($0)] } ?? [:]) { a, _ in a }).serialized())
                return
            }
            let last = s.lastScanTime == 0 ? "never"
                : Date(timeIntervalSince1970: Double(s.lastScanTime) / 1000).formatted(.iso8601)
            print("""
                gaend \(s.version)\(s.trialMode ? " (trial mode)" : "") at \(client.destination)
                enabled:        \(s.enabled ? "yes" : "no")
                status:         \(s.status.joined(separator: ", "))
                on air:         advertising \(Self.yesNo(s.advertisingOnAir)), scanning \(Self.yesNo(s.scanningOnAir))
                advertisements: \(s.advertisementCount)\(s.radioFailures.map { $0 > 0 ? " (\($0) radio operations failed and were retried)" : "" } ?? "")
                scans:          \(s.scanCount) (last: \(last))
                sightings:      \(s.sightingCount)\(Self.reportNote(s))
                key uploads left today: \(s.provideDiagnosisKeysRemaining == UInt32.max ? "unlimited (rate limits off)" : "\(s.provideDiagnosisKeysRemaining)")
                """)
            if let m = s.matching { print("matching:       \(m ? "yes (provided key files are being matched; a new upload gets Busy)" : "no")") }
            if let c = s.clockSync { print("clock:          \(c)") }
            for line in Self.fieldLines(s) { print(line) }
            if let app = appStatus(client.destination) { for line in AppStatusText.lines(app) { print(line) } }
            if let q = s.quarantinedRecords, q > 0 {
                print("quarantined:    \(q) store record(s) failed authentication, were lost, or a damaged store was set aside; see the journal (docs/store.md)")
            }
            if let d = s.droppedScans, d > 0 {
                print("dropped:        \(d) scan(s), \(s.droppedSightings ?? 0) sighting(s) while the disk was full")
            }
        }
    }

    static func yesNo(_ b: Bool?) -> String { b.map { $0 ? "yes" : "no" } ?? "unknown" }

    static func reportNote(_ s: GaendNodeStatus) -> String {
        guard let ignored = s.reportsIgnored, let dropped = s.reportsDropped, ignored + dropped > 0 else { return "" }
        return " (\(ignored) non-GAEN reports ignored, \(dropped) dropped for full buffers)"
    }
}
