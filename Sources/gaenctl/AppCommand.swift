import ArgumentParser
import DBusCore
import ENProtocol
import Foundation
import GaenApp
import GaendAPI
import GaendClient
import KeyDistribution

/// `gaenctl app`: the phone app's half of the loop on a board, beside gaend (not inside it:
/// gaend never sees the network). Run by gaend-app@hciN.timer (docs/key-server.md).
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "The app half on a board: download the trial server's key packages, provide them to gaend, compute the risk; upload the board's keys.",
        subcommands: [AppSync.self, AppSubmit.self, AppStatusCommand.self]
    )

    /// The app's state directory: --state-dir, else systemd's STATE_DIRECTORY, else
    /// /var/lib/gaend-app/NAME (NAME: --name's instance, e.g. hci0, or "default").
    static func stateDirectory(_ explicit: String?, bus: BusOptions) -> String {
        if let explicit { return explicit }
        if let dir = ProcessInfo.processInfo.environment["STATE_DIRECTORY"], !dir.isEmpty {
            return String(dir.split(separator: ":").first ?? Substring(dir))
        }
        return "/var/lib/gaend-app/" + instanceName(bus.name)
    }

    static func instanceName(_ name: String?) -> String {
        guard let name, !name.isEmpty, name != "org.gaend" else { return "default" }
        return name.hasPrefix("org.gaend.") ? String(name.dropFirst("org.gaend.".count)) : name
    }

    static func validateServer(_ server: String) throws {
        guard server.hasPrefix("http://") || server.hasPrefix("https://"), server.count <= 512,
              !server.contains(where: { $0.isWhitespace }) else {
            throw ValidationError("--server '\(server)': expected an http:// or https:// URL")
        }
    }
}

