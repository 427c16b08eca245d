import ArgumentParser
import BoardNames
import CLISupport
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
import HTTPClient
import GaendClient
import KeyDistribution
import PlatformSupport
import TrialTime

/// `gaenctl app`: the phone app's half of the loop on a board, beside gaend (not inside it:
/// gaend never sees the network). Run by gaend-app@hciN.timer (docs/key-server.md).
package struct AppCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "The app half on a board: download the trial server's key packages, provide them to gaend, compute the risk; upload the board's keys.",
        subcommands: [AppSync.self, AppSubmit.self, AppStatusCommand.self]
    )

    package init() {}

    static func stateDirectory(_ explicit: String?, bus: BusOptions) -> String {
        AppPaths.stateDirectory(explicit, instance: bus.name)
    }

    static func validateServer(_ server: String) throws {
        do { try AppPaths.validateServer(server) } catch { throw ValidationError("--server \(error)") }
    }

    /// --cacert: a trial's private CA, instead of the system's store.
    static func session(caFile: String?) throws -> HTTPSession {
        do { return try HTTPSession(userAgent: "gaenctl-app", caFile: caFile) } catch { throw CommandFailure("--cacert: \(error)") }
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
            calls of at most 16 files and 64 MiB, within gaend's daily limit and \
            --max-provide-calls a day; each package is provided once. A file gaend refuses is \
            set apart (the one gaend names, else found by halving the call), refused, counted \
            and logged with its URL and reason, and the others are provided in the same run; \
            it goes into no call again, but is tried alone once a day, 3 times at most, in case \
            the refusal was due to gaend's clock. Then the risk is computed with the engine and \
            parameters of the server's signed app configuration, kept with its history in \
            STATE_DIR/status.json (shown by gaenctl status), and a change to high risk is \
            announced: a journal entry with MESSAGE_ID=3f0c8a4e5b7d4c2a9e1f6b0d8c7a5e42, the \
            D-Bus signal org.gaend.App1.RiskChanged, and --hook. Prints one line: \
            N new packages, M provided, K refused[, W waiting] (K: refused at download or by \
            gaend in this run; W: packages listed or held and not yet provided). Exit status: \
            0 when the run completed and refused nothing; 1 when it could not complete (clock, \
            server, gaend missing, or gaend refused a call for a reason not in its files: the \
            packages wait); 2 when it completed but refused packages.
            """)

    @OptionGroup var bus: BusOptions
    // Numeric options parse their value unconditionally: "-5" is a value the checks refuse
    // with their own message, not a missing value.
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
    @Option(parsing: .unconditional, help: "ProvideDiagnosisKeys calls the app makes at most per UTC day (gaend's limit is 6).")
    var maxProvideCalls: Int = 6
    @Option(parsing: .unconditional, help: "Seconds for the whole run.")
    var runTimeout: Double = 600
    @Option(parsing: .unconditional, help: "Seconds per file.")
    var fileTimeout: Double = 30
    @Option(parsing: .unconditional, help: "Largest package accepted, in bytes.")
    var maxPackageBytes: Int = 16 << 20
    @Option(parsing: .unconditional, help: "New files fetched at most per run (more wait for the next runs): a broken or hostile index cannot turn one run into as many requests.")
    var maxNewFiles: Int = 1_000
    @Option(parsing: .unconditional, help: "Attempts per file.")
    var attempts: Int = 4
    @Option(parsing: .unconditional, help: "Seconds of the first retry's backoff (doubled each time, with jitter).")
    var backoff: Double = 1
    @Option(parsing: .unconditional, help: "Largest clock difference to the server's Date, in seconds.")
    var maxClockSkew: Double = 7200
    @Option(parsing: .unconditional, help: "Seconds to wait for gaend's matching result after each provide.")
    var matchWait: Double = 120
    @Option(help: ArgumentHelp("journald's native socket, for the high-risk entry.", valueName: "PATH"))
    var journalSocket: String = "/run/systemd/journal/socket"
    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's (a trial's private CA).", valueName: "FILE"))
    var cacert: String?
    @OptionGroup var clock: TrialClockOption

    func validate() throws {
        try AppCommand.validateServer(server)
        guard (country == nil) != (region == nil) else { throw ValidationError("give --country CC or --region R (one of them)") }
        for code in [country, region].compactMap({ $0 }) {
            guard !code.isEmpty, code.count <= 32, code.allSatisfy(KeysPublish.codeCharacters.contains) else {
                throw ValidationError("'\(code)': letters, digits, - and _ only")
            }
        }
        guard !trustOptions.trust.isEmpty else { throw ValidationError("give at least one --trust ID:VERSION=PEM: packages are never kept unverified") }
        // Each bound checked as a finite number in its range (inf, nan or 1e308 would trap when
        // turned into milliseconds).
        try NumericOption.check(maxProvideCalls, "--max-provide-calls", 0...1_000, unit: "calls")
        try NumericOption.check(runTimeout, "--run-timeout", 1...NumericOption.day)
        try NumericOption.check(fileTimeout, "--file-timeout", 1...3_600)
        try NumericOption.check(maxPackageBytes, "--max-package-bytes", 1_024...(64 << 20), unit: "bytes")
        try NumericOption.check(attempts, "--attempts", 1...20, unit: "attempts")
        try NumericOption.check(maxNewFiles, "--max-new-files", 1...100_000, unit: "files")
        try NumericOption.check(backoff, "--backoff", 0...3_600)
        try NumericOption.check(maxClockSkew, "--max-clock-skew", 1...NumericOption.day)
        try NumericOption.check(matchWait, "--match-wait", 0...3_600)
    }

    func run() async throws {
        var settings = SyncSettings(server: server, layout: country.map { .cwa(country: $0) } ?? .google(region: region!),
                                    trust: try trustOptions.trustSet()!)
        settings.runTimeout = runTimeout
        settings.perFileTimeout = fileTimeout
        settings.maxPackageBytes = maxPackageBytes
        settings.maxNewFilesPerRun = maxNewFiles
        settings.attempts = attempts
        settings.backoffBase = backoff
        settings.maxClockSkew = maxClockSkew
        var options = AppSyncJob.Options()
        options.maxProvideCalls = maxProvideCalls
        options.matchWait = matchWait
        options.journalSocket = journalSocket
        options.hook = hook
        let record: SyncRecord
        do {
            let job = AppSyncJob(settings: settings, stateDirectory: AppCommand.stateDirectory(stateDir, bus: bus), options: options,
                                 http: try AppCommand.session(caFile: cacert), trialClock: try clock.load(),
                                 log: { printError("gaenctl app sync: \(TextSafety.escaped($0, limit: 4_096))") })
            record = try await job.run(connect: { try await bus.connectToGaend() })
        } catch {
            printError("gaenctl app sync: \(TextSafety.escaped("\(error)", limit: 4_096))")
            throw ExitCode(1)
        }
        print(AppSyncJob.summary(record))
        if !record.error.isEmpty {
            printError("gaenctl app sync: \(TextSafety.escaped(record.error, limit: 4_096))")
            throw ExitCode(1)
        }
        if record.refused > 0 {
            printError("gaenctl app sync: \(record.refused) packages refused (logged above with their URLs)")
            throw ExitCode(2)
        }
    }
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
    @Option(parsing: .unconditional, help: "Seconds for the upload.")
    var uploadTimeout: Double = 60
    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's (a trial's private CA).", valueName: "FILE"))
    var cacert: String?
    @OptionGroup var clock: TrialClockOption

    func validate() throws {
        try AppCommand.validateServer(server)
        if let problem = BoardName.problem(user) { throw ValidationError("--user: \(problem)") }
        guard ["yes", "no"].contains(consent) else { throw ValidationError("--consent: yes or no") }
        try NumericOption.check(uploadTimeout, "--upload-timeout", 1...3_600)
    }

    func run() async throws {
        guard consent == "yes" else { print("0 keys uploaded (no consent)"); return }
        let password: String
        do { password = try HTTPCredentials.readPassword(passwordFile) } catch {
            printError("gaenctl app submit: --password-file \(error)")
            throw ExitCode(1)
        }
        let http = try AppCommand.session(caFile: cacert)
        let trialClock: TrialClock?
        do { trialClock = try clock.load() } catch {
            printError("gaenctl app submit: \(error)")
            throw ExitCode(1)
        }
        try await withDaemon("app submit", bus) { client in
            let submission = AppSubmission(server: server, user: user, password: password,
                                           stateDirectory: AppCommand.stateDirectory(stateDir, bus: bus), timeout: uploadTimeout, http: http)
            let outcome = try await submission.run(client: client, today: UTCDay(unixSeconds: trialClock.now))
            if let url = outcome.url { print("\(outcome.keys) keys uploaded to \(url)") } else { print("0 keys uploaded (none new)") }
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
            let directory = stateDir ?? AppPaths.stateDirectory(nil, instance: name, environment: [:])
            guard let status = try AppStatus.read(directory: directory) else { throw CommandFailure("\(directory): no app status yet (no sync has run)") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                StandardStream.write(Array(try encoder.encode(status)), to: STDOUT_FILENO)
                print("")
            } else {
                for line in AppStatusText.lines(status) { print(line) }
            }
        }
    }
}
