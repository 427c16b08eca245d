import ArgumentParser
import BoardCommands
import CLISupport
import DBusCore
import ENProtocol
import Foundation
import TrialKit
import GaendClient
import GaendAPI
import PlatformSupport
import TrialFormats

/// `gaenctl sightings watch|export`: raw sightings from gaend's research interface.
struct SightingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightings",
        abstract: "Raw sightings from gaend (research interface: --trial or research.enabled).",
        subcommands: [SightingsWatch.self, SightingsExport.self])
}

/// Prints each finished scan (JSON lines with --json) until interrupted; with --summary a
/// per-device table refreshed after every scan instead.
struct SightingsWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print each scan as gaend finishes it, or a per-device summary refreshed after each scan.",
        discussion: """
            Text: one line per scan with its end time and number of sightings, then one indented \
            line per sighting (time, advertiser address, RPI, AEM, RSSI). --json: one object per scan \
            {"start","end","sightings":[{"time","address","rpi","aem","rssi"}]} (times in ms since the \
            epoch; address absent when not known, e.g. from a gaend before Research1 revision 2). \
            --summary: one row per device, i.e. per advertiser address and RPI (they change together \
            every 10-20 minutes), over the scans watched: reports, last RSSI, minimum and median \
            attenuation, first and last seen; refreshed after each scan, devices not seen for \
            --forget-after seconds dropped. Attenuation is TX power - (RSSI + the node's RSSI correction), \
            the TX power being --tx-power (default: the node's own calibrated TX power, as for boards \
            calibrated alike; a phone's is in its encrypted AEM). --summary --json: one object per \
            scan {"start","end","sightings","devices":[{"address","rpi","reports","lastRssi", \
            "minAttenuation","medianAttenuation","firstSeen","lastSeen"}]}.
            """)
    @OptionGroup var bus: BusOptions
    @Option(help: "Stop after this many scans (default: run until interrupted).")
    var count: Int?
    @Flag(help: "Print JSON lines instead of text.")
    var json = false
    @Flag(help: "A per-device summary (advertiser address and RPI) refreshed after each scan.")
    var summary = false
    @Option(parsing: .unconditional, help: ArgumentHelp("With --summary: the advertisers' TX power for attenuation (default: the node's TxPower).", valueName: "dBm"))
    var txPower: Int?
    @Option(help: ArgumentHelp("With --summary: drop devices not seen for this long.", valueName: "seconds"))
    var forgetAfter: Int = 1200

    func validate() throws {
        if !summary, txPower != nil { throw ValidationError("--tx-power goes with --summary") }
        if let txPower, !(-127...127).contains(txPower) { throw ValidationError("--tx-power must be -127...127 dBm") }
        try NumericOption.check(forgetAfter, "--forget-after", 1...86_400)
    }

    func run() async throws {
        try await withDaemon("sightings watch", bus) { client in
            let stream = try await client.scanFinished()
            var table: SightingSummary?
            if summary {
                let status = try await client.status()
                guard let tx = txPower ?? status.txPower.map(Int.init) else {
                    throw CommandFailure("this gaend does not report its TX power: give --tx-power")
                }
                table = SightingSummary(txPower: tx, rssiCorrection: Int(status.rssiCorrection ?? 0), forgetAfterMs: Int64(forgetAfter) * 1000)
            }
            let clearScreen = !json && isatty(1) == 1
            var seen = 0
            for await scan in stream {
                if var t = table {
                    t.add(scan)
                    table = t
                    if json { print(t.json(scan: scan).serialized()) } else {
                        if clearScreen { print("\u{1B}[H\u{1B}[2J", terminator: "") }
                        print(t.text(scan: scan))
                    }
                } else if json {
                    print(JSONValue.object([
                        "start": .int(scan.start), "end": .int(scan.end),
                        "sightings": .array(scan.sightings.map {
                            var o: [String: JSONValue] = ["time": .int($0.time), "rpi": .string($0.rpi.hexString),
                                                          "aem": .string($0.aem.hexString), "rssi": .int(Int64($0.rssi))]
                            if let a = $0.address { o["address"] = .string(a) }
                            return .object(o)
                        }),
                    ]).serialized())
                } else {
                    print("scan \(isoTime(ms: scan.start)) .. \(isoTime(ms: scan.end)): \(scan.sightings.count) sightings")
                    for s in scan.sightings {
                        print("  \(isoTime(ms: s.time))  \(s.address ?? "address unknown")  rpi \(s.rpi.hexString)  aem \(s.aem.hexString)  rssi \(s.rssi) dBm")
                    }
                }
                fflush(nil)
                seen += 1
                if let count, seen >= count { return }
            }
        }
    }
}