struct AppSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "One run of the app: download new packages, provide them to gaend, compute the risk.",
        discussion: """
            Reads the server in the CWA layout (--country) or the Google layout (--region): its \
            indexes minus the packages held, each package's signature verified against --trust \
            before it is kept (a bad one is refused, counted and logged with its URL; the others \
            go on). The server's Date is checked first: more than 2 h off stops the run. Files \
            are retried with exponential backoff and jitter (Retry-After honoured on 429/503); \
            a file still failing waits for the next run. New packages are provided to gaend in \
            calls of at most 16 files, within gaend's daily limit and --max-provide-calls a day; \
            each package is provided once. Then the risk is computed with the engine and \
            parameters of the server's signed app configuration, kept with its history in \
            STATE_DIR/status.json (shown by gaenctl status), and a change to high risk is \
            announced: a journal entry with MESSAGE_ID=3f0c8a4e5b7d4c2a9e1f6b0d8c7a5e42, the \
            D-Bus signal org.gaend.App1.RiskChanged, and --hook. Prints one line: \
            N new packages, M provided, K refused. Exit 1 when the run could not complete.
            """)

    @OptionGroup var bus: BusOptions
    @Option(help: ArgumentHelp("The trial server's base URL (the published tree's root).", valueName: "URL"))
    var server: String
    @Option(help: "Read the CWA distribution layout for this country.")
    var country: String?
    @Option(help: "Read the Google key server layout under this region's folder.")
    var region: String?
    @OptionGroup var trustOptions: TrustOptions
    @Option(help: ArgumentHelp("The app's state directory (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).", valueName: "DIR"))
    var stateDir: String?
    @Option(help: ArgumentHelp("Command run (through /bin/sh) when the risk turns high; GAEN_RISK_LEVEL, GAEN_RISK_ENGINE, GAEN_RISK_SINCE and GAEN_NODE in its environment.", valueName: "CMD"))
    var hook: String?
    @Option(help: "ProvideDiagnosisKeys calls the app makes at most per UTC day (gaend's limit is 6).")
    var maxProvideCalls: Int = 6
    @Option(help: "Seconds for the whole run.")
    var runTimeout: Double = 600
    @Option(help: "Seconds per file.")
    var fileTimeout: Double = 30
    @Option(help: "Largest package accepted, in bytes.")
    var maxPackageBytes: Int = 16 << 20
    @Option(help: "Attempts per file.")
    var attempts: Int = 4
    @Option(help: "Seconds of the first retry's backoff (doubled each time, with jitter).")
    var backoff: Double = 1
    @Option(help: "Largest clock difference to the server's Date, in seconds.")
    var maxClockSkew: Double = 7200
    @Option(help: "Seconds to wait for gaend's matching result after each provide.")
    var matchWait: Double = 120
    @Option(help: ArgumentHelp("journald's native socket, for the high-risk entry.", valueName: "PATH"))
    var journalSocket: String = "/run/systemd/journal/socket"

    func validate() throws {
        try AppCommand.validateServer(server)
        guard (country == nil) != (region == nil) else { throw ValidationError("give --country CC or --region R (one of them)") }
        for code in [country, region].compactMap({ $0 }) {
            guard !code.isEmpty, code.count <= 32, code.allSatisfy(KeysPublish.codeCharacters.contains) else {
                throw ValidationError("'\(code)': letters, digits, - and _ only")
            }
        }
        guard !trustOptions.trust.isEmpty else { throw ValidationError("give at least one --trust ID:VERSION=PEM: packages are never kept unverified") }
        guard maxProvideCalls >= 0, runTimeout > 0, fileTimeout > 0, maxPackageBytes > 0, attempts >= 1, backoff >= 0, maxClockSkew > 0 else {
            throw ValidationError("timeouts, sizes and attempts must be positive")
        }
    }

    func run() async throws {
        let started = Date().timeIntervalSince1970
        let directory = AppCommand.stateDirectory(stateDir, bus: bus)
        var settings = SyncSettings(server: server, layout: country.map { .cwa(country: $0) } ?? .google(region: region!),
                                    trust: try trustOptions.trustSet()!)
        settings.runTimeout = runTimeout
        settings.perFileTimeout = fileTimeout
        settings.maxPackageBytes = maxPackageBytes
        settings.attempts = attempts
        settings.backoffBase = backoff
        settings.maxClockSkew = maxClockSkew
        let sync: SyncRun
        do {
            sync = try SyncRun(settings: settings, store: try AppStateStore(directory: directory), http: try HTTPSession(),
                                       log: { printError("gaenctl app sync: \($0)") })
        } catch {
            printError("gaenctl app sync: \(error)")
            throw ExitCode(1)
        }
        var record = SyncRecord(startedAt: Int64(started), finishedAt: 0, server: server, newPackages: 0, provided: 0, refused: 0,
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
                try await withDaemonConnection { client in
                    try await provideAndAssess(sync, client: client, configuration: outcome.configuration, record: &record)
                }
            } catch {
                failure = "gaend: \(error)"
            }
        }
        record.finishedAt = Int64(Date().timeIntervalSince1970)
        record.error = failure ?? ""
        record.pending += sync.waiting.count
        try? sync.finish(record)
        print("\(record.newPackages) new packages, \(record.provided) provided, \(record.refused) refused")
        if let failure {
            printError("gaenctl app sync: \(failure)")
            throw ExitCode(1)
        }
    }

    private func withDaemonConnection(_ body: (GaendClient) async throws -> Void) async throws {
        let client = try await bus.connectToGaend()
        defer { client.bus.close() }
        try await body(client)
    }

    private func provideAndAssess(_ sync: SyncRun, client: GaendClient, configuration: AppConfiguration?,
                                  record: inout SyncRecord) async throws {
        let status = try await client.status()
        let calls = sync.callsLeft(gaendRemaining: status.provideDiagnosisKeysRemaining, perDay: maxProvideCalls)
        if !sync.waiting.isEmpty && calls == 0 {
            printError("gaenctl app sync: the provide limit is reached for today; \(sync.waiting.count) packages wait (none is lost)")
        }
        let wait = matchWait
        record.provided = try await sync.provide(calls: calls) { paths in
            try await Self.provide(paths, client: client, wait: wait)
        }
        guard let configuration else {
            printError("gaenctl app sync: no app configuration: the risk is not computed")
            return
        }
        let windows = try await client.exposureWindows()
        let now = Int64(Date().timeIntervalSince1970)
        let risk: RiskRecord
        do {
            risk = try AppRisk.evaluate(configuration, windows: try JSONEncoder().encode(windows), today: UTCDay(unixSeconds: Double(now)), at: now)
        } catch {
            printError("gaenctl app sync: risk engine \(configuration.riskEngine): \(error)")
            return
        }
        if try sync.record(risk: risk) {
            await announce(risk, since: sync.state.highRiskSince ?? now, client: client)
        }
    }

    /// Passes the files as descriptors in one call and waits for its matching result.
    static func provide(_ paths: [String], client: GaendClient, wait: Double) async throws {
        var fds: [DBusUnixFD] = []
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw CommandFailure("\(path): cannot open: \(String(cString: strerror(errno)))") }
            fds.append(DBusUnixFD(owning: fd))
        }
        // Unguessable, as `keys provide`'s: another connection cannot forge this call's result.
        var random = SecureRandom()
        let token = "gaenctl-app-" + (try random.bytes(16)).hexString
        let updates = try await client.exposureStateUpdates()
        _ = try await client.provideDiagnosisKeys(files: fds, token: token)
        let result = await firstStateUpdate(updates, token: token, within: wait)
        // Accepted is what counts for "provided": gaend keeps the files; a slow match only delays the windows.
        if let result, !result.error.isEmpty { printError("gaenctl app sync: matching failed: \(result.error)") }
        if let result, result.error.isEmpty {
            printError("gaenctl app sync: provided \(paths.count) packages: \(result.matchedKeys) keys matched, \(result.windows) exposure windows")
        }
        if result == nil { printError("gaenctl app sync: no matching result within \(wait) s; the risk uses the windows so far") }
    }

    private func announce(_ risk: RiskRecord, since: Int64, client: GaendClient) async {
        let node = AppCommand.instanceName(client.destination)
        let message = "high risk: the \(risk.engine) engine found a high-risk encounter in \(risk.windows) exposure windows (node \(node))"
        if !HighRiskAnnouncement.journal(message, fields: ["GAEN_NODE": node, "GAEN_RISK_ENGINE": risk.engine, "GAEN_RISK_LEVEL": risk.level],
                                         socket: journalSocket) {
            printError("gaenctl app sync: \(message) (MESSAGE_ID=\(HighRiskAnnouncement.messageID))")
        }
        do {
            _ = try await client.bus.connection.send(.signal(path: AppBus.path, interface: AppBus.interface, member: AppBus.riskChanged,
                                                         body: [.string(node), .string(risk.level), .string(risk.engine), .int64(since)]))
        } catch {
            printError("gaenctl app sync: cannot send \(AppBus.interface).\(AppBus.riskChanged): \(error)")
        }
        if let hook, let problem = HighRiskAnnouncement.hook(hook, environment: [
            "GAEN_RISK_LEVEL": risk.level, "GAEN_RISK_ENGINE": risk.engine, "GAEN_RISK_SINCE": String(since), "GAEN_NODE": node,
        ]) {
            printError("gaenctl app sync: --hook: \(problem)")
        }
    }
}

