#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Errors of the risk engines and summaries: a parameter file or a window that does not fit.
/// Each names what is wrong, what was expected and what was found, so a trial team can fix
/// the file without reading the code.
public enum RiskError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The parameter/configuration JSON could not be read at all (syntax, types, missing keys).
    case malformedParameters(file: String, detail: String)
    /// A parameter has a value outside what the engine accepts.
    case invalidParameter(name: String, expected: String, actual: String)
    /// A window lacks a field the engine needs, or carries a value the engine cannot use.
    case invalidWindow(index: Int, field: String, expected: String, actual: String)
    /// The windows JSON could not be read.
    case malformedWindows(detail: String)

    public var description: String {
        switch self {
        case let .malformedParameters(file, detail):
            return "cannot read \(file): \(detail)"
        case let .invalidParameter(name, expected, actual):
            return "parameter \(name): expected \(expected), got \(actual)"
        case let .invalidWindow(index, field, expected, actual):
            return "window \(index): \(field): expected \(expected), got \(actual)"
        case let .malformedWindows(detail):
            return "cannot read windows: \(detail)"
        }
    }
}

/// JSON in and out for the engines: one place that turns Codable's errors into RiskError.
public enum RiskJSON {
    /// Decodes a parameter file; `file` names it in the error.
    public static func decodeParameters<T: Decodable>(_ type: T.Type, from data: Data, file: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as RiskError {
            throw error
        } catch let error as DecodingError {
            throw RiskError.malformedParameters(file: file, detail: describe(error))
        } catch {
            throw RiskError.malformedParameters(file: file, detail: String(describing: error))
        }
    }

    /// Encodes a result with sorted keys so that outputs diff cleanly between runs.
    public static func encode<T: Encodable>(_ value: T, pretty: Bool = true) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys]
        return try encoder.encode(value)
    }

    /// Names a Swift type the way a JSON author thinks of it.
    static func jsonName(_ type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Dictionary") { return "a JSON object" }
        if name.hasPrefix("Array") { return "a JSON array" }
        if ["Int", "Int32", "Int64", "UInt32"].contains(name) { return "an integer" }
        if name == "Double" { return "a number" }
        if name == "String" { return "a string" }
        if name == "Bool" { return "true or false" }
        return name
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [CodingKey]) -> String {
            let p = codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "top level" : String(p.drop(while: { $0 == "." }))
        }
        switch error {
        case let .keyNotFound(key, ctx):
            return "\(path(ctx.codingPath + [key])): missing"
        case let .typeMismatch(type, ctx):
            return "\(path(ctx.codingPath)): expected \(jsonName(type))"
        case let .valueNotFound(type, ctx):
            return "\(path(ctx.codingPath)): expected \(jsonName(type)), got null"
        case let .dataCorrupted(ctx):
            return "\(path(ctx.codingPath)): \(ctx.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }
}

extension ExposureWindow {
    /// Sum of secondsSinceLastScan, negative values counted as zero (a clock step is no time).
    public var totalSeconds: Int { scanInstances.reduce(0) { $0 + max($1.secondsSinceLastScan, 0) } }
}
