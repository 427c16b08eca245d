import ArgumentParser
import BoardNames
import CLISupport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaenApp
import GaenCollect
import GaendClient
import HTTPClient
import PlatformSupport
import TrialTime
import TrialFormats

/// `gaenctl collect`: ships the node's closed days to the trial server in the daily layout,
/// over HTTP PUT (nginx WebDAV, per-board basic authentication). Idempotent and resumable: each
/// closed day is prepared once into the spool directory (sightings, markers, calibration and
/// status at preparation, and a SHA-256 manifest), uploaded file by file with the manifest last,
/// checked back, and only then removed from the spool; a run cut anywhere leaves the day there
/// for the next run. A day sent again replaces its files on the server (no duplicate rows).
package struct CollectCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "collect",
        abstract: "Ship the node's closed days to the trial server (daily layout over HTTP PUT).",
        discussion: """
            Closed days are the UTC days before today. Each is prepared once into \
            SPOOL/pending/board=<node>/day=<YYYY-MM-DD>/: sightings.csv (as `sightings export \
            --split daily`), markers.csv (as `markers export`), calibration.json, status.json (the \
            node's calibration and status when the day was prepared) and MANIFEST.sha256 \
            (sha256sum's format). Each file is PUT to SERVER/board=<node>/day=<day>/<file>, the \
            manifest last; the day counts as shipped once the server returns the same manifest and \
            every file's SHA-256 read back, and only then is its spool copy removed (the node's store keeps its \
            retention). A run that fails or is cut leaves the day pending: the next run sends what \
            is missing. --resend DAY prepares and sends a shipped day again; the server's files are \
            replaced, so no row is duplicated. The password is read from --password-file (a systemd \
            credential in systemd/gaend-collect@.service), never from the command line. Prints one \
            line per day shipped; exits 1 if a day could not be shipped. Server side: docs/fleet.md; \
            `gaenctl trial verify DIR` checks the collected tree against the manifests. \
            At the end of a trial, --outcomes --consent yes also ships the board's own keys \
            (gaend's key history, which only group gaend-keys may read: run it as the app's user) \
            and its app's outcomes (risk history, packages provided, gaend's exposure windows; \
            --app-state) to SERVER/board=<node>/outcomes/ (keys.json, app.json, windows.json, \
            MANIFEST.sha256), checked back as a day is; with --consent no nothing of them is \
            read or sent.
            """
    )

    package init() {}

    @OptionGroup var bus: BusOptions

    @Option(help: ArgumentHelp("The collection URL, e.g. https://trial.example/collect/ (http or https).", valueName: "URL"))
    var server: String

    @Option(help: ArgumentHelp("Basic-authentication user (default: the board name, research.node).", valueName: "NAME"))
    var user: String?

    @Option(help: ArgumentHelp("File holding the basic-authentication password (one line).", valueName: "FILE"))
    var passwordFile: String

    @Option(help: ArgumentHelp("Spool directory: days prepared and not yet shipped, and what was shipped.", valueName: "DIR"))
    var spool: String

    @Option(parsing: .unconditional, help: "Closed days looked at, counting back from yesterday (the store's retention bounds what exists).")
    var days: Int = 14

    @Option(parsing: .unconditional, help: ArgumentHelp("Upload at most this many bytes per second (a metered link).", valueName: "BYTES"))
    var limitRate: Int?

    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's (a trial's private CA).", valueName: "FILE"))
    var cacert: String?

    @Option(help: ArgumentHelp("Send this closed day again (YYYY-MM-DD), even if it was shipped. Repeatable.", valueName: "DAY"))
    var resend: [String] = []

    @Flag(help: "Also ship the board's keys and app outcomes (the end of a trial; needs --consent).")
    var outcomes = false

    @Option(help: ArgumentHelp("The participant's consent to collect the keys and app outcomes: yes or no (OUTCOMES_CONSENT of app.env).", valueName: "yes|no"))
    var consent: String?

    @Option(help: ArgumentHelp("The app's state directory, for --outcomes (default: $STATE_DIRECTORY, else /var/lib/gaend-app/NAME).", valueName: "DIR"))
    var appState: String?

    @OptionGroup var clock: TrialClockOption

    package func validate() throws {
        if let consent, !["yes", "no"].contains(consent) { throw ValidationError("--consent: yes or no, got \(TextSafety.quoted(consent))") }
        if outcomes && consent == nil { throw ValidationError("--outcomes needs --consent yes|no (the participant's consent; no sends nothing)") }
        if !outcomes && (consent != nil || appState != nil) { throw ValidationError("--consent and --app-state go with --outcomes") }
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server: expected an http:// or https:// URL, got \(TextSafety.quoted(server))")
        }
        guard !server.contains("@") else { throw ValidationError("--server: put no user or password in the URL; use --user and --password-file") }
        try NumericOption.check(days, "--days", 1...366, unit: "days")
        if let limitRate { try NumericOption.check(limitRate, "--limit-rate", 1...(1 << 40), unit: "bytes per second") }
        for day in resend { guard CollectSpool.isDay(day) else { throw ValidationError("--resend: expected YYYY-MM-DD, got \(TextSafety.quoted(day))") } }
        if let user, let problem = BoardName.problem(user) { throw ValidationError("--user: \(problem)") }
    }

    package func run() async throws {
        let password: String
        do { password = try HTTPCredentials.readPassword(passwordFile) } catch {
            printError("gaenctl collect: --password-file \(error)")
            throw ExitCode(1)
        }
        let spool: CollectSpool
        let http: HTTPSession
        do {
            spool = try CollectSpool(path: self.spool)
            http = try HTTPSession(userAgent: "gaenctl-collect", connectTimeout: 20, caFile: cacert)
        } catch {
            printError("gaenctl collect: \(error)")
            throw ExitCode(1)
        }
        http.uploadRateLimit = limitRate
        let trialClock: TrialClock?
        do { trialClock = try clock.load() } catch {
            printError("gaenctl collect: \(error)")
            throw ExitCode(1)
        }
        var failures = 0
        try await withDaemon("collect", bus) { client in
            let labels = try await client.labels()
            let board = try CollectRun.boardName(node: labels.node, hostName: ProcessInfo.processInfo.hostName)
            let today = DailyLayout.dayStart(trialClock.now)
            let todayName = DailyLayout.day(today)
            for day in resend where day >= todayName {
                throw CommandFailure("--resend \(day): the day is not closed yet (today is \(todayName) UTC)")
            }
            try await CollectRun.prepare(client, spool: spool, board: board, site: labels.site, today: today, days: days, resend: resend)
            if outcomes {
                if consent == "yes" {
                    try await CollectOutcomes.prepare(client, spool: spool, board: board,
                                                      appStateDirectory: AppPaths.stateDirectory(appState, instance: bus.name),
                                                      now: Int64(Date().timeIntervalSince1970))
                } else {
                    print("outcomes of \(board) not collected: no consent (nothing of them leaves the board)")
                }
            }
            http.credentials = HTTPCredentials(user: user ?? board, password: password)
            let base = server.hasSuffix("/") ? server : server + "/"
            for day in try spool.pendingDays() {
                do {
                    let files = try spool.ship(day, base: base, http: http)
                    print("shipped \(day.relativePath) (\(files) files)")
                } catch {
                    failures += 1
                    printError("gaenctl collect: \(day.relativePath) not shipped (kept for the next run): \(error)")
                }
            }
        }
        if failures > 0 { throw ExitCode(1) }
    }
}
