import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HCIProtocol
import Logging
import PlatformSupport

/// Exposure side of the node: key history, provided key files, matching against the stored
/// sightings, windows, summaries, and the research exports.
extension GaenNode {
    /// Store result kinds. (Provided key files have their own table, key_file: windows are
    /// computed from every file provided and still within retention.)
    static let windowsKind = "windows"
    static let matchedKeysKind = "matched-keys"

    // MARK: TEK history

    /// The node's TEKs of the retention period, oldest first. Today's key (and any key still
    /// on air) only in trial mode / when the config allows it, then with rolling period 144.
    public func keyHistory() throws -> [DiagnosisKey] {
        let now = clock.wallTime()
        let today = UTCDay(unixSeconds: now)
        let first = UTCDay(today.rawValue - Int32(settings.store.retentionDays) + 1)
        let keys: [(day: UTCDay, key: TemporaryExposureKey)]
        do { keys = try store.keys(in: first...today) } catch { throw NodeError.storage("\(error)") }
        return keys.filter { $0.day != today || settings.research.allowCurrentKeyExport }.map {
            DiagnosisKey(key: $0.key, rollingStartIntervalNumber: $0.day.firstInterval, rollingPeriod: 144)
        }
    }

    /// Who may read the TEK history: root, and the daemon's own uid (whoever runs as the
    /// daemon's user can read its store key anyway).
    public func mayReadKeys(uid: UInt32) -> Bool { uid == 0 || uid == getuid() }

    // MARK: Provide diagnosis keys

    private func checkProvideAllowed() throws {
        guard !matching else { throw NodeError.busy("an earlier ProvideDiagnosisKeys is still being matched") }
        if settings.rateLimits.enabled, provideRemaining == 0 {
            throw NodeError.rateLimited("at most \(settings.rateLimits.provideDiagnosisKeysPerDay) calls per UTC day; resets at 00:00 UTC")
        }
    }

    /// Every file parsed and, with trusted keys, its signature verified; with its digest and
    /// the end of its keys' validity.
    static func parseKeyFiles(_ files: [Data], trust: KeyExportTrustSet) throws -> [(file: KeyExportFile, digest: Data, validUntil: Double)] {
        try files.enumerated().map { n, data in
            let file: KeyExportFile
            do { file = try KeyExportFile(parsing: data) } catch {
                throw NodeError.invalidKeyFile("file \(n + 1): \(error)")
            }
            if !trust.isEmpty {
                do { _ = try file.requireTrustedSignature(trust) } catch {
                    throw NodeError.untrustedKeyFile("file \(n + 1): \(error)")
                }
            }
            return (file, SHA256.hash(file.exportBin), validUntil(file))
        }
    }

    public var provideRemaining: UInt32 {
        guard settings.rateLimits.enabled else { return UInt32.max }
        let today = UTCDay(unixSeconds: clock.wallTime()).rawValue
        let used = state.provideDay == today ? state.provideCalls : 0
        return UInt32(max(0, settings.rateLimits.provideDiagnosisKeysPerDay - used))
    }

    /// Parses and verifies every file before anything changes; one bad file rejects the call.
    /// Returns the number of keys accepted; matching runs afterwards (`runMatching`). Parsing
    /// (up to 16 files of 16 MiB) runs on a thread of its own, not on the node's executor.
    public func acceptKeyFiles(_ files: [Data], trust: KeyExportTrustSet) async throws -> Int {
        guard !files.isEmpty else { throw NodeError.invalidArgs("files: give 1 to 16 key files") }
        guard files.count <= 16 else { throw NodeError.limitExceeded("\(files.count) files in one call; at most 16") }
        try checkProvideAllowed()
        let parsed = try await OwnThread.run("gaend.keyfiles") { _ in try Self.parseKeyFiles(files, trust: trust) }
        // Checked again: another call may have started matching while these were parsed. From
        // here the call holds the node's one matching slot (released if storing fails).
        try checkProvideAllowed()
        matching = true
        do { return try await store(parsed) } catch {
            matching = false
            throw error
        }
    }

    private func store(_ parsed: [(file: KeyExportFile, digest: Data, validUntil: Double)]) async throws -> Int {
        if settings.rateLimits.enabled {
            let today = UTCDay(unixSeconds: clock.wallTime()).rawValue
            if state.provideDay != today { state.provideDay = today; state.provideCalls = 0 }
            state.provideCalls += 1
            try await saveState()
        }
        // The same file twice in one call counts once; a file provided again moves to the end
        // (it is the call's own, and the last occurrence of a key is the one that counts).
        var unique: [(file: KeyExportFile, digest: Data, validUntil: Double)] = []
        for f in parsed where !unique.contains(where: { $0.digest == f.digest }) { unique.append(f) }
        do {
            let cache = keyFiles, store = self.store
            let stored = try await OwnThread.run("gaend.keyfiles") { _ in try cache.current(store) }
            let replacing = stored.filter { old in unique.contains { $0.digest == old.digest } }.map(\.id)
            // Up to 16 files of 16 MiB sealed and written with a FULL fsync: off the node's executor.
            let files = unique.map { ($0.file.exportBin, $0.validUntil) }, now = clock.wallTime()
            let ids = try await Self.onStoreThread { try store.addKeyFiles(files, replacing: replacing, now: now) }
            for (id, f) in zip(ids, unique) { keyFiles.insert(id: id, file: f.file, digest: f.digest) }
        } catch let e as NodeError { throw e } catch { throw NodeError.storage("\(error)") }
        callFiles = unique.count
        return unique.reduce(0) { $0 + $1.file.keyCount + $1.file.revisedKeyCount }
    }

