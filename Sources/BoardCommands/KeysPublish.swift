import ArgumentParser
import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import KeyDistribution
import PlatformSupport
import TrialTime

/// `gaenctl keys publish`: the trial server's publisher (run from a timer): the inbox of
/// the boards' uploads -> a static tree in the CWA and the Google layouts (docs/key-server.md).
struct KeysPublish: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish the inbox's keys as signed packages in the CWA and Google key server layouts.",
        discussion: """
            Reads every key file under --inbox (export ZIPs, bare export.bin or JSON key lists, \
            signed or not; a file's modification time is its submission time) and writes a static \
            tree to -o: the CWA distribution layout under version/v1/ (each endpoint stored as \
            ENDPOINT/index) and the Google layout under REGION/ (index.txt and START-END-BATCH.zip). \
            A file is known by its content (SHA-256); one first seen after an earlier run counts as \
            submitted no earlier than that run (OUT.ledger.json), so a published package never \
            changes. A ledger whose last run is after --now (a wrong --now, a clock that was ahead) \
            is brought back to now, said on stderr, and the run exits 1. \
            Each key must pass the rules gaend and the apps apply (rolling period 1...144, days \
            since onset -14...14, transmission risk 0...8, start not after the day after its \
            submission, nor older than --retention-days before it); a board (a folder of the \
            inbox) may submit --max-keys-per-board-day keys and --max-bytes-per-board-day bytes a \
            UTC day, spent in the order its files were first seen. Refused keys are counted per \
            board on stderr. A day's packages hold at most --max-keys-per-day keys (so every \
            package stays within the app's 16 MiB and gaend's 4 MiB of export.bin a file in a full \
            call); more wait for the next day. \
            A key is published in the hour it became available: after its submission and once it \
            has expired plus --embargo-hours; an hour with fewer than --min-keys keys is shifted \
            into the next; the current hour and day are never published; day packages for \
            complete days, hour packages for the last --hour-days days; --retention-days kept. \
            Each package carries one signature per --signing-key, in the order given (newest \
            first when rotating keys); --key-id and --key-version pair with them by position. \
            The tree is built beside -o and swapped in whole (readers never see half of it); a \
            run over an unchanged inbox keeps every file's bytes. Prints one summary line.
            """)

    @Option(help: ArgumentHelp("Directory of submitted key files (read recursively, 3 levels).", valueName: "DIR"))
    var inbox: String
    @Option(name: .short, help: ArgumentHelp("The published tree (a directory, replaced whole).", valueName: "OUT"))
    var output: String
    @Option(help: ArgumentHelp("P-256 private key (PEM) signing the packages. Repeatable, newest first.", valueName: "PEM"))
    var signingKey: [String] = []
    @Option(help: ArgumentHelp("verification_key_id of each --signing-key (one, or one per key).", valueName: "ID"))
    var keyId: [String] = []
    @Option(help: ArgumentHelp("verification_key_version of each --signing-key (default 1).", valueName: "V"))
    var keyVersion: [String] = []
    @Option(help: "Country code of the CWA layout.")
    var country: String = "DE"
    @Option(help: "Root folder of the Google layout and the export's region (default: the country).")
    var region: String?
    @Option(help: ArgumentHelp("Publish as of this moment: ISO 8601 (2026-11-26T10:00:00Z) or Unix seconds (default: now).", valueName: "TIME"))
    var now: String?
    @Option(help: "Hours after a key's expiry before it may be published.")
    var embargoHours: Double = 2
    @Option(help: "An hour with fewer keys is shifted into the next hour's package.")
    var minKeys: Int = 140
    @Option(help: "Days (the current one included) with hour packages.")
    var hourDays: Int = 2
    @Option(help: "Days of packages kept.")
    var retentionDays: Int = 14
    @Option(help: ArgumentHelp("Google layout: keys per file before a batch is split (at most --max-keys-per-day).", valueName: "N"))
    var maxKeysPerFile: Int = 30_000
    @Option(help: ArgumentHelp("Keys of one day in all packages, at most \(PackageLimits.maxKeysPerPackage) (a package then stays within what the app and gaend accept); more wait for the next day.", valueName: "N"))
    var maxKeysPerDay: Int = PackageLimits.maxKeysPerPackage
    @Option(help: ArgumentHelp("Keys a board (a folder of the inbox) may submit in a UTC day; more are refused (15: a phone's upload of 14 days and today).", valueName: "N"))
    var maxKeysPerBoardDay: Int = Inbox.Budget().keysPerBoardDay
    @Option(help: ArgumentHelp("Bytes of files a board may submit in a UTC day; later files are not read.", valueName: "BYTES"))
    var maxBytesPerBoardDay: Int = Inbox.Budget().bytesPerBoardDay
    @Option(help: ArgumentHelp("App configuration JSON to publish signed (docs/key-server.md).", valueName: "FILE"))
    var appConfig: String?
    @OptionGroup var clock: TrialClockOption

    static let codeCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    func validate() throws {
        guard !signingKey.isEmpty else { throw ValidationError("give at least one --signing-key PEM") }
        guard keyId.count == 1 || keyId.count == signingKey.count else {
            throw ValidationError("give one --key-id, or one per --signing-key (\(signingKey.count))")
        }
        guard keyVersion.count <= 1 || keyVersion.count == signingKey.count else {
            throw ValidationError("give no --key-version, one, or one per --signing-key (\(signingKey.count))")
        }
        for (what, code) in [("--country", country), ("--region", region ?? country)] {
            guard !code.isEmpty, code.count <= 32, code.allSatisfy(Self.codeCharacters.contains) else {
                throw ValidationError("\(what) '\(code)': letters, digits, - and _ only (a path segment)")
            }
        }
        guard embargoHours >= 0, embargoHours <= 48 else { throw ValidationError("--embargo-hours must be 0...48") }
        guard minKeys >= 1 else { throw ValidationError("--min-keys must be at least 1") }
        guard (1...14).contains(hourDays) else { throw ValidationError("--hour-days must be 1...14") }
        guard (1...30).contains(retentionDays) else { throw ValidationError("--retention-days must be 1...30") }
        guard (1...PackageLimits.maxKeysPerPackage).contains(maxKeysPerDay) else {
            throw ValidationError("--max-keys-per-day must be 1...\(PackageLimits.maxKeysPerPackage) (a larger day package is refused by apps or gaend), got \(maxKeysPerDay)")
        }
        guard (1...maxKeysPerDay).contains(maxKeysPerFile) else {
            throw ValidationError("--max-keys-per-file must be 1...\(maxKeysPerDay) (--max-keys-per-day), got \(maxKeysPerFile)")
        }
        guard (1...1_000_000).contains(maxKeysPerBoardDay) else { throw ValidationError("--max-keys-per-board-day must be 1...1000000, got \(maxKeysPerBoardDay)") }
        guard (1...(1 << 30)).contains(maxBytesPerBoardDay) else { throw ValidationError("--max-bytes-per-board-day must be 1...\(1 << 30), got \(maxBytesPerBoardDay)") }
        if let now { _ = try Self.parseTime(now) }
        if now != nil, clock.trialClock != nil { throw ValidationError("give --now or --trial-clock, not both") }
    }

    /// `--now`: Unix seconds or ISO 8601, within `SubmissionLedger.plausibleTimes` (a value in
    /// milliseconds, or one that would overflow the day and hour numbers, is a usage error).
    static func parseTime(_ text: String) throws -> Int64 {
        let range = SubmissionLedger.plausibleTimes
        let shown = TextSafety.escaped(String(text.prefix(64)))
        var seconds: Int64?
        if let n = Int64(text) { seconds = n } else if let d = try? Date(text, strategy: .iso8601), d.timeIntervalSince1970.isFinite {
            seconds = Int64(exactly: d.timeIntervalSince1970.rounded(.down))
        } else if text.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "+" }), !text.isEmpty {
            seconds = nil // digits beyond Int64: out of range below
        } else {
            throw ValidationError("--now '\(shown)': expected ISO 8601 such as 2026-11-26T10:00:00Z, or Unix seconds")
        }
        guard let seconds, range.contains(seconds) else {
            throw ValidationError("--now '\(shown)' is outside \(range.lowerBound)...\(range.upperBound) (2020-01-01...2100-01-01 in Unix seconds; milliseconds are not seconds)")
        }
        return seconds
    }

    /// A small input file (a PEM, the app configuration): a FIFO or a device is refused at
    /// once rather than waited on or read without end.
    static func readSmall(_ option: String, _ path: String, limit: Int) throws -> Data {
        do { return Data(try SmallFile.read(path, limit: limit)) } catch {
            throw CommandFailure("\(option) \(TextSafety.escaped(path)) \(error)")
        }
    }

    func run() throws {
        try runReportingFailures("keys publish") {
            // With a trial clock, the moment and the files' times (their modification times, real)
            // are the trial's.
            let trialClock = try clock.load()
            let moment = try now.map(Self.parseTime) ?? Int64(trialClock.now.rounded(.down))
            var signers: [KeyExportSigner] = []
            for (i, path) in signingKey.enumerated() {
                let pem = try Self.readSmall("--signing-key", path, limit: 64 << 10)
                let key: P256PrivateKey
                do { key = try P256PrivateKey(pem: String(decoding: pem, as: UTF8.self)) } catch { throw CommandFailure("--signing-key \(path): \(error)") }
                let id = keyId.count == 1 ? keyId[0] : keyId[i]
                let version = keyVersion.isEmpty ? "1" : keyVersion.count == 1 ? keyVersion[0] : keyVersion[i]
                signers.append(KeyExportSigner(key: key, info: KeyExportSignatureInfo(keyId: id, keyVersion: version)))
            }
            var config: Data? = nil
            if let appConfig {
                let data = try Self.readSmall("--app-config", appConfig, limit: AppConfiguration.maxSize)
                do { _ = try AppConfiguration(json: data) } catch { throw CommandFailure("--app-config \(appConfig): \(error)") }
                config = data
            }
            var options = PublishOptions(country: country, region: region ?? country)
            options.embargo = Int64(embargoHours * 3600)
            options.minimumKeysPerPackage = minKeys
            options.hourPackageDays = hourDays
            options.retentionDays = retentionDays
            options.maximumKeysPerFile = maxKeysPerFile
            options.maximumKeysPerDay = maxKeysPerDay
            var budget = Inbox.Budget()
            budget.keysPerBoardDay = maxKeysPerBoardDay
            budget.bytesPerBoardDay = maxBytesPerBoardDay

            let ledgerPath = SubmissionLedger.path(for: URL(fileURLWithPath: output).standardizedFileURL.path)
            var ledger = try SubmissionLedger.load(ledgerPath)
            // A ledger from a run whose clock was ahead would make every new upload wait for
            // that moment: brought back to now, and said (stderr, summary, exit status 1).
            let repair = ledger.recover(now: moment)
            if let repair {
                printError("gaenctl keys publish: the ledger's last publication, \(repair.lastPublishedAt), is after now (\(moment)) or not a plausible time: "
                           + "an earlier run had a wrong --now or a clock that was ahead. Brought back to now (\(repair.submissionsRedated) submissions redated); "
                           + "packages published for hours after now are withdrawn.")
            }
            let read = try Inbox.read(inbox, ledger: &ledger, now: moment, budget: budget, retentionDays: retentionDays,
                                     fileTime: { mtime in trialClock.map { Int64($0.trialTime(real: Double(mtime)).rounded(.down)) } ?? mtime })
            for s in read.skipped { printError("gaenctl keys publish: skipped \(TextSafety.escaped(s.file)): \(TextSafety.escaped(s.reason))") }
            for (board, report) in read.boards.sorted(by: { $0.key < $1.key }) where report.keysRefused > 0 || report.filesOverBudget > 0 {
                let reasons = report.refused.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                let name = board.isEmpty ? "(files directly in the inbox)" : "'\(TextSafety.escaped(board))'"
                printError("gaenctl keys publish: board \(name): \(report.keysAccepted) keys accepted, \(report.keysRefused) refused"
                           + (reasons.isEmpty ? "" : " (\(reasons))")
                           + (report.filesOverBudget > 0 ? ", \(report.filesOverBudget) files over its bytes a day not read" : ""))
                for (_, example) in report.examples.sorted(by: { $0.key < $1.key }) {
                    printError("gaenctl keys publish:   e.g. \(TextSafety.escaped(example))")
                }
            }
            // The hours earlier runs published are sealed: read back from the tree, published
            // again as they were, whatever the inbox holds now.
            let sealedBefore = ledger.lastPublishedAt.map { PublicationPlan.floorDiv($0, 3600) } ?? .min
            let sealed = PublishedTree.sealedHours(output: output, region: options.region, before: sealedBefore)
            for p in sealed.problems { printError("gaenctl keys publish: warning: cannot read back the published \(TextSafety.escaped(p)); its hour is planned again") }
            let plan = PublicationPlan.plan(read.keys, now: moment, options: options, sealed: sealed.hours, sealedBefore: sealedBefore)
            let summary = try TreeWriter(options: options, signers: signers, appConfiguration: config).publish(plan, to: output)
            if summary.staleRemoved > 0 { printError("gaenctl keys publish: removed \(summary.staleRemoved) half-built trees of runs that were killed") }
            ledger.published(at: moment)
            do { try ledger.save(ledgerPath) } catch { printError("gaenctl keys publish: warning: \(error)") }
            print("\(plan.keysPublished) keys published from \(read.files) files (\(read.skipped.count) skipped, \(read.keysRefused) keys refused, "
                  + "\(plan.keysWaiting) waiting, \(plan.keysDeferred) deferred to a later day, "
                  + "\(plan.keysExpired) past retention): \(plan.days.count) days, "
                  + "\(plan.cwaPackages.count) CWA packages, \(plan.googlePackages.count) Google files, "
                  + "\(summary.files) files, \(summary.bytes) bytes, \(summary.reused) unchanged"
                  + (repair != nil ? "; the ledger's clock was repaired" : ""))
            if repair != nil { throw ExitCode(1) }
        }
    }
}
