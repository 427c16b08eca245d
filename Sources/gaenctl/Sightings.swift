import ArgumentParser
import DBusCore
import Foundation
import TrialKit
import GaenClient

/// `gaenctl sightings watch|export`: raw sightings from gaend's research interface.
struct SightingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightings",
        abstract: "Raw sightings from gaend (research interface: --trial or research.enabled).",
        subcommands: [SightingsWatch.self, SightingsExport.self])
}

/// Prints one line per finished scan (JSON lines with --json) until interrupted.
struct SightingsWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print each scan as gaend finishes it (ScanFinished).",
        discussion: """
            Text: one line per scan with its end time and number of sightings, then one indented \
            line per sighting. --json: one object per scan {"start","end","sightings":[{"time", \
            "rpi","aem","rssi"}]} (times in ms since the epoch).
            """)
    @OptionGroup var bus: BusOptions
    @Option(help: "Stop after this many scans (default: run until interrupted).")
    var count: Int?
    @Flag(help: "Print JSON lines instead of text.")
    var json = false

    func run() async throws {
        try await withDaemon("sightings watch", bus) { client in
            let stream = try await client.scanFinished()
            var seen = 0
            for await scan in stream {
                if json {
                    print(JSONValue.object([
                        "start": .int(scan.start), "end": .int(scan.end),
                        "sightings": .array(scan.sightings.map {
                            .object(["time": .int($0.time), "rpi": .string($0.rpi.hexString), "aem": .string($0.aem.hexString), "rssi": .int(Int64($0.rssi))])
                        }),
                    ]).serialized())
                } else {
                    print("scan \(isoTime(ms: scan.start)) .. \(isoTime(ms: scan.end)): \(scan.sightings.count) sightings")
                    for s in scan.sightings {
                        print("  \(isoTime(ms: s.time))  rpi \(s.rpi.hexString)  aem \(s.aem.hexString)  rssi \(s.rssi) dBm")
                    }
                }
                fflush(nil)
                seen += 1
                if let count, seen >= count { return }
            }
        }
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
                    guard fd >= 0 else { throw CommandFailure("cannot write \(output): \(String(cString: strerror(errno)))") }
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
            throw CommandFailure("cannot create \(dir): \(error.localizedDescription)")
        }
        var board = try await client.labels().node
        if board.isEmpty { board = ProcessInfo.processInfo.hostName }
        let scratch = try AtomicOutputFile(path: root.appendingPathComponent(".export").path, mode: 0o600, durable: false)
        defer { scratch.discard() }
        let fd = dup(scratch.descriptor)
        guard fd >= 0 else { throw CommandFailure("cannot write in \(dir): \(String(cString: strerror(errno)))") }
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

    func run() async throws {
        try await withDaemon("mark", bus) { client in
            let id = try await client.addMarker(time: Int64((time?.seconds ?? 0) * 1000), label: label, distance: distance ?? -1, note: note)
            print(json ? JSONValue.object(["id": .int(Int64(id))]).serialized() : "marker \(id) recorded")
        }
    }
}
