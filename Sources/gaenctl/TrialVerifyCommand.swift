import ArgumentParser
import BoardCommands
import ENProtocol
import Foundation
import TrialKit
import TrialFormats

/// `gaenctl trial verify DIR`: the collection server's check of a collected tree
/// (`board=<node>/day=<day>/` directories uploaded by `gaenctl collect`): each day's files
/// against its MANIFEST.sha256.
struct TrialVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a collected tree's days against their SHA-256 manifests.",
        discussion: """
            For every DIR/board=<node>/day=<YYYY-MM-DD>/ and DIR/board=<node>/outcomes/ (keys and \
            app outcomes, collect --outcomes) prints one line: complete (the manifest \
            and every file it lists, with its digest), incomplete (no manifest yet: an upload \
            under way or cut; the board sends it again) or corrupt (a listed file missing or \
            different). With --json prints {"complete":[...],"incomplete":[...],"corrupt":{day: \
            [reasons]}} instead. Exits 1 if any day is corrupt, or incomplete with --strict; \
            analyse complete days only (docs/fleet.md).
            """
    )

    @Argument(help: ArgumentHelp("The collected tree (the server's collection directory).", valueName: "DIR"))
    var dir: String

    @Flag(help: "Exit 1 also when a day is incomplete.")
    var strict = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        try TrialCommandSupport.run("trial verify") {
            let fm = FileManager.default
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else { throw CommandFailure("\(dir) is not a directory") }
            var complete: [String] = [], incomplete: [String] = [], corrupt: [(String, [String])] = []
            for b in try fm.contentsOfDirectory(atPath: dir).sorted() where b.hasPrefix("board=") {
                let boardDir = dir + "/" + b
                // The days, then the keys and outcomes shipped once at the end (board=B/outcomes/),
                // which carry a manifest of the same form.
                let entries = ((try? fm.contentsOfDirectory(atPath: boardDir)) ?? []).sorted()
                for d in entries.filter({ $0.hasPrefix("day=") }) + entries.filter({ $0 == CollectedOutcomes.directoryName }) {
                    let day = "\(b)/\(d)"
                    switch DayManifest.check(directory: boardDir + "/" + d) {
                    case .complete: complete.append(day)
                    case .incomplete: incomplete.append(day)
                    case .corrupt(let reasons): corrupt.append((day, reasons))
                    }
                }
            }
            if json {
                print(JSONValue.object([
                    "complete": .array(complete.map { .string($0) }), "incomplete": .array(incomplete.map { .string($0) }),
                    "corrupt": .object(Dictionary(uniqueKeysWithValues: corrupt.map { ($0.0, JSONValue.array($0.1.map { .string($0) })) })),
                ]).serialized())
            } else {
                for d in complete { print("\(d): complete") }
                for d in incomplete { print("\(d): incomplete (no \(DayManifest.fileName) yet)") }
                for (d, reasons) in corrupt { print("\(d): corrupt: \(reasons.joined(separator: "; "))") }
            }
            if !corrupt.isEmpty || (strict && !incomplete.isEmpty) { throw ExitCode(1) }
        }
    }
}
