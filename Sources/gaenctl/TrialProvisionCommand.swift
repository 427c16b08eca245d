import ArgumentParser
import Foundation
import TrialProvision

/// `gaenctl trial provision`: argument parsing only; the work is TrialProvision's.
struct TrialProvisionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provision",
        abstract: "Write every board's and the trial server's configuration from the trial's inventory (docs/provision.md).",
        discussion: """
            Reads the inventory (YAML: boards with names, sites, positions and consent; the server; \
            the time zone; the CA; the alerts' webhook) and writes under --out: boards/NAME/ \
            (gaend.conf, app.env, app-password 0600, the CA and trust key, a README.md naming the units \
            of its controller), server/ (the nginx site with the boards' htpasswd, publish.env, \
            Prometheus' config with the boards as file_sd targets and the alert rules, Alertmanager's \
            config), placement.csv and README.md. \
            Passwords are generated once and kept; a file is rewritten only when its content \
            changes, so running it again on the same inventory changes nothing.
            """)

    @Argument(help: ArgumentHelp("The trial's inventory (YAML).", valueName: "INVENTORY"))
    var inventory: String

    @Option(help: ArgumentHelp("Output directory (created 0700: it holds the passwords).", valueName: "DIR"))
    var out: String

    @Option(help: ArgumentHelp("The shipped deploy/ directory (default: share/gaend/deploy beside the installed gaenctl, else ./deploy).", valueName: "DIR"))
    var deploy: String?

    func run() throws {
        try TrialCommandSupport.run("trial provision") {
            let inv = try Inventory.read(path: inventory)
            let templates = try DeployTemplates.load(deployDirectory: deploy ?? Self.defaultDeployDirectory())
            let attachments = try Provisioner.Attachments.read(inv, inventoryPath: inventory)
            let existing = ExistingSecrets.read(outputDirectory: out, boards: inv.boards.map(\.name))
            var secrets = RandomSecrets()
            let files = try Provisioner.plan(inv, inventoryName: URL(fileURLWithPath: inventory).lastPathComponent, templates: templates,
                                             attachments: attachments, existing: existing, secrets: &secrets, hasher: OpenSSLPasswordHasher())
            let outcome = try OutputTree.write(files, to: out)
            for path in outcome.written { print("wrote \(path)") }
            print("\(inv.boards.count) boards: \(outcome.written.count) files written, \(outcome.unchanged) unchanged")
        }
    }

    /// The installed copy (PREFIX/share/gaend/deploy beside PREFIX/bin/gaenctl), else a clone's.
    static func defaultDeployDirectory() -> String {
        // The running binary itself (argv[0] may be a bare name found on PATH).
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let exe = URL(fileURLWithPath: path)
        let installed = exe.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("share/gaend/deploy").path
        return FileManager.default.fileExists(atPath: installed) ? installed : "deploy"
    }
}
