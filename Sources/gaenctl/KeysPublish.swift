import ArgumentParser
import ENProtocol
import Foundation
import KeyDistribution

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
            A file first seen after an earlier run counts as submitted no earlier than that run \
            (OUT.ledger.json), so a published package never changes. \
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
    @Option(help: "Google layout: keys per file before a batch is split.")
    var maxKeysPerFile: Int = 30_000
    @Option(help: ArgumentHelp("App configuration JSON to publish signed (docs/key-server.md).", valueName: "FILE"))
    var appConfig: String?

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
        guard maxKeysPerFile >= 1 else { throw ValidationError("--max-keys-per-file must be at least 1") }
    }

    static func parseTime(_ text: String) throws -> Int64 {
        if let n = Int64(text) { return n }
        if let d = try? Date(text, strategy: .iso8601) { return Int64(d.timeIntervalSince1970.rounded(.down)) }
        throw ValidationError("--now '\(text)': expected ISO 8601 such as 2026-11-26T10:00:00Z, or Unix seconds")
    }

    func run() throws {
        try runReportingFailures("keys publish") {
            let moment = try now.map(Self.parseTime) ?? Int64(Date().timeIntervalSince1970)
            var signers: [KeyExportSigner] = []
            for (i, path) in signingKey.enumerated() {
                let pem = try KeyFileLoader.readBounded(path, limit: 64 << 10)
                let key: P256PrivateKey
                do { key = try P256PrivateKey(pem: String(decoding: pem, as: UTF8.self)) } catch { throw CommandFailure("--signing-key \(path): \(error)") }
                let id = keyId.count == 1 ? keyId[0] : keyId[i]
                let version = keyVersion.isEmpty ? "1" : keyVersion.count == 1 ? keyVersion[0] : keyVersion[i]
                signers.append(KeyExportSigner(key: key, info: KeyExportSignatureInfo(keyId: id, keyVersion: version)))
            }
            var config: Data? = nil
            if let appConfig {
                let data = try KeyFileLoader.readBounded(appConfig, limit: AppConfiguration.maxSize)
                do { _ = try AppConfiguration(json: data) } catch { throw CommandFailure("--app-config \(appConfig): \(error)") }
                config = data
            }
            var options = PublishOptions(country: country, region: region ?? country)
            options.embargo = Int64(embargoHours * 3600)
            options.minimumKeysPerPackage = minKeys
            options.hourPackageDays = hourDays
            options.retentionDays = retentionDays
            options.maximumKeysPerFile = maxKeysPerFile

            let ledgerPath = SubmissionLedger.path(for: URL(fileURLWithPath: output).standardizedFileURL.path)
            var ledger = try SubmissionLedger.load(ledgerPath)
            let (keys, files, skipped) = try Inbox.read(inbox, ledger: &ledger)
            for s in skipped { printError("gaenctl keys publish: skipped \(s.file): \(s.reason)") }
            let plan = PublicationPlan.plan(keys, now: moment, options: options)
            let summary = try TreeWriter(options: options, signers: signers, appConfiguration: config).publish(plan, to: output)
            ledger.published(at: moment)
            do { try ledger.save(ledgerPath) } catch { printError("gaenctl keys publish: warning: \(error)") }
            print("\(plan.keysPublished) keys published from \(files) files (\(skipped.count) skipped, \(plan.keysWaiting) waiting, "
                  + "\(plan.keysExpired) past retention): \(plan.days.count) days, "
                  + "\(plan.cwaPackages.count) CWA packages, \(plan.googlePackages.count) Google files, "
                  + "\(summary.files) files, \(summary.bytes) bytes, \(summary.reused) unchanged")
        }
    }
}
