import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GaendAPI
import GaendClient
import HTTPClient
import PlatformSupport
import TrialFormats

/// Why collection stopped, in words for the operator.
public struct CollectError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The spool directory of `gaenctl collect`: `pending/board=B/day=D/` (prepared, not yet
/// shipped), `state.json` (the last day prepared, the days shipped with their manifest's
/// digest), a scratch directory, and a lock so that two runs never overlap.
public final class CollectSpool {
    public struct Day: Hashable, Comparable, Sendable {
        public var board: String
        public var day: String
        public init(board: String, day: String) { self.board = board; self.day = day }
        /// The end-of-trial keys and app outcomes (`collect --outcomes`): `board=B/outcomes/`.
        public static let outcomes = CollectedOutcomes.directoryName
        public var relativePath: String {
            day == Self.outcomes ? "board=\(DailyLayout.escape(board))/\(Self.outcomes)" : "board=\(DailyLayout.escape(board))/day=\(day)"
        }
        public static func < (a: Day, b: Day) -> Bool { (a.day, a.board) < (b.day, b.board) }
    }

    public struct State: Codable, Sendable {
        public var preparedThrough: String?
        /// `board=B/day=D` → SHA-256 of the manifest the server holds.
        public var shipped: [String: String] = [:]
    }

    public let root: URL
    public var pending: URL { root.appendingPathComponent("pending") }
    var scratch: URL { root.appendingPathComponent(".prepare") }
    private var stateFile: String { root.appendingPathComponent("state.json").path }
    private let lockFD: Int32

    public init(path: String) throws {
        root = URL(fileURLWithPath: path)
        do { try FileManager.default.createDirectory(at: root.appendingPathComponent("pending"), withIntermediateDirectories: true) } catch {
            throw CollectError("cannot create the spool \(path): \(SystemCallError.reason(of: error))")
        }
        lockFD = open(root.appendingPathComponent(".lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw CollectError("cannot open \(path)/.lock: \(SystemCallError.lastReason)") }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            close(lockFD)
            throw CollectError("another gaenctl collect is using \(path)")
        }
    }

    deinit { close(lockFD) }

    public static func isDay(_ s: String) -> Bool { dayStart(s) != nil }

    /// Unix seconds of a `YYYY-MM-DD` day's start, nil if it is not one.
    public static func dayStart(_ s: String) -> Double? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              parts[0].count == 4, parts[1].count == 2, parts[2].count == 2, (1...12).contains(m), (1...31).contains(d) else { return nil }
        let start = Double(CivilDate(year: Int64(y), month: Int64(m), day: Int64(d)).daysSinceEpoch) * 86_400
        return DailyLayout.day(start) == s ? start : nil
    }

    public static func json(_ object: [String: JSONValue]) -> Data { Data((JSONValue.object(object).serialized() + "\n").utf8) }

    /// The node's status at preparation, as `gaenctl status --json` has it, without what was on
    /// air at that moment (the address and RPI belong to no day).
    public static func statusJSON(_ s: GaendNodeStatus, busName: String) throws -> Data {
        var copy = s
        copy.advertisingAddress = nil
        copy.currentRPI = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(StatusWithBusName(status: copy, busName: busName)) + Data("\n".utf8)
    }

    /// The status's own fields and `busName` in one object (one keyed container: JSONEncoder
    /// merges the two encodings into it, and sorts the keys).
    private struct StatusWithBusName: Encodable {
        var status: GaendNodeStatus
        var busName: String
        enum Key: String, CodingKey { case busName }
        func encode(to encoder: any Encoder) throws {
            try status.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(busName, forKey: .busName)
        }
    }

    /// The spool's own small files are read bounded and only when regular files: a FIFO put in
    /// their place, or a huge one, is refused at once instead of hanging or filling memory.
    static let maxSmallFile = 4 << 20

    static func readSmall(_ path: String) throws -> Data {
        do { return Data(try SmallFile.read(path, limit: maxSmallFile)) } catch { throw CollectError("\(path) \(error)") }
    }

    public func loadState() throws -> State {
        guard FileManager.default.fileExists(atPath: stateFile) else { return State() }
        let data = try Self.readSmall(stateFile)
        do { return try JSONDecoder().decode(State.self, from: data) } catch {
            throw CollectError("\(stateFile) is not a collect state file: \(error)")
        }
    }

    public func saveState(_ state: State) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicOutputFile.write(try encoder.encode(state), to: stateFile, mode: 0o600)
    }

    /// An empty scratch directory for one export.
    public func freshScratch() throws -> URL {
        try? FileManager.default.removeItem(at: scratch)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        return scratch
    }

    /// Moves a prepared day into `pending/` (replacing an earlier preparation of it).
    public func enqueue(_ dir: URL, as day: Day) throws {
        let target = pending.appendingPathComponent(day.relativePath)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: dir, to: target)
    }

    public func pendingDays() throws -> [Day] {
        var days: [Day] = []
        let fm = FileManager.default
        for b in (try? fm.contentsOfDirectory(atPath: pending.path)) ?? [] where b.hasPrefix("board=") {
            for d in (try? fm.contentsOfDirectory(atPath: pending.appendingPathComponent(b).path)) ?? [] where d.hasPrefix("day=") || d == Day.outcomes {
                let board = DailyLayout.unescape(String(b.dropFirst("board=".count))) ?? String(b.dropFirst("board=".count))
                days.append(Day(board: board, day: d == Day.outcomes ? d : String(d.dropFirst("day=".count))))
            }
        }
        return days.sorted()
    }

    /// Uploads one pending day: the files not yet acknowledged, then the manifest; reads every
    /// file back and compares its SHA-256 with the manifest's (a server that stored other bytes
    /// of the same size is caught); records the day as shipped and only then removes the spool
    /// copy. Returns the files sent.
    public func ship(_ day: Day, base: String, http: HTTPSession, timeout: Double = 600) throws -> Int {
        let dir = pending.appendingPathComponent(day.relativePath)
        let manifestPath = dir.appendingPathComponent(DayManifest.fileName).path
        guard FileManager.default.fileExists(atPath: manifestPath) else { throw CollectError("\(manifestPath) is missing") }
        let manifest = try Self.readSmall(manifestPath)
        guard let text = String(data: manifest, encoding: .utf8) else {
            throw CollectError("\(manifestPath) is not UTF-8 text")
        }
        let entries = try DayManifest.parse(text)
        // Files the server acknowledged in an earlier, interrupted run (name and digest).
        let ackPath = dir.appendingPathComponent(".acknowledged").path
        let ackText = FileManager.default.fileExists(atPath: ackPath) ? String(decoding: try Self.readSmall(ackPath), as: UTF8.self) : ""
        var acknowledged = Set(ackText.split(separator: "\n").map(String.init))
        let url = base + day.relativePath + "/"
        for e in entries where !acknowledged.contains("\(e.sha256)  \(e.name)") {
            let r = try http.put(url + e.name, file: dir.appendingPathComponent(e.name).path, timeout: timeout)
            guard r.isSuccess else { throw CollectError("PUT \(e.name): HTTP \(r.status)\(Self.redirectNote(r))") }
            acknowledged.insert("\(e.sha256)  \(e.name)")
            try AtomicOutputFile.write(Data((acknowledged.sorted().joined(separator: "\n") + "\n").utf8), to: ackPath, mode: 0o600, durable: false)
        }
        let r = try http.put(url + DayManifest.fileName, file: manifestPath, timeout: timeout)
        guard r.isSuccess else { throw CollectError("PUT \(DayManifest.fileName): HTTP \(r.status)\(Self.redirectNote(r))") }
        // The server's copy: the same manifest, and every file with the digest it lists.
        let back = try http.get(url + DayManifest.fileName, maxBytes: DayManifest.maximumBytes, timeout: timeout)
        guard back.status == 200, back.body == manifest else {
            try? FileManager.default.removeItem(atPath: ackPath)
            throw CollectError("the server's \(DayManifest.fileName) differs from the one sent (HTTP \(back.status)); the day is sent again next run")
        }
        for e in entries {
            // stat(2), not FileManager's attributes: their size is an NSNumber under full
            // Foundation and a UInt under FoundationEssentials (the board's gaenctl), which
            // one cast cannot read both ways.
            var st = stat()
            let size: Int64? = stat(dir.appendingPathComponent(e.name).path, &st) == 0 ? Int64(st.st_size) : nil
            var hasher = ENProtocol.SHA256.Hasher()
            var received: Int64 = 0
            let limit = Int(min(size ?? 0, Int64(Int.max / 2))) + 1
            let g: HTTPResponse
            do {
                g = try http.get(url + e.name, maxBytes: limit, timeout: timeout) { bytes in
                    hasher.update(bytes)
                    received += Int64(bytes.count)
                }
            } catch let error as HTTPError {
                if case .tooLarge = error {
                    try? FileManager.default.removeItem(atPath: ackPath)
                    throw CollectError("the server's \(e.name) is larger than the file sent; the day is sent again next run")
                }
                throw error
            }
            let digest = hasher.finalize().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            guard g.status == 200, received == size, digest == e.sha256 else {
                try? FileManager.default.removeItem(atPath: ackPath)
                throw CollectError("the server's \(e.name) is not the file sent (HTTP \(g.status), \(received) bytes, SHA-256 \(digest.prefix(12))…, "
                                   + "sent \(size.map(String.init) ?? "?") bytes, \(e.sha256.prefix(12))…); the day is sent again next run")
            }
        }
        var state = try loadState()
        state.shipped[day.relativePath] = SHA256Hex.of(manifest)
        try saveState(state)
        try FileManager.default.removeItem(at: dir)
        return entries.count + 1
    }

    static func redirectNote(_ r: HTTPResponse) -> String {
        r.isRedirect ? " (a redirect to \(TextSafety.quoted(r.location ?? "nowhere")), not followed: check --server)" : ""
    }
}

/// SHA-256 of bytes in memory (a manifest), lower-case hex.
public enum SHA256Hex {
    public static func of(_ data: Data) -> String {
        ENProtocol.SHA256.hash(data).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
