import ENProtocol
import Foundation
import TrialFormats

/// A row of the sightings export (docs/sightings-format.md). ENProtocol's reader is the one
/// reader of the format; the toolkit works on its records.
public typealias SightingRow = SightingsRecord

/// A sightings file that could not be read, with its path.
public struct SightingsFileError: Error, CustomStringConvertible {
    public let file: String
    public let reason: String
    public var description: String { "\(file): \(reason)" }
}

/// Reads (through ENProtocol's `SightingsFile`) and writes the sightings CSV and JSON-lines
/// formats of docs/sightings-format.md.
public enum SightingsExport {
    public static let header = SightingsFileWriter.csvHeader

    /// Reads a CSV or JSON-lines file (told apart by its first character, as `gaenctl match` does).
    public static func read(_ url: URL) throws -> [SightingRow] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw SightingsFileError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        return try parse(data, file: url.path)
    }

    /// Reads a file in pieces of about `pieceBytes` (cut at row ends; a CSV piece gets the
    /// header again), handing each piece's rows to `body`: memory follows the piece, not the
    /// file. Errors name the file's own line (row) numbers.
    public static func forEachPiece(_ url: URL, pieceBytes: Int = 32 << 20, _ body: ([SightingRow]) throws -> Void) throws {
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: url) } catch {
            throw SightingsFileError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        func read(_ n: Int) throws -> [UInt8] {
            do { return [UInt8](try handle.read(upToCount: n) ?? Data()) } catch {
                throw SightingsFileError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
            }
        }
        var pending = try read(pieceBytes)
        var header: [UInt8]? = nil
        var linesBefore = 0 // lines of the file before the piece
        var first = true
        var atEnd = pending.count < pieceBytes
        // JSON lines escape quotes and newlines inside strings: every newline ends a row there.
        let jsonLines = pending.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) == UInt8(ascii: "{")
        let quote: UInt8 = jsonLines ? 0 : UInt8(ascii: "\"")
        while true {
            // Cut after the last newline outside quotes (a quoted CSV field may hold one).
            var cut = pending.count
            if !atEnd {
                var inQuotes = false, last = -1
                for (i, b) in pending.enumerated() {
                    if b == quote { inQuotes.toggle() } else if b == UInt8(ascii: "\n"), !inQuotes { last = i }
                }
                if last < 0 { // one row longer than a piece: read on
                    let more = try read(pieceBytes)
                    atEnd = more.count < pieceBytes
                    pending += more
                    continue
                }
                cut = last + 1
            }
            var piece = Array(pending[..<cut])
            let rest = Array(pending[cut...])
            // Rows, as the reader numbers them: newlines outside quotes.
            var lines = 0, quoted = false
            for b in piece {
                if b == quote { quoted.toggle() } else if b == UInt8(ascii: "\n"), !quoted { lines += 1 }
            }
            if first {
                // The header of a CSV file (JSON lines have none), for the pieces after this one.
                if !jsonLines, let nl = piece.firstIndex(of: UInt8(ascii: "\n")) {
                    header = Array(piece[...nl])
                }
            } else if piece.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) {
                piece = []
            } else if let header {
                piece = header + piece
            }
            if first || !piece.isEmpty {
                let offset = first ? 0 : linesBefore - (header == nil ? 0 : 1)
                do { try body(try SightingsFile.records(Data(piece))) } catch let e as SightingsFormatError {
                    throw SightingsFileError(file: url.path, reason: Self.shifted(e, by: offset).description)
                }
            }
            first = false
            linesBefore += lines
            if atEnd { return }
            let more = try read(pieceBytes)
            atEnd = more.count < pieceBytes
            pending = rest + more
            if pending.isEmpty { return }
        }
    }

    /// The site of the first row that has one among the file's first `peekBytes` (whole rows
    /// only), without reading the file: the report's label is known before its rows stream.
    public static func firstSite(_ url: URL, peekBytes: Int = 1 << 16) -> String? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: peekBytes), !head.isEmpty else { return nil }
        var bytes = [UInt8](head)
        if bytes.count == peekBytes {
            let json = bytes.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) == UInt8(ascii: "{")
            var quoted = false, last = -1
            for (i, b) in bytes.enumerated() {
                if !json, b == UInt8(ascii: "\"") { quoted.toggle() } else if b == UInt8(ascii: "\n"), !quoted { last = i }
            }
            guard last >= 0 else { return nil }
            bytes = Array(bytes[...last])
        }
        return (try? SightingsFile.records(Data(bytes)))?.first(where: { $0.site != nil })?.site
    }

    /// An error of a piece with the file's line numbers.
    static func shifted(_ e: SightingsFormatError, by offset: Int) -> SightingsFormatError {
        switch e {
        case .malformedCSV(let line, let reason): return .malformedCSV(line: line + offset, reason: reason)
        case .badField(let line, let column, let value, let expected): return .badField(line: line + offset, column: column, value: value, expected: expected)
        default: return e
        }
    }

    public static func parse(_ data: Data, file: String) throws -> [SightingRow] {
        do { return try SightingsFile.records(data) } catch let e as SightingsFormatError {
            throw SightingsFileError(file: file, reason: e.description)
        }
    }

    /// Streams sightings into CSV text (all columns of the format), through ENProtocol's one
    /// writer of the format.
    public struct Writer {
        public private(set) var csv = CSVWriter(header: SightingsExport.header)
        let rows = SightingsFileWriter(format: .csv)
        public init() {}

        public mutating func append(_ s: SightingRow) {
            var line = rows.row(s)
            line.removeLast()
            csv.appendRaw(line)
        }

        /// Appends a line already formatted in the header's column order (the simulator's fast path).
        public mutating func appendRawLine(_ line: String) { csv.appendRaw(line) }

        public func write(to url: URL) throws { try csv.write(to: url) }
    }
}
