import NodeConfig
import PlatformSupport
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HCIHost
import Logging
import PlatformSupport
import MatchingRuntime
import GaenStore

/// The exposure service's state and work (ExposureNotification1's domain side): the node's
/// key history, provided key files (accepted, stored in their own table, parsed once), the
/// matching run with its busy state (one at a time, on the blocking pool using every core,
/// beside the radio's path; cancelled and awaited at shutdown), the stored windows and their
/// summaries, the diagnosis-keys data mapping and the framework's rate limits.
package actor ExposureNotifications {
    /// Store result kinds. (Provided key files have their own table, key_file: windows are
    /// computed from every file provided and still within retention.)
    static let windowsKind = "windows"

    let settings: GaendSettings
    let clock: any NodeClock
    let store: NodeStore
    let stateFile: NodeStateFile
    let calibration: CalibrationInUse
    let events: NodeEvents
    let counters: NodeCounters
    let logger: Logger
    /// Provided key files, parsed once (matching does not parse them again).
    package nonisolated let keyFiles = KeyFileCache()
    /// The bounds on ProvideDiagnosisKeys (docs/dbus.md, "Limits").
    package nonisolated let provideLimits: ProvideLimits
    /// Bytes of key files in flight over all calls (`ProvideLimits.totalBytes`).
    package nonisolated let provideBudget: ByteBudget
    /// A call's files are being parsed: one at a time.
    private var accepting = false

    /// Busy: from an accepted ProvideDiagnosisKeys to the end of its matching.
    package private(set) var matching = false
    /// How many of the stored key files the call being matched provided (they come last).
    private var callFiles = 0
    /// The matching run in progress (`beginMatching`).
    private var run: Task<Void, Never>?

    init(settings: GaendSettings, clock: any NodeClock, store: NodeStore, stateFile: NodeStateFile, calibration: CalibrationInUse,
         events: NodeEvents, counters: NodeCounters, logger: Logger, provideLimits: ProvideLimits = .default) {
        self.provideLimits = provideLimits
        self.provideBudget = ByteBudget(total: provideLimits.totalBytes)
        self.settings = settings
        self.clock = clock
        self.store = store
        self.stateFile = stateFile
        self.calibration = calibration
        self.events = events
        self.counters = counters
        self.logger = logger
    }

    // MARK: TEK history

    /// The node's TEKs of the retention period, oldest first. Today's key (and any key still
    /// on air) only in trial mode / when the config allows it, then with rolling period 144.
    package func keyHistory() async throws -> [DiagnosisKey] {
        let now = clock.wallTime()
        let today = UTCDay(unixSeconds: now)
        let first = UTCDay(today.rawValue - Int32(settings.store.retentionDays) + 1)
        let keys: [(day: UTCDay, key: TemporaryExposureKey)]
        do { keys = try await store.keyStore.keys(in: first...today) } catch { throw NodeError.storage("\(error)") }
        return keys.filter { $0.day != today || settings.research.allowCurrentKeyExport }.map {
            DiagnosisKey(key: $0.key, rollingStartIntervalNumber: $0.day.firstInterval, rollingPeriod: 144)
        }
    }

    /// Who may read the TEK history: root, the daemon's own uid (whoever runs as the
    /// daemon's user can read its store key anyway), and members of group `gaend-keys` (the
    /// app half's own user, which uploads them: it runs apart from the daemon's user so that
    /// a network-facing process cannot own gaend's bus names).
    package nonisolated func mayReadKeys(uid: UInt32) -> Bool {
        uid == 0 || uid == getuid() || GroupMembership.contains(uid: uid, group: Self.keyReadersGroup)
    }

    package static let keyReadersGroup = "gaend-keys"

    // MARK: Provide diagnosis keys

    private func checkProvideAllowed() throws {
        guard !matching else { throw NodeError.busy("an earlier ProvideDiagnosisKeys is still being matched") }
        if settings.rateLimits.enabled, provideRemaining == 0 {
            throw NodeError.rateLimited("at most \(settings.rateLimits.provideDiagnosisKeysPerDay) calls per UTC day; resets at 00:00 UTC")
        }
    }

    /// Every file parsed and, with trusted keys, its signature verified; with its digest and
    /// the end of its keys' validity. Before anything is inflated, the sizes the files declare
    /// are checked against the limits and claimed from `claim`; then each file is parsed and
    /// checked against the framework's key limits and `now` (Unix seconds, the node's clock).
    /// `cancel` (a stop) is polled between files and between batches of keys.
    static func parseKeyFiles(_ files: [Data], trust: KeyExportTrustSet, limits: ProvideLimits = .default, now: Double,
                              claim: BudgetClaim? = nil, cancel: CancelFlag? = nil) throws -> [(file: KeyExportFile, digest: Data, validUntil: Double)] {
        var declared = 0
        for (n, data) in files.enumerated() {
            let size: Int
            do { size = try KeyExportFile.declaredExportSize(data) } catch { throw NodeError.invalidKeyFile("file \(n + 1): \(error)") }
            guard size <= limits.keys.maxExportSize else {
                throw NodeError.invalidKeyFile("file \(n + 1): \(KeyExportError.entryTooLarge(name: "export.bin", limit: limits.keys.maxExportSize, size: size))")
            }
            declared += size
        }
        guard declared <= limits.maxCallBytes else {
            throw NodeError.limitExceeded("the files' export.bin are \(declared) bytes together; one call's may be at most \(limits.maxCallBytes)")
        }
        if let claim, !claim.claim(declared) {
            throw NodeError.limitExceeded("gaend already holds \(claim.budget.inUse >> 20) MiB of key files in flight (at most \(claim.budget.total >> 20) MiB "
                + "for all calls together); provide again when the other calls have returned")
        }
        let stopping = NodeError.internalFailure("gaend is stopping: nothing was stored")
        var keysPerDay: [UInt32: Int] = [:]
        return try files.enumerated().map { n, data in
            if cancel?.isCancelled == true { throw stopping }
            let file: KeyExportFile
            do { file = try KeyExportFile(parsing: data, limits: limits.keys.parseLimits) } catch {
                throw NodeError.invalidKeyFile("file \(n + 1): \(error)")
            }
            do {
                try file.checkAcceptable(now: now, limits: limits.keys, keysPerDay: &keysPerDay, isCancelled: { cancel?.isCancelled == true })
            } catch is CancellationError { throw stopping } catch {
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

    /// ProvideDiagnosisKeys calls left today (the framework's rate limit; off in trial mode).
    package nonisolated var provideRemaining: UInt32 {
        guard settings.rateLimits.enabled else { return UInt32.max }
        let today = UTCDay(unixSeconds: clock.wallTime()).rawValue
        let state = stateFile.current
        let used = state.provideDay == today ? state.provideCalls : 0
        return UInt32(max(0, settings.rateLimits.provideDiagnosisKeysPerDay - used))
    }

    /// Parses and verifies every file before anything changes; one bad file rejects the call.
    /// Returns the number of keys accepted; matching runs afterwards (`beginMatching`, or
    /// `runMatching`). Parsing (up to 16 files of 16 MiB) runs on the blocking pool.
    package func acceptKeyFiles(_ files: [Data], trust: KeyExportTrustSet, claim: BudgetClaim? = nil) async throws -> Int {
        let maxFiles = ProvideLimits.maxFiles
        guard !files.isEmpty else { throw NodeError.invalidArgs("files: give 1 to \(maxFiles) key files") }
        guard files.count <= maxFiles else { throw NodeError.limitExceeded("\(files.count) files in one call; at most \(maxFiles)") }
        try checkProvideAllowed()
        // One call parsed at a time: parsing is where a call's memory is spent.
        guard !accepting else { throw NodeError.busy("another ProvideDiagnosisKeys is being parsed") }
        accepting = true
        defer { accepting = false }
        let limits = provideLimits, now = clock.wallTime(), claim = claim ?? BudgetClaim(provideBudget)
        let parsed = try await BlockingPool.run { flag in
            try Self.parseKeyFiles(files, trust: trust, limits: limits, now: now, claim: claim, cancel: flag)
        }
        // Checked again: another call may have started matching while these were parsed. From
        // here the call holds the one matching slot (released if storing fails). A stop that
        // came meanwhile ends the call here, with nothing stored.
        try checkProvideAllowed()
        if Task.isCancelled { throw NodeError.internalFailure("gaend is stopping: nothing was stored") }
        matching = true
        do { return try await storeFiles(parsed) } catch {
            matching = false
            throw error
        }
    }

    private func storeFiles(_ parsed: [(file: KeyExportFile, digest: Data, validUntil: Double)]) async throws -> Int {
        if settings.rateLimits.enabled {
            let today = UTCDay(unixSeconds: clock.wallTime()).rawValue
            try await stateFile.change { state in
                if state.provideDay != today { state.provideDay = today; state.provideCalls = 0 }
                state.provideCalls += 1
            }
        }
        // The same file twice in one call counts once; a file provided again moves to the end
        // (it is the call's own, and the last occurrence of a key is the one that counts).
        var unique: [(file: KeyExportFile, digest: Data, validUntil: Double)] = []
        for f in parsed where !unique.contains(where: { $0.digest == f.digest }) { unique.append(f) }
        do {
            let stored = try await keyFiles.current(store)
            let replacing = stored.filter { old in unique.contains { $0.digest == old.digest } }.map(\.id)
            // Up to 16 files of 16 MiB sealed and written with a FULL fsync, on the store's thread.
            let files = unique.map { KeyFileStore.KeyFileInput(exportBin: $0.file.exportBin, validUntil: $0.validUntil) }
            let ids = try await store.keyFileStore.add(files, replacing: replacing, now: clock.wallTime())
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

    // MARK: Matching

    /// Starts matching the files just accepted by the call `token` names, in a task the exposure
    /// service awaits at shutdown, and reports the run's end through the node's events.
    package func beginMatching(token: String) async {
        run = Task {
            let result: MatchingResult
            do { result = .success(try await self.runMatching()) } catch { result = .failure(error) }
            await self.events.matchingFinished(token: token, result)
            // `matching` is false again (runMatching's end): the Matching property says so.
            await self.events.statusChanged()
        }
        await events.statusChanged()
    }

    /// Releases the matching slot of files accepted while gaend stops (no run is started).
    package func abandonMatching() {
        matching = false
        callFiles = 0
    }

    /// The exposure service's stop: cancels the run in progress (it stops between batches)
    /// and waits for its end, before the store it reads and writes closes.
    package func stopMatching() async {
        guard let run else { return }
        run.cancel()
        await run.value
        self.run = nil
    }

    /// Matches every provided key against the sightings of the retention period and replaces
    /// the stored windows. Returns the matched keys and windows of the last call's own files
    /// (ExposureStateUpdated reports those, not the union). On failure earlier results stay.
    package func runMatching() async throws -> (matchedKeys: Int, windows: Int) {
        defer { matching = false }
        logger.info("matching started", metadata: ["files.call": "\(callFiles)"])
        let now = clock.wallTime()
        let inputs = MatchingInputs(store: store, from: now - Double(settings.store.retentionDays) * 86_400, to: now + 86_400, now: now,
                                    correction: calibration.current.rssiCorrection, mapping: try dataMapping(), callFiles: callFiles,
                                    keyFiles: keyFiles)
        // The store is read and written on its thread; the computation (CPU-bound, every core)
        // runs on the blocking pool, so rotations and scans go on meanwhile. Cancelled at shutdown.
        let started = clock.monotonicTime()
        do {
            let r = try await Self.match(inputs)
            counters.matchingEnded(seconds: clock.monotonicTime().duration(since: started), keyFiles: r.keyFiles, windows: r.storedWindows)
            return (r.matchedKeys, r.windows)
        } catch {
            counters.matchingEnded(seconds: clock.monotonicTime().duration(since: started), keyFiles: nil, windows: nil)
            throw error
        }
    }

    struct MatchingInputs: Sendable {
        var store: NodeStore
        var from: Double, to: Double, now: Double
        var correction: Int
        var mapping: DiagnosisKeysDataMapping
        var callFiles: Int
        var keyFiles: KeyFileCache
    }

    /// The call's own matched keys and windows, and the totals stored: key files, windows.
    static func match(_ i: MatchingInputs) async throws -> (matchedKeys: Int, windows: Int, keyFiles: Int, storedWindows: Int) {
        let scans: [Scan]
        let files: [KeyExportFile]
        do {
            scans = try await i.store.scanStore.scans(from: i.from, to: i.to)
            files = try await i.keyFiles.current(i.store).map(\.file)
        } catch { throw NodeError.storage("\(error)") }
        let computed = try await BlockingPool.run { cancel in
            // The export's own conversion, so that `gaenctl windows` on an export gives the daemon's windows.
            let log = SightingsLog(recorded: scans, currentCorrection: i.correction)
            let computation = try ExposureComputation(log: log, mapping: i.mapping, workers: ProcessInfo.processInfo.activeProcessorCount, threads: .system)
            let (outcome, windows, _) = try computation.run(files, isCancelled: { cancel.isCancelled })
            let first = files.count - min(i.callFiles, files.count)
            let own = try computation.windows(outcome.matches(fromFile: first)).windows
            if cancel.isCancelled { throw CancellationError() }
            let encoder = JSONEncoder()
            let payloads = try windows.map { KeyFileStore.ResultInput(day: $0.day, payload: try encoder.encode($0)) }
            return (matchedKeys: outcome.matchedKeys(fromFile: first), own: own.count, windows: payloads)
        }
        if Task.isCancelled { throw CancellationError() }
        do {
            try await i.store.keyFileStore.replaceResults(kind: windowsKind, with: computed.windows, now: i.now)
        } catch { throw NodeError.storage("\(error)") }
        return (computed.matchedKeys, computed.own, files.count, computed.windows.count)
    }

    // MARK: Windows and summaries

    package nonisolated func exposureWindows() async throws -> [ExposureWindow] {
        let decoder = JSONDecoder()
        do {
            return try await store.keyFileStore.results(kind: Self.windowsKind).map { try decoder.decode(ExposureWindow.self, from: $0.payload) }
        } catch { throw NodeError.storage("\(error)") }
    }

    package nonisolated func dailySummaries(config: DailySummariesConfig) async throws -> [DailySummary] {
        try DailySummaries.compute(await exposureWindows(), config: config, today: UTCDay(unixSeconds: clock.wallTime()))
    }

    /// The v1 summary and the summation of the counted exposures' risk scores.
    package nonisolated func exposureSummary(config: GAENv1Configuration) async throws -> (summary: ExposureSummaryV1, summation: Int) {
        let r = try ExposureSummaryV1.compute(await exposureWindows(), configuration: config, today: UTCDay(unixSeconds: clock.wallTime()))
        return (r.summary, r.exposures.filter(\.counted).reduce(0) { $0 + $1.riskScore })
    }

    // MARK: Data mapping

    package nonisolated func dataMapping() throws -> DiagnosisKeysDataMapping {
        try stateFile.current.mapping?.mapping() ?? .default
    }

    package func setDataMapping(_ mapping: DiagnosisKeysDataMapping) async throws {
        let now = clock.wallTime(), limited = settings.rateLimits.enabled
        let perWeek = Double(max(1, settings.rateLimits.dataMappingChangesPerWeek))
        try await stateFile.change { state in
            if limited, let last = state.mappingChangedAt, now - last < 7 * 86_400 / perWeek {
                let resets = Date(timeIntervalSince1970: last + 7 * 86_400).formatted(.iso8601)
                throw NodeError.rateLimited("the data mapping may change once per 7 days; next change allowed at \(resets)")
            }
            state.mapping = NodeState.MappingState(mapping)
            state.mappingChangedAt = now
        }
    }
}
