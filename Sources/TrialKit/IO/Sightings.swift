import ENProtocol
import Foundation

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