/// The app's D-Bus signal: sent by the app on its own connection (gaend is not involved),
/// so any listener on the bus (a desktop notifier, a metrics exporter) hears a change to high risk.
enum AppBus {
    static let path = "/org/gaend/App1"
    static let interface = "org.gaend.App1"
    /// (s node, s level, s engine, x since): since is Unix seconds.
    static let riskChanged = "RiskChanged"
}

struct AppSubmit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Upload the board's own keys of the days that have rolled to the trial server (WebDAV PUT, basic auth).",
        discussion: """
            Only with --consent yes (the trial's consent setting; anything else uploads nothing). \
            Reads the node's key history from gaend (root or gaend's user), keeps the days before \
            today (UTC) not uploaded yet, and PUTs them as one key export ZIP to \
            URL/inbox/USER/keys-DAY.zip with the board's credentials (the password from a file, \
            never from the command line). Days uploaded are remembered in STATE_DIR/submitted.json.
            """)

    @OptionGroup var bus: BusOptions
    @Option(help: ArgumentHelp("The trial server's base URL.", valueName: "URL"))
    var server: String
    @Option(help: ArgumentHelp("The board's user name on the server.", valueName: "USER"))
    var user: String
    @Option(help: ArgumentHelp("File holding the board's password (one line).", valueName: "FILE"))
    var passwordFile: String
    @Option(help: "The trial's consent setting: yes to upload.")
    var consent: String = "no"
    @Option(help: ArgumentHelp("The app's state directory (as app sync).", valueName: "DIR"))
    var stateDir: String?
    @Option(help: "Seconds for the upload.")
    var uploadTimeout: Double = 60

    func validate() throws {
        try AppCommand.validateServer(server)
        guard !user.isEmpty, user.count <= 64, user.allSatisfy(KeysPublish.codeCharacters.contains) else {
            throw ValidationError("--user: letters, digits, - and _ only")
        }
        guard ["yes", "no"].contains(consent) else { throw ValidationError("--consent: yes or no") }
    }

    func run() async throws {
        guard consent == "yes" else { print("0 keys uploaded (no consent)"); return }
        try await withDaemon("app submit", bus) { client in
            let directory = AppCommand.stateDirectory(stateDir, bus: bus)
            let store = try AppStateStore(directory: directory)
            let recordPath = directory + "/submitted.json"
            var done = Set((try? JSONDecoder().decode([String].self, from: Data(contentsOf: URL(fileURLWithPath: recordPath)))) ?? [])
            let password = try KeyFileLoader.readBounded(passwordFile, limit: 4096)
            let secret = String(decoding: password, as: UTF8.self).trimmingCharacters(in: .newlines)
            guard !secret.isEmpty else { throw CommandFailure("--password-file \(passwordFile) is empty") }
            let today = UTCDay(unixSeconds: Date().timeIntervalSince1970)
            let keys = try await client.temporaryExposureKeyHistory().map {
                DiagnosisKey(key: try TemporaryExposureKey(bytes: $0.keyData), rollingStartIntervalNumber: ENIntervalNumber($0.rollingStartIntervalNumber),
                             rollingPeriod: $0.rollingPeriod)
            }.filter { $0.rollingStartIntervalNumber.utcDay < today && !done.contains($0.rollingStartIntervalNumber.utcDay.isoDate) }
            guard let newest = keys.map(\.rollingStartIntervalNumber.utcDay).max() else { print("0 keys uploaded (none new)"); return }
            let bin = try KeyExportWriter.exportBin(header: KeyExportHeader(covering: keys, region: ""), keys: keys)
            let zip = try KeyExportWriter.signedZip(exportBin: bin, signers: [])
            var base = server
            while base.hasSuffix("/") { base.removeLast() }
            let url = "\(base)/inbox/\(user)/keys-\(newest.isoDate).zip"
            let response: HTTPResponse
            do { response = try HTTPSession().put(url, body: zip, user: user, password: secret, timeout: uploadTimeout) } catch {
                throw CommandFailure("\(error)")
            }
            guard (200..<300).contains(response.status) else { throw CommandFailure("\(url): HTTP \(response.status)") }
            for k in keys { done.insert(k.rollingStartIntervalNumber.utcDay.isoDate) }
            try store.write(try JSONEncoder().encode(done.sorted()), to: "submitted.json")
            print("\(keys.count) keys uploaded to \(url)")
        }
    }
}