    /// The end of the validity of the file's newest key (Unix seconds): retention keeps the
    /// file while that key can still match a kept sighting.
    static func validUntil(_ file: KeyExportFile) -> Double {
        var end: UInt32 = 0
        for batches in [file.keyBatches(size: 50_000), file.revisedKeyBatches(size: 50_000)] {
            for batch in batches { for k in batch { end = max(end, k.validityEnd.rawValue) } }
        }
        return Double(end) * 600
    }

    /// Matches every provided key against the sightings of the retention period and replaces
    /// the stored windows. Returns the matched keys and windows of the last call's own files
    /// (ExposureStateUpdated reports those, not the union). On failure earlier results stay.
    public func runMatching() async throws -> (matchedKeys: Int, windows: Int) {
        defer { matching = false }
        logger.info("matching started", metadata: ["files.call": "\(callFiles)"])
        let now = clock.wallTime()
        let inputs = MatchingInputs(store: store, from: now - Double(settings.store.retentionDays) * 86_400, to: now + 86_400, now: now,
                                    correction: calibration.rssiCorrection, mapping: try dataMapping(), callFiles: callFiles,
                                    keyFiles: keyFiles)
        // Matching is CPU-bound (every core) and reads the store: a thread of its own, never
        // the node's executor, so rotations and scans go on meanwhile. Cancelled at shutdown.
        return try await OwnThread.run("gaend.matching") { flag in try Self.match(inputs, cancel: flag) }
    }

    struct MatchingInputs: Sendable {
        var store: NodeStore
        var from: Double, to: Double, now: Double
        var correction: Int
        var mapping: DiagnosisKeysDataMapping
        var callFiles: Int
        var keyFiles: KeyFileCache
    }

    static func match(_ i: MatchingInputs, cancel: CancelFlag) throws -> (matchedKeys: Int, windows: Int) {
        let log: SightingsLog
        let files: [KeyExportFile]
        do {
            log = sightingsLog(try i.store.scans(from: i.from, to: i.to), currentCorrection: i.correction)
            files = try i.keyFiles.current(i.store).map(\.file)
        } catch { throw NodeError.storage("\(error)") }
        let computation = try ExposureComputation(log: log, mapping: i.mapping, workers: ProcessInfo.processInfo.activeProcessorCount)
        let (outcome, windows, _) = try computation.run(files, isCancelled: { cancel.isCancelled })
        let first = files.count - min(i.callFiles, files.count)
        let own = try computation.windows(outcome.matches(fromFile: first)).windows
        if cancel.isCancelled { throw CancellationError() }
        let encoder = JSONEncoder()
        do {
            try i.store.replaceExposureResults(kind: windowsKind, with: try windows.map { (day: $0.day, payload: try encoder.encode($0)) }, now: i.now)
        } catch { throw NodeError.storage("\(error)") }
        return (outcome.matchedKeys(fromFile: first), own.count)
    }

    /// The stored scans as the one exposure computation reads them, exactly as the sightings
    /// export writes them (docs/sightings-format.md), so that `gaenctl windows` on an export
    /// gives the daemon's windows: times in whole milliseconds, every scan (empty ones too),
    /// each scan's RSSI correction (scans stored before it was recorded take the current one).
    static func sightingsLog(_ scans: [StoredScan], currentCorrection: Int) -> SightingsLog {
        func ms(_ t: Double) -> Double { (t * 1000).rounded() / 1000 }
        var sightings: [ENProtocol.Sighting] = []
        var list: [Scan] = []
        for s in scans {
            let index = list.count
            list.append(Scan(start: ms(s.record.start), end: ms(s.record.end)))
            let correction = s.record.rssiCorrection ?? currentCorrection
            for r in s.record.sightings {
                sightings.append(ENProtocol.Sighting(time: ms(r.time), rpi: r.rpi, aem: r.aem, rssi: Int(r.rssi),
                                                     rssiCorrection: correction, scanIndex: index))
            }
        }
        return SightingsLog(sightings: sightings, scans: list, hasScanColumns: true)
    }