/// The per-device view of `sightings watch --summary`: one row per advertiser address and RPI.
struct SightingSummary {
    struct Device {
        var address: String?
        var rpi: Data
        var reports = 0
        var lastRSSI: Int16 = 0
        var attenuations: [Int] = []
        var firstSeen: Int64 = .max
        var lastSeen: Int64 = .min

        var minAttenuation: Int { attenuations.min() ?? 0 }
        var medianAttenuation: Double {
            let a = attenuations.sorted()
            guard !a.isEmpty else { return 0 }
            return a.count % 2 == 1 ? Double(a[a.count / 2]) : Double(a[a.count / 2 - 1] + a[a.count / 2]) / 2
        }
    }

    struct Key: Hashable {
        var address: String?
        var rpi: Data
    }

    let txPower: Int
    let rssiCorrection: Int
    let forgetAfterMs: Int64
    private(set) var devices: [Key: Device] = [:]

    init(txPower: Int, rssiCorrection: Int, forgetAfterMs: Int64) {
        self.txPower = txPower
        self.rssiCorrection = rssiCorrection
        self.forgetAfterMs = forgetAfterMs
    }

    mutating func add(_ scan: GaendScanFinished) {
        for s in scan.sightings {
            let key = Key(address: s.address, rpi: s.rpi)
            var d = devices[key] ?? Device(address: s.address, rpi: s.rpi)
            d.reports += 1
            if s.time >= d.lastSeen { d.lastRSSI = s.rssi }
            d.attenuations.append(txPower - (Int(s.rssi) + rssiCorrection))
            d.firstSeen = min(d.firstSeen, s.time)
            d.lastSeen = max(d.lastSeen, s.time)
            devices[key] = d
        }
        devices = devices.filter { scan.end - $0.value.lastSeen <= forgetAfterMs }
    }

    /// Most recently seen first.
    var rows: [Device] {
        devices.values.sorted { ($0.lastSeen, $0.address ?? "", $0.rpi.hexString) > ($1.lastSeen, $1.address ?? "", $1.rpi.hexString) }
    }

    func json(scan: GaendScanFinished) -> JSONValue {
        .object([
            "start": .int(scan.start), "end": .int(scan.end), "sightings": .int(Int64(scan.sightings.count)),
            "devices": .array(rows.map { d in
                var o: [String: JSONValue] = [
                    "rpi": .string(d.rpi.hexString), "reports": .int(Int64(d.reports)), "lastRssi": .int(Int64(d.lastRSSI)),
                    "minAttenuation": .int(Int64(d.minAttenuation)), "medianAttenuation": .double(d.medianAttenuation),
                    "firstSeen": .int(d.firstSeen), "lastSeen": .int(d.lastSeen),
                ]
                if let a = d.address { o["address"] = .string(a) }
                return .object(o)
            }),
        ])
    }

    func text(scan: GaendScanFinished) -> String {
        var out = "after scan \(isoTime(ms: scan.start)) .. \(isoTime(ms: scan.end)) (\(scan.sightings.count) sightings): "
            + "\(devices.count) device(s); attenuation = \(txPower) dBm - (RSSI + \(rssiCorrection) dB)\n"
        out += "address            rpi                               reports  last rssi  min att  median att  first seen                last seen\n"
        for d in rows {
            func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
            func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }
            out += pad(d.address ?? "unknown", 19) + pad(d.rpi.hexString, 33) + lpad("\(d.reports)", 8)
                + lpad("\(d.lastRSSI) dBm", 11) + lpad("\(d.minAttenuation) dB", 9)
                + lpad(String(format: "%.1f dB", d.medianAttenuation), 12) + "  " + pad(isoTime(ms: d.firstSeen), 26) + isoTime(ms: d.lastSeen) + "\n"
        }
        return out
    }
}

