import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport

/// The two published layouts of a key server, as a static tree a plain web server serves.
///
/// CWA distribution layout (the Corona-Warn-App's CDN; every endpoint is also a parent of
/// others, e.g. `.../date/2020-07-01` is the day package and `.../date/2020-07-01/hour` its
/// hour index, so on disk each endpoint is the file `{endpoint}/index`, which the web server
/// serves for `{endpoint}`, as the CWA's object store did):
///
///     version/v1/diagnosis-keys/country                      ["DE"]
///     version/v1/diagnosis-keys/country/DE/date              ["2020-07-01", ...] (complete days)
///     version/v1/diagnosis-keys/country/DE/date/D            day package (zip: export.bin + export.sig)
///     version/v1/diagnosis-keys/country/DE/date/D/hour       [0, 1, ...] (complete hours with keys)
///     version/v1/diagnosis-keys/country/DE/date/D/hour/H     hour package
///     version/v1/configuration/country/DE/app_config         signed app configuration
///
/// Google key server layout (exposure-notifications-server's export: files under a root
/// folder and an index naming them, oldest first, relative to the tree's root):
///
///     R/index.txt                                            R/1593561600-1593565200-00001.zip ...
///     R/{start}-{end}-{batch:05}.zip                         batch_num/batch_size in the header
///     R/app-config.zip                                       signed app configuration
public enum CWALayout {
    public static let root = "version/v1/diagnosis-keys/country"
    /// The file holding endpoint `path` in the static tree.
    public static func file(_ endpoint: String) -> String { endpoint + "/index" }
    public static func countries() -> String { root }
    public static func days(_ country: String) -> String { "\(root)/\(country)/date" }
    public static func day(_ country: String, _ day: UTCDay) -> String { "\(root)/\(country)/date/\(day.isoDate)" }
    public static func hours(_ country: String, _ day: UTCDay) -> String { "\(root)/\(country)/date/\(day.isoDate)/hour" }
    public static func hour(_ country: String, _ day: UTCDay, _ hour: Int) -> String { "\(root)/\(country)/date/\(day.isoDate)/hour/\(hour)" }
    public static func appConfig(_ country: String) -> String { "version/v1/configuration/country/\(country)/app_config" }

    /// `["DE", ...]` or `["2020-07-01", ...]`: written by the project's one JSON writer, which
    /// escapes what a string may hold.
    public static func encodeStrings(_ values: [String]) -> Data {
        Data(JSONValue.array(values.map(JSONValue.string)).serialized().utf8)
    }

    /// `[0, 1, ...]`.
    public static func encodeHours(_ hours: [Int]) -> Data {
        Data(JSONValue.array(hours.map { .int(Int64($0)) }).serialized().utf8)
    }

    /// A JSON array of strings (country or date index). Anything else is an error naming `url`.
    public static func decodeStrings(_ data: Data, url: String) throws -> [String] {
        guard case .array(let array)? = try? JSONValue.parse(data) else {
            throw DistributionError.badIndex(url: url, reason: "not a JSON array")
        }
        return try array.map {
            guard case .string(let s) = $0, !s.isEmpty, s.count <= 64 else {
                throw DistributionError.badIndex(url: url, reason: "an entry is not a short string")
            }
            return s
        }
    }

    /// A JSON array of hours 0...23.
    public static func decodeHours(_ data: Data, url: String) throws -> [Int] {
        guard case .array(let array)? = try? JSONValue.parse(data) else {
            throw DistributionError.badIndex(url: url, reason: "not a JSON array")
        }
        return try array.map {
            // A whole number (or a boolean, as 1 or 0), as NSNumber's `as? Int` took it.
            guard let n = $0.integer, (0...23).contains(n) else {
                throw DistributionError.badIndex(url: url, reason: "an entry is not an hour 0...23")
            }
            return n
        }
    }
}

public enum GoogleLayout {
    public static func index(_ region: String) -> String { "\(region)/index.txt" }
    public static func appConfig(_ region: String) -> String { "\(region)/app-config.zip" }
    public static func file(_ region: String, start: Int64, end: Int64, batch: Int) -> String {
        "\(region)/\(start)-\(end)-\(String(repeating: "0", count: max(0, 5 - String(batch).count)))\(batch).zip"
    }

    public static func encodeIndex(_ paths: [String]) -> Data { Data(paths.map { $0 + "\n" }.joined().utf8) }

    /// index.txt: one relative path a line; blank lines skipped. A path must stay inside the
    /// tree (no `..`, no leading `/`, no scheme), since the client joins it to the server URL.
    public static func decodeIndex(_ data: Data, url: String) throws -> [String] {
        guard let text = String(data: data, encoding: .utf8) else { throw DistributionError.badIndex(url: url, reason: "not UTF-8") }
        return try text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).compactMap { line in
            let path = String(line).trimmingWhitespaces()
            if path.isEmpty { return nil }
            guard path.count <= 512, !path.hasPrefix("/"), !path.contains("://"),
                  !path.split(separator: "/").contains(".."), path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "?" && $0 != "#" }) else {
                throw DistributionError.badIndex(url: url, reason: "entry '\(path.prefix(80))' is not a relative path inside the tree")
            }
            return path
        }
    }
}

/// Errors of reading a published tree.
public enum DistributionError: Error, Equatable, CustomStringConvertible {
    case badIndex(url: String, reason: String)
    case badConfiguration(reason: String)

    public var description: String {
        switch self {
        case .badIndex(let u, let r): return "\(u): bad index: \(r)"
        case .badConfiguration(let r): return "app configuration: \(r)"
        }
    }
}