struct AppStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "The app's last sync, packages held and risk (STATE_DIR/status.json).",
        discussion: "With --json prints status.json as it is (docs/key-server.md describes its fields).")

    @Option(help: ArgumentHelp("The app's state directory (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).", valueName: "DIR"))
    var stateDir: String?
    @Option(name: .customLong("name"), help: ArgumentHelp("The node's instance (hci0), naming the default state directory.", valueName: "NAME"))
    var name: String?
    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        try runReportingFailures("app status") {
            let directory = stateDir ?? "/var/lib/gaend-app/" + AppCommand.instanceName(name)
            guard let status = try AppStatus.read(directory: directory) else { throw CommandFailure("\(directory): no app status yet (no sync has run)") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                FileHandle.standardOutput.write(try encoder.encode(status))
                print("")
            } else {
                for line in AppStatusLines.lines(status) { print(line) }
            }
        }
    }
}

/// The app's status as `gaenctl status` and `gaenctl app status` print it.
enum AppStatusLines {
    static func time(_ t: Int64) -> String { Date(timeIntervalSince1970: Double(t)).formatted(.iso8601) }

    static func lines(_ s: AppStatus) -> [String] {
        var out: [String] = []
        if let l = s.lastSync {
            out.append("app last sync:  \(time(l.finishedAt)) from \(l.server): \(l.newPackages) new, \(l.provided) provided, \(l.refused) refused"
                       + (l.error.isEmpty ? "" : "; failed: \(l.error)"))
        } else {
            out.append("app last sync:  never")
        }
        out.append("app packages:   \(s.packagesHeld) held, \(s.packagesProvided) provided, \(s.packagesWaiting) waiting")
        if let r = s.risk {
            out.append("app risk:       \(r.level) (\(r.engine), \(r.windows) windows, \(time(r.computedAt)))"
                       + (s.highRiskSince.map { "; high since \(time($0))" } ?? ""))
        } else {
            out.append("app risk:       not computed yet")
        }
        return out
    }

    static func json(_ s: AppStatus) -> JSONValue {
        var o: [String: JSONValue] = [
            "packagesHeld": .int(Int64(s.packagesHeld)), "packagesProvided": .int(Int64(s.packagesProvided)),
            "packagesWaiting": .int(Int64(s.packagesWaiting)),
        ]
        if let l = s.lastSync {
            o["lastSync"] = .object(["startedAt": .int(l.startedAt), "finishedAt": .int(l.finishedAt), "server": .string(l.server),
                                     "newPackages": .int(Int64(l.newPackages)), "provided": .int(Int64(l.provided)),
                                     "refused": .int(Int64(l.refused)), "pending": .int(Int64(l.pending)), "bytes": .int(Int64(l.bytes)),
                                     "error": .string(l.error)])
        } else {
            o["lastSync"] = .null
        }
        o["riskLevel"] = .string(s.risk?.level ?? "unknown")
        o["riskEngine"] = s.risk.map { .string($0.engine) } ?? .null
        o["riskComputedAt"] = s.risk.map { .int($0.computedAt) } ?? .null
        o["highRiskSince"] = s.highRiskSince.map { .int($0) } ?? .null
        return .object(o)
    }
}
