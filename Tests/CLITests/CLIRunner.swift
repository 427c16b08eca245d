import Foundation

/// Runs the built command-line programs as a user would, capturing output and exit status.
/// `swift build --build-tests` builds the executables next to the test bundle.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    static var productsDirectory: URL {
        // The test bundle lives in the products directory (…/debug/gaendPackageTests.xctest).
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL
    }

    /// Output goes to temporary files rather than pipes so a chatty child can never block on a
    /// full pipe while we wait for it.
    static func run(_ program: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:]) throws -> CLIResult {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let paths = ["in", "out", "err"].map { tmp.appendingPathComponent($0) }
        try stdin.write(to: paths[0])
        for p in paths.dropFirst() { _ = FileManager.default.createFile(atPath: p.path, contents: nil) }
        let process = Process()
        // A path runs as it is (the board's gaenctl: a link named gaenctl to gaend), a name from the products.
        process.executableURL = program.hasPrefix("/") ? URL(fileURLWithPath: program) : productsDirectory.appendingPathComponent(program)
        process.arguments = arguments
        // The app half's default state root moved into this run's folder (absent there): a
        // `gaenctl status` must not read what a real board's app left in /var/lib/gaend-app.
        let isolated = ["GAEND_APP_STATE_ROOT": tmp.appendingPathComponent("no-app-state").path]
        process.environment = ProcessInfo.processInfo.environment.merging(isolated) { $1 }.merging(environment) { $1 }
        process.standardInput = try FileHandle(forReadingFrom: paths[0])
        process.standardOutput = try FileHandle(forWritingTo: paths[1])
        process.standardError = try FileHandle(forWritingTo: paths[2])
        try process.run()
        process.waitUntilExit()
        return CLIResult(status: process.terminationStatus,
                         stdout: try String(contentsOf: paths[1], encoding: .utf8),
                         stderr: try String(contentsOf: paths[2], encoding: .utf8))
    }

    /// The board's gaenctl as the board package installs it: a link named `gaenctl` to the
    /// built gaend (which runs the board's commands when called by that name).
    static let boardGaenctl: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("board-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let link = dir.appendingPathComponent("gaenctl").path
        try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: productsDirectory.appendingPathComponent("gaend").path)
        return link
    }()

    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }
}
