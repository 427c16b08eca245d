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
import HTTPClient
import GaendAPI
import GaendClient
import KeyDistribution
import PlatformSupport
import TrialTime

/// What `gaenctl app sync` does besides downloading: gaend's side of one run (provide the
/// waiting packages within the day's calls, wait for matching, compute the risk with the
/// configuration's engine, announce a change to high).
public struct AppSyncJob {
    public struct Options: Sendable {
        /// ProvideDiagnosisKeys calls the app makes at most per UTC day (gaend's limit is 6).
        public var maxProvideCalls = 6
        /// Seconds to wait for gaend's matching result after each provide.
        public var matchWait: Double = 120
        /// journald's native socket, for the high-risk entry.
        public var journalSocket = "/run/systemd/journal/socket"
        /// Command run through /bin/sh when the risk turns high.
        public var hook: String?
        public init() {}
    }

    public let settings: SyncSettings
    public let stateDirectory: String
    public let options: Options
    public let http: HTTPSession
    let log: (String) -> Void
    let now: () -> Double
    let trialClock: TrialClock?
    /// The run's record, the risk's day and time: the trial's with a trial clock (SyncRun).
    func calendarNow() -> Double { trialClock?.trialTime(real: now()) ?? now() }

    public init(settings: SyncSettings, stateDirectory: String, options: Options, http: HTTPSession,
                now: @escaping () -> Double = { Date().timeIntervalSince1970 }, trialClock: TrialClock? = nil,
                log: @escaping (String) -> Void) {
        self.settings = settings
        self.trialClock = trialClock
        self.stateDirectory = stateDirectory
        self.options = options
        self.http = http
        self.now = now
        self.log = log
    }

    /// The run's one line: `N new packages, M provided, K refused`, and `, W waiting` when
    /// packages are left for a later run.
    public static func summary(_ r: SyncRecord) -> String {
        "\(r.newPackages) new packages, \(r.provided) provided, \(r.refused) refused" + (r.pending > 0 ? ", \(r.pending) waiting" : "")
    }

    /// One whole run. The record is kept in the state (status.json) whatever happens; a
    /// non-empty `error` means the run could not complete.
    public func run(connect: () async throws -> GaendClient) async throws -> SyncRecord {
        let started = Int64(calendarNow())
        let sync = try SyncRun(settings: settings, store: try AppStateStore(directory: stateDirectory), http: http, now: now,
                               trialClock: trialClock, log: log)
        var record = SyncRecord(startedAt: started, finishedAt: 0, server: settings.server, newPackages: 0, provided: 0, refused: 0,
                                pending: 0, bytes: 0, error: "")
        var outcome = DownloadOutcome()
        var failure: String? = nil
        do {
            outcome = try sync.download()
        } catch {
            failure = "\(error)"
        }
        record.newPackages = outcome.newPackages
        record.refused = outcome.refused
        record.pending = outcome.pending
        record.bytes = outcome.bytes
        if failure == nil {
            do {
                let client = try await connect()
                defer { client.bus.close() }
                try await provideAndAssess(sync, client: client, configuration: outcome.configuration, record: &record)
            } catch {
                failure = "gaend: \(error)"
            }
        }
        record.finishedAt = Int64(calendarNow())
        if let failure { record.error = failure }
        // An index that could not be read: what it lists waits, and the run says it did not complete.
        if record.error.isEmpty && !outcome.incomplete.isEmpty { record.error = outcome.incomplete.joined(separator: "; ") }
        record.pending += sync.waiting.count
        try? sync.finish(record)
        return record
    }

