import BoardNames
import DBusCore
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaendAPI
import GaendClient
import HTTPClient
import PlatformSupport
import TrialFormats

/// One run of `gaenctl collect`: prepare the closed days into the spool, ship what is pending.
public enum CollectRun {
    /// The board name collection uses: research.node, else the host name. It becomes a URL path
    /// segment and the server's user, so it must need no escaping.
    public static func boardName(node: String, hostName: String) throws -> String {
        let board = node.isEmpty ? hostName : node
        guard BoardName.isValid(board) else {
            throw CollectError("the board name \(TextSafety.quoted(board)) (research.node, else the host name) must be \(BoardName.rule) to be collected")
        }
        return board
    }

    /// Exports every closed day not prepared yet (and those to resend) into the spool.
    public static func prepare(_ client: GaendClient, spool: CollectSpool, board: String, site: String, today: Double, days: Int, resend: [String]) async throws {
        var state = try spool.loadState()
        let earliest = today - Double(days) * 86_400
        var ranges: [(from: Double, to: Double)] = []
        let from = max(earliest, state.preparedThrough.flatMap(CollectSpool.dayStart).map { $0 + 86_400 } ?? earliest)
        if from < today { ranges.append((from, today)) }
        for day in resend {
            guard let start = CollectSpool.dayStart(day) else { continue }
            state.shipped.removeValue(forKey: CollectSpool.Day(board: board, day: day).relativePath)
            ranges.append((start, start + 86_400))
        }
        guard !ranges.isEmpty else { return }
        let status = try await client.status()
        let research = try await client.researchProperties()
        for range in ranges {
            let scratch = try spool.freshScratch()
            let export = try AtomicOutputFile(path: scratch.appendingPathComponent(".export").path, mode: 0o600, durable: false)
            defer { export.discard() }
            let fd = dup(export.descriptor)
            guard fd >= 0 else { throw CollectError("cannot write in \(scratch.path): \(SystemCallError.lastReason)") }
            _ = try await client.exportSightings(to: DBusUnixFD(owning: fd), from: Int64(range.from * 1000), to: Int64(range.to * 1000), format: "csv")
            let written = try SightingsDailySplit.split(descriptor: export.descriptor, jsonLines: false, board: board, into: scratch, mode: 0o600)
            for w in written {
                // The split names its files relative to the directory it wrote into.
                let file = w.path.hasPrefix("/") ? URL(fileURLWithPath: w.path) : scratch.appendingPathComponent(w.path)
                let dayDir = file.deletingLastPathComponent()
                let dayName = String(dayDir.lastPathComponent.dropFirst("day=".count))
                guard let start = CollectSpool.dayStart(dayName), start < today else { continue }
                let marks = try await client.markers(from: Int64(start * 1000), to: Int64((start + 86_400) * 1000)).map {
                    TrialFormats.Marker(time: Double($0.time) / 1000, label: $0.label, distance: $0.distance < 0 ? nil : $0.distance, note: $0.note)
                }
                try Data(MarkersFile.csv(marks, node: board, site: site).text.utf8).write(to: dayDir.appendingPathComponent("markers.csv"))
                try CollectSpool.json(["txPower": .int(Int64(research.txPower)), "rssiCorrection": .int(Int64(research.rssiCorrection)),
                                       "calibrationConfidence": .int(Int64(research.calibrationConfidence)),
                                       "node": .string(research.node), "site": .string(research.site)])
                    .write(to: dayDir.appendingPathComponent("calibration.json"))
                try CollectSpool.statusJSON(status, busName: client.destination).write(to: dayDir.appendingPathComponent("status.json"))
                let names = ["sightings.csv", "markers.csv", "calibration.json", "status.json"]
                try Data(DayManifest.make(directory: dayDir.path, files: names).utf8)
                    .write(to: dayDir.appendingPathComponent(DayManifest.fileName))
                try spool.enqueue(dayDir, as: CollectSpool.Day(board: board, day: dayName))
            }
        }
        // Every closed day up to yesterday is prepared (days without any scan have nothing to send).
        state.preparedThrough = DailyLayout.day(today - 86_400)
        try spool.saveState(state)
        try? FileManager.default.removeItem(at: spool.scratch)
    }
}
