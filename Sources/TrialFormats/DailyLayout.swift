import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// The export layout for many boards (docs/trial.md "Many boards"): one file per board per UTC
/// day, in Hive-style directories `board=<name>/day=<YYYY-MM-DD>/<file>`, which DuckDB
/// (`hive_partitioning`) and Spark (partition discovery) read directly, with `board` and `day`
/// as columns. The partition keys are not called `node` or `date` because Spark refuses a
/// partition column that is also a column of the files (the sightings files have `node`).
public enum DailyLayout {
    /// `YYYY-MM-DD` of a Unix time, UTC (days from the civil calendar, proleptic Gregorian).
    public static func day(_ unixSeconds: Double) -> String {
        let date = CivilDate(unixSeconds: unixSeconds)
        let (y, m, d) = (date.year, date.month, date.day)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : String(v) }
        return "\(y)-\(two(m))-\(two(d))"
    }

    /// Start of the UTC day containing `unixSeconds`.
    public static func dayStart(_ unixSeconds: Double) -> Double { (unixSeconds / 86_400).rounded(.down) * 86_400 }

    /// A partition value as a directory name: letters, digits, `-`, `_`, `.` kept, every other
    /// byte as `%XX` (as Hive escapes; DuckDB and Spark read the value back unescaped), and an
    /// empty name as `_`.
    public static func escape(_ value: String) -> String {
        guard !value.isEmpty else { return "_" }
        let hex: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
        var out = ""
        for b in value.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                out.append(Character(UnicodeScalar(b)))
            default:
                out += "%" + String([hex[Int(b >> 4)], hex[Int(b & 0xf)]])
            }
        }
        return out == "." || out == ".." ? out.replacing(".", with: "%2E") : out
    }

    /// A directory name's partition value: every `%XX` as its byte (what Foundation's
    /// `removingPercentEncoding` did); nil when a `%` is not followed by two hex digits or the
    /// bytes are not UTF-8.
    public static func unescape(_ name: String) -> String? {
        func hexValue(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let utf8 = Array(name.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%") {
                guard i + 2 < utf8.count, let hi = hexValue(utf8[i + 1]), let lo = hexValue(utf8[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(utf8[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// `board=<board>/day=<day>/<file>`, relative to the export directory.
    public static func relativePath(board: String, day: String, file: String) -> String {
        "board=\(escape(board))/day=\(day)/\(file)"
    }

    /// Lets a process keep one file open per board and day (an atomic file stays open until
    /// committed): raises the soft limit on open files to the hard limit.
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// Text files written row by row into the daily layout: each row goes to its board's and day's
/// file, which is created on its first row (with the header) and appears only when `commit()`
/// succeeds (AtomicOutputFile), so a failed run leaves no half files and replaces none.
public final class DailyFiles {
    let root: URL
    package let fileName: String
    let header: String
    let mode: mode_t
    let durable: Bool
    struct Open { var file: AtomicOutputFile; var buffer: [UInt8]; var rows = 0 }
    var open: [String: Open] = [:]
    /// The files written, relative to the root, with their row counts (after commit).
    public private(set) var written: [(path: String, rows: Int)] = []
    /// The last board and UTC day appended to, and their file: rows come in runs of one board
    /// and day, so the path is built once per run instead of once per row.
    var last: (board: String, day: Int64, path: String)?

    /// - Parameters:
    ///   - header: the first line of every file (with its newline; empty for JSON lines).
    public init(root: URL, fileName: String, header: String, mode: mode_t = 0o644, durable: Bool = false) {
        self.root = root; self.fileName = fileName; self.header = header; self.mode = mode; self.durable = durable
        DailyLayout.raiseOpenFileLimit()
    }

    /// Appends `line` (with its newline) to the file of `board` on the UTC day of `time`.
    public func append(_ line: String, board: String, time: Double) throws {
        try append(bytes: Array(line.utf8), board: board, time: time)
    }

    /// Appends `line` (with its newline) to the file of `board` on the UTC day of `time`.
    public func append(bytes line: [UInt8], board: String, time: Double) throws {
        let day = Int64((time / 86_400).rounded(.down))
        let path: String
        if let l = last, l.day == day, l.board == board { path = l.path } else {
            path = DailyLayout.relativePath(board: board, day: DailyLayout.day(time), file: fileName)
            last = (board, day, path)
        }
        try append(bytes: line, rows: 1, relativePath: path)
    }

    /// `rows` whole lines (each with its newline) to the file at `path`.
    package func append(bytes: some Collection<UInt8>, rows count: Int, relativePath path: String) throws {
        if open[path] == nil {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            open[path] = Open(file: try AtomicOutputFile(path: url.path, mode: mode, durable: durable), buffer: Array(header.utf8))
        }
        open[path]!.buffer += bytes
        open[path]!.rows += count
        if open[path]!.buffer.count >= 1 << 16 {
            try open[path]!.file.write(open[path]!.buffer)
            // Not keeping the capacity: hundreds of files may be open at once (50 boards x 14 days).
            open[path]!.buffer = []
        }
    }

    /// Puts every file in place.
    public func commit() throws {
        for path in open.keys.sorted() {
            let o = open[path]!
            if !o.buffer.isEmpty { try o.file.write(o.buffer) }
            try o.file.commit()
            written.append((path, o.rows))
        }
        open = [:]
    }

    /// Drops every file not yet committed.
    public func discard() {
        for o in open.values { o.file.discard() }
        open = [:]
    }

    deinit { discard() }
}

/// Splits one board's sightings export (the bytes `gaend`'s ExportSightings writes: CSV with
/// the header, or JSON lines; every row starts with its time) into the daily layout, reading
/// the export in pieces so memory stays flat however long the export.
public enum SightingsDailySplit {
    public struct Failure: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// Reads `descriptor` from offset 0 to its end; returns the files written and their rows.
    public static func split(descriptor: Int32, jsonLines: Bool, board: String, into root: URL, mode: mode_t = 0o600) throws -> [(path: String, rows: Int)] {
        let files = DailyFiles(root: root, fileName: jsonLines ? "sightings.jsonl" : "sightings.csv",
                               header: jsonLines ? "" : SightingsFileWriter.csvHeader.joined(separator: ",") + "\n", mode: mode, durable: true)
        var pending: [UInt8] = []
        var offset: off_t = 0
        var line = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        func handle(_ bytes: ArraySlice<UInt8>) throws {
            line += 1
            guard !bytes.isEmpty else { return }
            let text = String(decoding: bytes, as: UTF8.self)
            if !jsonLines, line == 1 {
                guard text.hasPrefix("time,") else { throw Failure(reason: "export line 1: expected the header starting with 'time,', got '\(text.prefix(40))'") }
                return
            }
            guard let t = time(of: text, jsonLines: jsonLines) else {
                throw Failure(reason: "export line \(line): no time at the start of '\(text.prefix(60))'")
            }
            try files.append(text + "\n", board: board, time: t)
        }
        while true {
            let n: Int
            do throws(SystemCallError) { n = try systemCall("pread") { buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) } } } catch {
                throw Failure(reason: "cannot read the export: \(error.reason)")
            }
            if n == 0 { break }
            offset += off_t(n)
            var start = 0
            for i in 0..<n where buffer[i] == UInt8(ascii: "\n") {
                if pending.isEmpty { try handle(buffer[start..<i]) } else { pending += buffer[start..<i]; try handle(pending[...]); pending = [] }
                start = i + 1
            }
            pending += buffer[start..<n]
        }
        if !pending.isEmpty { try handle(pending[...]) }
        do { try files.commit() } catch { files.discard(); throw error }
        return files.written
    }

    /// The time at the start of a row: the first CSV field, or JSON lines' leading `{"time":`.
    static func time(of row: String, jsonLines: Bool) -> Double? {
        var rest = Substring(row)
        if jsonLines {
            guard rest.hasPrefix("{\"time\":") else { return nil }
            rest = rest.dropFirst(8)
        }
        let end = rest.firstIndex(where: { $0 == "," || $0 == "}" }) ?? rest.endIndex
        return Double(rest[..<end])
    }
}
