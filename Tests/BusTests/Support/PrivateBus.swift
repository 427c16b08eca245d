import Foundation

/// The repository root (for dbus/ and docs/ files the tests check).
let repoRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A private dbus-daemon for one test, killed when the test ends (`stop()` or deinit).
final class PrivateBus: @unchecked Sendable {
    let address: String
    let directory: URL
    private let process: Process

    /// A session-like bus any uid may connect to, with no policy restrictions.
    static let openPolicy = """
          <policy context="default">
            <allow user="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        """

    /// A system-like bus: method calls denied unless a policy allows them (as on the system
    /// bus), then `extra` (e.g. an `<include>` of the repository's policy file).
    static func systemLikePolicy(extra: String) -> String {
        """
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
          </policy>
        \(extra)
        """
    }

    init(policy: String = PrivateBus.openPolicy) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Other uids (the policy tests run clients as nobody) must reach the socket.
        chmod(directory.path, 0o755)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory.path)/bus</listen>
              <auth>EXTERNAL</auth>
            \(policy)
            </busconfig>
            """
        let configURL = directory.appendingPathComponent("bus.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        p.arguments = ["--config-file=\(configURL.path)", "--print-address", "--nofork", "--nopidfile"]
        let out = Pipe()
        let err = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        p.standardOutput = out
        p.standardError = try FileHandle(forWritingTo: err)
        try p.run()
        process = p
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty {
                let stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
                throw TestFailure("dbus-daemon did not start: \(stderr)")
            }
            line += chunk
        }
        address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: the test runner's threads block signals and a spawned dbus-daemon may
            // inherit that mask, so SIGTERM could stay pending forever.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Whether an executable is installed (gdbus and busctl are optional on a test machine).
func haveTool(_ name: String) -> Bool {
    ["/usr/bin", "/bin", "/usr/sbin"].contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }
}

/// Runs a command (as `nobody` when asked, through setpriv), with stdin from `input`. Waits
/// through the termination handler, never blocking a thread of the concurrency pool (a blocked
/// pool would starve the service under test, which then could not reply).
func runTool(_ command: [String], asNobody: Bool = false, input: String? = nil) async throws -> ToolResult {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-tool-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let outURL = dir.appendingPathComponent("out"), errURL = dir.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let p = Process()
    var argv = command
    if asNobody {
        argv = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + argv
    }
    p.executableURL = URL(fileURLWithPath: argv[0].hasPrefix("/") ? argv[0] : "/usr/bin/env")
    p.arguments = argv[0].hasPrefix("/") ? Array(argv.dropFirst()) : argv
    // The app half's default state root moved into this call's folder (absent there): `gaenctl
    // status` and `metrics` must not read what a real board's app left in /var/lib/gaend-app.
    p.environment = ProcessInfo.processInfo.environment.merging(["GAEND_APP_STATE_ROOT": dir.appendingPathComponent("no-app-state").path]) { $1 }
    p.standardOutput = try FileHandle(forWritingTo: outURL)
    p.standardError = try FileHandle(forWritingTo: errURL)
    let stdin = Pipe()
    p.standardInput = stdin
    let status: Int32 = try await withCheckedThrowingContinuation { cont in
        p.terminationHandler = { cont.resume(returning: $0.terminationStatus) }
        do {
            try p.run()
        } catch {
            p.terminationHandler = nil
            cont.resume(throwing: error)
            return
        }
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
    }
    return ToolResult(status: status,
                      stdout: try String(contentsOf: outURL, encoding: .utf8),
                      stderr: try String(contentsOf: errURL, encoding: .utf8))
}