/// Writes the sightings of a time range as CSV or JSON lines (docs/sightings-format.md).
struct SightingsExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export raw sightings (CSV or JSON lines, docs/sightings-format.md), empty scans included.")
    @OptionGroup var bus: BusOptions
    @Option(help: "csv or jsonl.")
    var format: String = "csv"
    @OptionGroup var range: ExportRangeOptions
    @Option(help: ArgumentHelp("'daily': one file per UTC day of the sightings' time, DIR/board=<node>/day=<YYYY-MM-DD>/sightings.<csv|jsonl> (needs --dir; docs/trial.md, \"Many boards\").", valueName: "daily"))
    var split: String?
    @Option(help: ArgumentHelp("Directory of the daily layout (with --split daily); files of days already there are replaced.", valueName: "DIR"))
    var dir: String?

    func validate() throws {
        guard format == "csv" || format == "jsonl" else { throw ValidationError("--format must be csv or jsonl") }
        if let split {
            guard split == "daily" else { throw ValidationError("--split: expected 'daily', got '\(split)'") }
            guard dir != nil else { throw ValidationError("--split daily writes into a directory: give --dir DIR") }
            guard range.output == nil else { throw ValidationError("--split daily writes into --dir, not -o") }
        } else if dir != nil {
            throw ValidationError("--dir goes with --split daily")
        }
    }

    func run() async throws {
        try await withDaemon("sightings export", bus) { client in
            let rows: Int
            if let dir {
                rows = try await exportDaily(client, into: dir)
            } else if let output = range.output {
                // gaend writes into a temporary file that replaces `output` only once the export
                // succeeded: a failed export leaves an existing file byte for byte.
                rows = try await AtomicOutputFile.with(path: output, mode: 0o600) { out in
                    let fd = dup(out.descriptor)
                    guard fd >= 0 else { throw CommandFailure("cannot write \(output): \(SystemCallError.lastReason)") }
                    return Int(try await client.exportSightings(to: DBusUnixFD(owning: fd), from: range.fromMs, to: range.toMs, format: format))
                }
            } else {
                fflush(nil)
                rows = Int(try await client.exportSightings(to: DBusUnixFD(owning: dup(1)), from: range.fromMs, to: range.toMs, format: format))
            }
            printError("gaenctl sightings export: \(rows) rows\((range.output ?? dir).map { " written to \($0)" } ?? "")")
        }
    }

    /// The range exported once into a hidden temporary file in DIR (never committed), then
    /// split by day into atomic files: one D-Bus call whatever the range, memory flat.
    func exportDaily(_ client: GaendClient, into dir: String) async throws -> Int {
        let root = URL(fileURLWithPath: dir)
        do { try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true) } catch {
            throw CommandFailure("cannot create \(dir): \(SystemCallError.reason(of: error))")
        }
        var board = try await client.labels().node
        if board.isEmpty { board = ProcessInfo.processInfo.hostName }
        let scratch = try AtomicOutputFile(path: root.appendingPathComponent(".export").path, mode: 0o600, durable: false)
        defer { scratch.discard() }
        let fd = dup(scratch.descriptor)
        guard fd >= 0 else { throw CommandFailure("cannot write in \(dir): \(SystemCallError.lastReason)") }
        let rows = Int(try await client.exportSightings(to: DBusUnixFD(owning: fd), from: range.fromMs, to: range.toMs, format: format))
        let written = try SightingsDailySplit.split(descriptor: scratch.descriptor, jsonLines: format == "jsonl", board: board, into: root)
        for w in written { printError("  \(w.path): \(w.rows) rows") }
        return rows
    }
}

/// `gaenctl mark`: a ground-truth marker (time now, label, distance, note).
struct MarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mark",
        abstract: "Record a ground-truth marker in gaend (research interface).")
    @OptionGroup var bus: BusOptions
    @Option(help: "What holds from now on (e.g. 'seated 1.5 m').")
    var label: String
    @Option(help: "Distance in metres (omit: unknown).")
    var distance: Double?
    @Option(help: "Free note.")
    var note: String = ""
    @Option(help: ArgumentHelp("Time of the marker, Unix seconds or ISO 8601 (default: now on the node's clock).", valueName: "time"))
    var time: TimeArgument?
    @Flag(help: "Print JSON: {\"id\"}.")
    var json = false

    func validate() throws {
        try time?.check("--time")
        if let distance { try NumericOption.check(distance, "--distance", 0...1_000_000, unit: "metres") }
    }

    func run() async throws {
        try await withDaemon("mark", bus) { client in
            let id = try await client.addMarker(time: Int64((time?.seconds ?? 0) * 1000), label: label, distance: distance ?? -1, note: note)
            print(json ? JSONValue.object(["id": .int(Int64(id))]).serialized() : "marker \(id) recorded")
        }
    }
}
