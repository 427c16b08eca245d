import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import HCIProtocol
import PlatformSupport
import GaenStore

/// The research service's records (Research1's domain side): the sightings export and the
/// ground-truth markers. Holds no state of its own: exports read the store and the calibration
/// in use on the caller's transfer thread; markers are written on the store thread.
package struct ResearchRecords: Sendable {
    let store: NodeStore
    let calibration: CalibrationInUse
    let clock: any NodeClock
    let sync: any ClockSyncSource
    /// The labels every export carries (`research.node`, `research.site`).
    package let node: String
    package let site: String

    /// What an export needs; the export itself runs on the transfers' threads (`CallerTransfers`).
    package var exportContext: ExportContext {
        ExportContext(store: store, currentCorrection: calibration.current.rssiCorrection, node: node, site: site)
    }

    package struct ExportContext: Sendable {
        var store: NodeStore
        var currentCorrection: Int
        var node: String, site: String
    }

    /// Rows of the sightings export (docs/sightings-format.md): one per sighting and one per
    /// empty scan, oldest first (tests; the D-Bus export runs `writeSightings` on its own thread).
    package func exportSightings(from: Double, to: Double, format: String, write: (Data) throws -> Void) throws -> Int {
        try Self.writeSightings(exportContext, from: from, to: to, format: format, write: write)
    }

    package static func writeSightings(_ context: ExportContext, from: Double, to: Double, format: String, write: (Data) throws -> Void) throws -> Int {
        guard format == "csv" || format == "jsonl" else { throw NodeError.invalidArgs("format '\(format)': expected csv or jsonl") }
        let scans: [Scan]
        do { scans = try context.store.scans(from: from, to: to) } catch { throw NodeError.storage("\(error)") }
        var rows = 0
        var buffer = ""
        func flush() throws {
            guard !buffer.isEmpty else { return }
            do { try write(Data(buffer.utf8)) } catch let e as NodeError { throw e } catch { throw NodeError.writeFailed("\(error)") }
            buffer = ""
        }
        // The format's one writer (ENProtocol SightingsFileWriter), as every producer uses.
        let writer = SightingsFileWriter(format: format == "csv" ? .csv : .jsonl)
        buffer += writer.header
        // The log matching reads too: one conversion, so the two agree.
        let log = SightingsLog(recorded: scans, currentCorrection: context.currentCorrection, from: from, to: to)
        try log.forEachRecord(node: context.node, site: context.site) { row in
            buffer += writer.row(row)
            rows += 1
            if buffer.utf8.count > 1 << 16 { try flush() }
        }
        try flush()
        return rows
    }

    /// Marker times accepted (Unix seconds, 2000-01-01 to 2200-01-01).
    static let markerTimes: ClosedRange<Double> = 946_684_800...7_258_118_400

    package func addMarker(time: Double, label: String, distance: Double, note: String) async throws -> Int64 {
        guard !label.isEmpty, label.utf8.count <= 256 else { throw NodeError.invalidArgs("label: 1 to 256 bytes") }
        guard note.utf8.count <= 4096 else { throw NodeError.invalidArgs("note: at most 4096 bytes") }
        guard distance.isFinite else { throw NodeError.invalidArgs("distance must be a finite number") }
        let t: Double
        if time == 0 {
            guard sync.status().isUsable else { throw NodeError.clockUnsynchronised("the clock is not synchronised; give the marker's time") }
            t = clock.wallTime()
        } else {
            // Unix seconds from 2000 to 2200: -1 or INT64_MAX ms are mistakes, and a time the
            // store's ms columns cannot give back (GetMarkers) must not be accepted.
            guard (Self.markerTimes).contains(time) else {
                throw NodeError.invalidArgs("time \(CFormat.fixed(time * 1000, decimals: 0)) ms is outside 2000-01-01...2200-01-01 (Unix ms 946684800000...7258118400000); 0 means now")
            }
            t = time
        }
        let store = self.store, marker = Marker(time: t, label: label, distanceMeters: distance < 0 ? nil : distance, note: note)
        do { return try await store.markerStore.add(marker) } catch {
            throw NodeError.storage("\(error)")
        }
    }

    package func markers(from: Double, to: Double) async throws -> [MarkerRecord] {
        do { return try await store.markerStore.records(from: from, to: to) } catch { throw NodeError.storage("\(error)") }
    }
}