    private func provideAndAssess(_ sync: SyncRun, client: GaendClient, configuration: AppConfiguration?,
                                  record: inout SyncRecord) async throws {
        let status = try await client.status()
        let calls = sync.callsLeft(gaendRemaining: status.provideDiagnosisKeysRemaining, perDay: options.maxProvideCalls)
        if !sync.waiting.isEmpty && calls == 0 {
            log("the provide limit is reached for today; \(sync.waiting.count) packages wait (none is lost)")
        }
        let wait = options.matchWait
        let log = self.log
        let provided = try await sync.provide(calls: calls) { paths in
            try await Self.provide(paths, client: client, wait: wait, log: log)
        }
        record.provided = provided.provided
        record.refused += provided.refused
        record.refusedByGaend = provided.refused
        // A call gaend refused for a reason not in its files: the run did not complete its
        // provide, and says so (exit 1, gaend_app_last_sync_success 0); the risk still runs.
        if let stopped = provided.stopped {
            record.error = "\(stopped); \(sync.waiting.count) packages wait for the next run"
        }
        guard let configuration else {
            log("no app configuration: the risk is not computed")
            return
        }
        let windows = try await client.exposureWindows()
        let at = Int64(calendarNow())
        let risk: RiskRecord
        do {
            risk = try AppRisk.evaluate(configuration, windows: try JSONEncoder().encode(windows), today: UTCDay(unixSeconds: Double(at)), at: at)
        } catch {
            log("risk engine \(configuration.riskEngine): \(error)")
            return
        }
        if try sync.record(risk: risk) {
            await announce(risk, since: sync.state.highRiskSince ?? at, client: client)
        }
    }

    /// Passes the files as descriptors in one call and waits for its matching result.
    static func provide(_ paths: [String], client: GaendClient, wait: Double, log: (String) -> Void) async throws {
        var fds: [DBusUnixFD] = []
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw AppError.state("\(path): cannot open: \(SystemCallError.lastReason)") }
            fds.append(DBusUnixFD(owning: fd))
        }
        // Unguessable, as `keys provide`'s: another connection cannot forge this call's result.
        var random = SecureRandom()
        let token = "gaenctl-app-" + (try random.bytes(16)).hexString
        let updates = try await client.exposureStateUpdates()
        _ = try await client.provideDiagnosisKeys(files: fds, token: token)
        let result = await firstStateUpdate(updates, token: token, within: wait)
        // Accepted is what counts for "provided": gaend keeps the files; a slow match only delays the windows.
        if let result, !result.error.isEmpty { log("matching failed: \(result.error)") }
        if let result, result.error.isEmpty {
            log("provided \(paths.count) packages: \(result.matchedKeys) keys matched, \(result.windows) exposure windows")
        }
        if result == nil { log("no matching result within \(wait) s; the risk uses the windows so far") }
    }

    private func announce(_ risk: RiskRecord, since: Int64, client: GaendClient) async {
        let node = AppPaths.instanceName(client.destination)
        // What the engine decided, not why: CWA's day total can be high with no single high-risk
        // encounter, so "a high-risk encounter" would state what did not happen.
        let message = "high risk: the \(risk.engine) engine's risk is high, from \(risk.windows) exposure windows (node \(node))"
        if !HighRiskAnnouncement.journal(message, fields: ["GAEN_NODE": node, "GAEN_RISK_ENGINE": risk.engine, "GAEN_RISK_LEVEL": risk.level],
                                         socket: options.journalSocket) {
            log("\(message) (MESSAGE_ID=\(HighRiskAnnouncement.messageID))")
        }
        let signal = GaendAppRiskChanged(node: node, level: risk.level, engine: risk.engine, since: since)
        // Sent as the owner of the app's own name: receivers match on it as the sender
        // (GaendAppBus.riskChangedMatch), and only the app's user may own it.
        let name = GaendAppBus.busName(instance: node)
        do {
            try await client.bus.connection.requestName(name)
        } catch {
            log("cannot own \(name) (\(error)): receivers that check the sender will ignore the signal; run the app as user gaend-app")
        }
        do {
            _ = try await client.bus.connection.send(.signal(path: GaendAppBus.objectPath, interface: GaendAppRiskChanged.interface,
                                                             member: GaendAppRiskChanged.member, body: signal.args))
        } catch {
            log("cannot send \(GaendAppRiskChanged.interface).\(GaendAppRiskChanged.member): \(error)")
        }
        if let hook = options.hook, let problem = HighRiskAnnouncement.hook(hook, environment: [
            "GAEN_RISK_LEVEL": risk.level, "GAEN_RISK_ENGINE": risk.engine, "GAEN_RISK_SINCE": String(since), "GAEN_NODE": node,
        ]) {
            log("--hook: \(problem)")
        }
    }
}