    public func exposureWindows() throws -> [ExposureWindow] {
        let decoder = JSONDecoder()
        do {
            return try store.exposureResults(kind: Self.windowsKind).map { try decoder.decode(ExposureWindow.self, from: $0.payload) }
        } catch { throw NodeError.storage("\(error)") }
    }

    public func dailySummaries(config: DailySummariesConfig) throws -> [DailySummary] {
        try DailySummaries.compute(exposureWindows(), config: config, today: UTCDay(unixSeconds: clock.wallTime()))
    }

    /// The v1 summary and the summation of the counted exposures' risk scores.
    public func exposureSummary(config: GAENv1Configuration) throws -> (summary: ExposureSummaryV1, summation: Int) {
        let r = try ExposureSummaryV1.compute(exposureWindows(), configuration: config, today: UTCDay(unixSeconds: clock.wallTime()))
        return (r.summary, r.exposures.filter(\.counted).reduce(0) { $0 + $1.riskScore })
    }

    // MARK: Data mapping

    public func dataMapping() throws -> DiagnosisKeysDataMapping {
        try state.mapping?.mapping() ?? .default
    }

    public func setDataMapping(_ mapping: DiagnosisKeysDataMapping) async throws {
        let now = clock.wallTime()
        if settings.rateLimits.enabled, let last = state.mappingChangedAt,
           now - last < 7 * 86_400 / Double(max(1, settings.rateLimits.dataMappingChangesPerWeek)) {
            let resets = Date(timeIntervalSince1970: last + 7 * 86_400).formatted(.iso8601)
            throw NodeError.rateLimited("the data mapping may change once per 7 days; next change allowed at \(resets)")
        }
        state.mapping = NodeState.MappingState(mapping)
        state.mappingChangedAt = now
        try await saveState()
    }

    // MARK: Research

    /// What an export needs from the node; the export itself runs off the node's executor.
    public var exportContext: ExportContext {
        ExportContext(store: store, currentCorrection: calibration.rssiCorrection, node: settings.research.node, site: settings.research.site)
    }

    public struct ExportContext: Sendable {
        var store: NodeStore
        var currentCorrection: Int
        var node: String, site: String
    }

    /// Rows of the sightings export (docs/sightings-format.md): one per sighting and one per
    /// empty scan, oldest first (tests; the D-Bus export runs `writeSightings` on its own thread).
    public func exportSightings(from: Double, to: Double, format: String, write: (Data) throws -> Void) throws -> Int {
        try Self.writeSightings(exportContext, from: from, to: to, format: format, write: write)
    }

    public static func writeSightings(_ context: ExportContext, from: Double, to: Double, format: String, write: (Data) throws -> Void) throws -> Int {
        guard format == "csv" || format == "jsonl" else { throw NodeError.invalidArgs("format '\(format)': expected csv or jsonl") }
        let scans: [StoredScan]
        do { scans = try context.store.scans(from: from, to: to) } catch { throw NodeError.storage("\(error)") }
        // Scans stored before the correction was recorded per scan take the current one.
        let currentCorrection = context.currentCorrection
        let node = context.node, site = context.site
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
        for s in scans {
            let correction = s.record.rssiCorrection ?? currentCorrection
            let items: [RecordedSighting?] = s.record.sightings.isEmpty ? [nil] : s.record.sightings.map { $0 }
            for item in items {
                let t = item?.time ?? s.record.start
                guard t >= from, t < to else { continue }
                buffer += writer.row(SightingsRecord(time: t, rpi: item?.rpi, aem: item?.aem, rssi: item.map { Int($0.rssi) },
                                                     scanStart: s.record.start, scanEnd: s.record.end, rssiCorrection: correction,
                                                     node: node, site: site, address: Self.exportAddress(item)))
                rows += 1
                if buffer.utf8.count > 1 << 16 { try flush() }
            }
        }
        try flush()
        return rows
    }

    /// The advertiser's address of a sighting for the export, `AA:BB:CC:DD:EE:FF`; empty for
    /// scans stored before the record kept it.
    static func exportAddress(_ item: RecordedSighting?) -> String? { item?.address?.description }

    /// Marker times accepted (Unix seconds, 2000-01-01 to 2200-01-01).
    static let markerTimes: ClosedRange<Double> = 946_684_800...7_258_118_400

    public func addMarker(time: Double, label: String, distance: Double, note: String) async throws -> Int64 {
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
        do { return try await Self.onStoreThread { try store.addMarker(marker) } } catch {
            throw NodeError.storage("\(error)")
        }
    }

    public func markers(from: Double, to: Double) throws -> [(id: Int64, marker: Marker)] {
        do { return try store.markerRecords(from: from, to: to) } catch { throw NodeError.storage("\(error)") }
    }

    /// Node clock "now" in Unix seconds (scaled with --time-scale).
    public var now: Double { clock.wallTime() }
}
