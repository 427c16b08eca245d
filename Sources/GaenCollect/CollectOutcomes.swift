import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaenApp
import GaendAPI
import GaendClient
import PlatformSupport
import TrialFormats

/// `gaenctl collect --outcomes`: at the end of a trial, with the participant's consent, the
/// board's own keys and its app's outcomes go to the trial server beside its days, in
/// `board=B/outcomes/` (TrialFormats' `CollectedOutcomes` is the layout). The keys come through
/// gaend's D-Bus boundary exactly as `app submit` reads them (GetTemporaryExposureKeyHistory,
/// which answers only group gaend-keys); the outcomes from the app's own state directory.
public enum CollectOutcomes {
    /// The spool's entry for the outcomes (shipped after the days: "outcomes" sorts after dates).
    public static func spoolDay(board: String) -> CollectSpool.Day { CollectSpool.Day(board: board, day: CollectSpool.Day.outcomes) }

    /// Prepares `pending/board=B/outcomes/` with the keys, the app's outcomes, gaend's windows
    /// and their manifest. Only called with consent: without it nothing is read or written.
    public static func prepare(_ client: GaendClient, spool: CollectSpool, board: String, appStateDirectory: String, now: Int64) async throws {
        let scratch = try spool.freshScratch()
        let keys: [DiagnosisKey]
        do {
            keys = try await client.temporaryExposureKeyHistory().map {
                DiagnosisKey(key: try TemporaryExposureKey(bytes: $0.keyData), rollingStartIntervalNumber: ENIntervalNumber($0.rollingStartIntervalNumber),
                             rollingPeriod: $0.rollingPeriod)
            }
        } catch {
            let hint = "\(error)".contains("NotAuthorized") ? " (gaend gives the key history to group gaend-keys only: run as the app's user gaend-app, docs/fleet.md)" : ""
            throw CollectError("the board's keys: \(error)\(hint)")
        }
        let windows = try await client.exposureWindows()
        let stateFile = appStateDirectory + "/state.json"
        guard FileManager.default.fileExists(atPath: stateFile) else {
            throw CollectError("\(stateFile): no app state (the app has never run on this board, or --app-state names another directory)")
        }
        let state: AppState
        do { state = try AppStateStore(directory: appStateDirectory).load() } catch { throw CollectError("\(error)") }
        let submitted = try AppSubmission.submittedDays(stateDirectory: appStateDirectory)
        func risk(_ r: RiskRecord) -> CollectedOutcomes.Risk { .init(computedAt: r.computedAt, engine: r.engine, level: r.level, windows: r.windows) }
        let outcomes = CollectedOutcomes(
            board: board, collectedAt: now, submittedDays: submitted.sorted(), riskHistory: state.history.map(risk), risk: state.risk.map(risk),
            highRiskSince: state.highRiskSince,
            packagesProvided: state.packages.values.filter(\.provided).sorted { $0.id < $1.id }
                .map { .init(id: $0.id, keys: $0.keys, providedAt: $0.providedAt) },
            windows: windows.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let files: [(String, Data)] = [
            (CollectedOutcomes.appFile, try outcomes.encoded()),
            (CollectedOutcomes.keysFile, try KeyListFile.encode(keys)),
            (CollectedOutcomes.windowsFile, try encoder.encode(windows) + Data("\n".utf8)),
        ]
        // Keys are secrets until published: the spool copy is the collect user's alone.
        for (name, data) in files { try AtomicOutputFile.write(data, to: scratch.appendingPathComponent(name).path, mode: 0o600, durable: false) }
        try Data(DayManifest.make(directory: scratch.path, files: files.map(\.0)).utf8).write(to: scratch.appendingPathComponent(DayManifest.fileName))
        let dir = spool.root.appendingPathComponent(".outcomes")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.moveItem(at: scratch, to: dir)
        try spool.enqueue(dir, as: spoolDay(board: board))
    }
}
