import ArgumentParser
import DBusCore
import Foundation
import GaendClient
import ENProtocol
import GaendAPI
import TrialKit

/// `gaenctl collect`: ships the node's closed days to the trial server in the daily layout,
/// over HTTP PUT (nginx WebDAV, per-board basic authentication). Idempotent and resumable: each
/// closed day is prepared once into the spool directory (sightings, markers, calibration and
/// status at preparation, and a SHA-256 manifest), uploaded file by file with the manifest last,
/// checked back, and only then removed from the spool; a run cut anywhere leaves the day there
/// for the next run. A day sent again replaces its files on the server (no duplicate rows).
struct CollectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collect",
        abstract: "Ship the node's closed days to the trial server (daily layout over HTTP PUT).",
        discussion: """
            Closed days are the UTC days before today. Each is prepared once into \
            SPOOL/pending/board=<node>/day=<YYYY-MM-DD>/: sightings.csv (as `sightings export \
            --split daily`), markers.csv (as `markers export`), calibration.json, status.json (the \
            node's calibration and status when the day was prepared) and MANIFEST.sha256 \
            (sha256sum's format). Each file is PUT to SERVER/board=<node>/day=<day>/<file>, the \
            manifest last; the day counts as shipped once the server returns the same manifest and \
            every file's size, and only then is its spool copy removed (the node's store keeps its \
            retention). A run that fails or is cut leaves the day pending: the next run sends what \
            is missing. --resend DAY prepares and sends a shipped day again; the server's files are \
            replaced, so no row is duplicated. The password is read from --password-file (a systemd \
            credential in systemd/gaend-collect@.service), never from the command line. Prints one \
            line per day shipped; exits 1 if a day could not be shipped. Server side: docs/fleet.md; \
            `gaenctl trial verify DIR` checks the collected tree against the manifests.
            """
    )

    @OptionGroup var bus: BusOptions

    @Option(help: ArgumentHelp("The collection URL, e.g. https://trial.example/collect/ (http or https).", valueName: "URL"))
    var server: String

    @Option(help: ArgumentHelp("Basic-authentication user (default: the board name, research.node).", valueName: "NAME"))
    var user: String?

    @Option(help: ArgumentHelp("File holding the basic-authentication password (one line).", valueName: "FILE"))
    var passwordFile: String

    @Option(help: ArgumentHelp("Spool directory: days prepared and not yet shipped, and what was shipped.", valueName: "DIR"))
    var spool: String

    @Option(help: "Closed days looked at, counting back from yesterday (the store's retention bounds what exists).")
    var days: Int = 14

    @Option(help: ArgumentHelp("Upload at most this many bytes per second (a metered link).", valueName: "BYTES"))
    var limitRate: Int?

    @Option(help: ArgumentHelp("Send this closed day again (YYYY-MM-DD), even if it was shipped. Repeatable.", valueName: "DAY"))
    var resend: [String] = []

    func validate() throws {
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server: expected an http:// or https:// URL, got '\(server)'")
        }
        guard !server.contains("@") else { throw ValidationError("--server: put no user or password in the URL; use --user and --password-file") }
        guard (1...366).contains(days) else { throw ValidationError("--days must be within 1...366") }
        if let limitRate { guard limitRate > 0 else { throw ValidationError("--limit-rate must be positive") } }
        for day in resend { guard CollectSpool.isDay(day) else { throw ValidationError("--resend: expected YYYY-MM-DD, got '\(day)'") } }
    }

    func run() async throws {
        let password: String
        do { password = try CollectSpool.readSecret(passwordFile) } catch {
            printError("gaenctl collect: \(error)")
            throw ExitCode(1)
        }
        let spool: CollectSpool
        do { spool = try CollectSpool(path: self.spool) } catch {
            printError("gaenctl collect: \(error)")
            throw ExitCode(1)
        }
        var failures = 0
        try await withDaemon("collect", bus) { client in
            let labels = try await client.labels()
            let board = labels.node.isEmpty ? ProcessInfo.processInfo.hostName : labels.node
            // The name is the URL's path segment and the server's user: no escaping anywhere.
            guard DailyLayout.escape(board) == board else {
                throw CommandFailure("the board name '\(board)' (research.node, else the host name) must be letters, digits, '.', '_' and '-' to be collected")
            }
            let today = DailyLayout.dayStart(Date().timeIntervalSince1970)
            let todayName = DailyLayout.day(today)
            for day in resend where day >= todayName {
                throw CommandFailure("--resend \(day): the day is not closed yet (today is \(todayName) UTC)")
            }
            try await prepare(client, spool: spool, board: board, site: labels.site, today: today)
            let http = HTTPTransfer(user: user ?? board, password: password, limitRate: limitRate)
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

    /// Exports every closed day not prepared yet (and those to resend) into the spool.
    func prepare(_ client: GaendClient, spool: CollectSpool, board: String, site: String, today: Double) async throws {
        var state = try spool.loadState()
        let earliest = today - Double(days) * 86_400
        var ranges: [(from: Double, to: Double)] = []
        let from = max(earliest, state.preparedThrough.flatMap(CollectSpool.dayStart).map { $0 + 86_400 } ?? earliest)
        if from < today { ranges.append((from, today)) }
        for day in resend {
            guard let start = CollectSpool.dayStart(day) else { continue }
            state.shipped.removeValue(forKey: CollectSpool.Day(board: board, day: day).relativePath)
            ranges.append((start, start + 86_400))
        }
        guard !ranges.isEmpty else { return }
        let status = try await client.status()
        let research = try await client.researchProperties()
        for range in ranges {
            let scratch = try spool.freshScratch()
            let export = try AtomicOutputFile(path: scratch.appendingPathComponent(".export").path, mode: 0o600, durable: false)
            defer { export.discard() }
            let fd = dup(export.descriptor)
            guard fd >= 0 else { throw CommandFailure("cannot write in \(scratch.path): \(String(cString: strerror(errno)))") }
            _ = try await client.exportSightings(to: DBusUnixFD(owning: fd), from: Int64(range.from * 1000), to: Int64(range.to * 1000), format: "csv")
            let written = try SightingsDailySplit.split(descriptor: export.descriptor, jsonLines: false, board: board, into: scratch, mode: 0o600)
            for w in written {
                // The split names its files relative to the directory it wrote into.
                let file = w.path.hasPrefix("/") ? URL(fileURLWithPath: w.path) : scratch.appendingPathComponent(w.path)
                let dayDir = file.deletingLastPathComponent()
                let dayName = String(dayDir.lastPathComponent.dropFirst("day=".count))
                guard let start = CollectSpool.dayStart(dayName), start < today else { continue }
                let marks = try await client.markers(from: Int64(start * 1000), to: Int64((start + 86_400) * 1000)).map {
                    TrialKit.Marker(time: Double($0.time) / 1000, label: $0.label, distance: $0.distance < 0 ? nil : $0.distance, note: $0.note)
                }
                try Data(MarkersFile.csv(marks, node: board, site: site).text.utf8).write(to: dayDir.appendingPathComponent("markers.csv"))
                try CollectSpool.json(["txPower": .int(Int64(research.txPower)), "rssiCorrection": .int(Int64(research.rssiCorrection)),
                                       "calibrationConfidence": .int(Int64(research.calibrationConfidence)),
                                       "node": .string(research.node), "site": .string(research.site)])
                    .write(to: dayDir.appendingPathComponent("calibration.json"))
                try CollectSpool.statusJSON(status, busName: client.destination).write(to: dayDir.appendingPathComponent("status.json"))
                let names = ["sightings.csv", "markers.csv", "calibration.json", "status.json"]
                try Data(DayManifest.make(directory: dayDir.path, files: names).utf8)
                    .write(to: dayDir.appendingPathComponent(DayManifest.fileName))
                try spool.enqueue(dayDir, as: CollectSpool.Day(board: board, day: dayName))
            }
        }
        // Every closed day up to yesterday is prepared (days without any scan have nothing to send).
        state.preparedThrough = DailyLayout.day(today - 86_400)
        try spool.saveState(state)
        try? FileManager.default.removeItem(at: spool.scratch)
    }
}

/// The spool directory of `gaenctl collect`: `pending/board=B/day=D/` (prepared, not yet
/// shipped), `state.json` (the last day prepared, the days shipped with their manifest's
/// digest), a scratch directory, and a lock so that two runs never overlap.
final class CollectSpool {
    struct Day: Hashable, Comparable {
        var board: String
        var day: String
        var relativePath: String { "board=\(DailyLayout.escape(board))/day=\(day)" }
        static func < (a: Day, b: Day) -> Bool { (a.day, a.board) < (b.day, b.board) }
    }

    struct State: Codable {
        var preparedThrough: String?
        /// `board=B/day=D` → SHA-256 of the manifest the server holds.
        var shipped: [String: String] = [:]
    }

    let root: URL
    var pending: URL { root.appendingPathComponent("pending") }
    var scratch: URL { root.appendingPathComponent(".prepare") }
    private var stateFile: String { root.appendingPathComponent("state.json").path }
    private let lockFD: Int32

    init(path: String) throws {
        root = URL(fileURLWithPath: path)
        do { try FileManager.default.createDirectory(at: root.appendingPathComponent("pending"), withIntermediateDirectories: true) } catch {
            throw CommandFailure("cannot create the spool \(path): \(error.localizedDescription)")
        }
        lockFD = open(root.appendingPathComponent(".lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw CommandFailure("cannot open \(path)/.lock: \(String(cString: strerror(errno)))") }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            close(lockFD)
            throw CommandFailure("another gaenctl collect is using \(path)")
        }
    }

    deinit { close(lockFD) }

    static func isDay(_ s: String) -> Bool { dayStart(s) != nil }

    /// Unix seconds of a `YYYY-MM-DD` day's start, nil if it is not one.
    static func dayStart(_ s: String) -> Double? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              parts[0].count == 4, parts[1].count == 2, parts[2].count == 2, (1...12).contains(m), (1...31).contains(d) else { return nil }
        let start = Double(CivilDate(year: Int64(y), month: Int64(m), day: Int64(d)).daysSinceEpoch) * 86_400
        return DailyLayout.day(start) == s ? start : nil
    }

    /// A secret from a file: one line, at most 4 KiB, not empty.
    static func readSecret(_ path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CommandFailure("cannot read the password file \(path)") }
        defer { try? handle.close() }
        guard let data = try handle.read(upToCount: 4097), data.count <= 4096, var text = String(data: data, encoding: .utf8) else {
            throw CommandFailure("the password file \(path) is not a UTF-8 line of at most 4096 bytes")
        }
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty, !text.contains("\n") else { throw CommandFailure("the password file \(path) must hold one non-empty line") }
        return text
    }

    static func json(_ object: [String: JSONValue]) -> Data { Data((JSONValue.object(object).serialized() + "\n").utf8) }

    /// The node's status at preparation, as `gaenctl status --json` has it, without what was on
    /// air at that moment (the address and RPI belong to no day).
    static func statusJSON(_ s: GaendNodeStatus, busName: String) throws -> Data {
        var copy = s
        copy.advertisingAddress = nil
        copy.currentRPI = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var object = try JSONSerialization.jsonObject(with: encoder.encode(copy)) as? [String: Any] ?? [:]
        object["busName"] = busName
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) + Data("\n".utf8)
    }

    func loadState() throws -> State {
        guard let data = FileManager.default.contents(atPath: stateFile) else { return State() }
        do { return try JSONDecoder().decode(State.self, from: data) } catch {
            throw CommandFailure("\(stateFile) is not a collect state file: \(error)")
        }
    }

    func saveState(_ state: State) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicOutputFile.write(try encoder.encode(state), to: stateFile, mode: 0o600)
    }

    /// An empty scratch directory for one export.
    func freshScratch() throws -> URL {
        try? FileManager.default.removeItem(at: scratch)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        return scratch
    }

    /// Moves a prepared day into `pending/` (replacing an earlier preparation of it).
    func enqueue(_ dir: URL, as day: Day) throws {
        let target = pending.appendingPathComponent(day.relativePath)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: dir, to: target)
    }

    func pendingDays() throws -> [Day] {
        var days: [Day] = []
        let fm = FileManager.default
        for b in (try? fm.contentsOfDirectory(atPath: pending.path)) ?? [] where b.hasPrefix("board=") {
            for d in (try? fm.contentsOfDirectory(atPath: pending.appendingPathComponent(b).path)) ?? [] where d.hasPrefix("day=") {
                let board = String(b.dropFirst("board=".count)).removingPercentEncoding ?? String(b.dropFirst("board=".count))
                days.append(Day(board: board, day: String(d.dropFirst("day=".count))))
            }
        }
        return days.sorted()
    }

    /// Uploads one pending day: the files not yet acknowledged, then the manifest; checks the
    /// server's copy; records it as shipped and removes the spool copy. Returns the files sent.
    func ship(_ day: Day, base: String, http: HTTPTransfer) throws -> Int {
        let dir = pending.appendingPathComponent(day.relativePath)
        let manifestPath = dir.appendingPathComponent(DayManifest.fileName).path
        guard let manifest = FileManager.default.contents(atPath: manifestPath), let text = String(data: manifest, encoding: .utf8) else {
            throw CommandFailure("\(manifestPath) is missing")
        }
        let entries = try DayManifest.parse(text)
        // Files the server acknowledged in an earlier, interrupted run (name and digest).
        let ackPath = dir.appendingPathComponent(".acknowledged").path
        var acknowledged = Set((try? String(contentsOfFile: ackPath, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? [])
        let url = base + day.relativePath + "/"
        for e in entries where !acknowledged.contains("\(e.sha256)  \(e.name)") {
            let r = try http.put(url + e.name, file: dir.appendingPathComponent(e.name).path)
            guard (200...299).contains(r.status) else { throw CommandFailure("PUT \(e.name): HTTP \(r.status)") }
            acknowledged.insert("\(e.sha256)  \(e.name)")
            try AtomicOutputFile.write(Data((acknowledged.sorted().joined(separator: "\n") + "\n").utf8), to: ackPath, mode: 0o600, durable: false)
        }
        let r = try http.put(url + DayManifest.fileName, file: manifestPath)
        guard (200...299).contains(r.status) else { throw CommandFailure("PUT \(DayManifest.fileName): HTTP \(r.status)") }
        // The server's copy: the same manifest, and every file of its size.
        let back = try http.get(url + DayManifest.fileName, limit: DayManifest.maximumBytes)
        guard back.status == 200, back.body == manifest else {
            try? FileManager.default.removeItem(atPath: ackPath)
            throw CommandFailure("the server's \(DayManifest.fileName) differs from the one sent (HTTP \(back.status)); the day is sent again next run")
        }
        for e in entries {
            let size = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(e.name).path)[.size] as? Int64) ?? nil
            let h = try http.head(url + e.name)
            guard h.status == 200, let size, h.contentLength == size else {
                try? FileManager.default.removeItem(atPath: ackPath)
                throw CommandFailure("the server's \(e.name) is not the file sent (HTTP \(h.status), \(h.contentLength.map(String.init) ?? "no") bytes); the day is sent again next run")
            }
        }
        var state = try loadState()
        state.shipped[day.relativePath] = SHA256Hex.of(manifest)
        try saveState(state)
        try FileManager.default.removeItem(at: dir)
        return entries.count + 1
    }
}

/// SHA-256 of bytes in memory (a manifest), lower-case hex.
enum SHA256Hex {
    static func of(_ data: Data) -> String {
        ENProtocol.SHA256.hash(data).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
