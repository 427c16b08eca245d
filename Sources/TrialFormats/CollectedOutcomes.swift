import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport

/// A board's keys and app outcomes as `gaenctl collect --outcomes` ships them at the end of a
/// trial, with the participant's consent, into `board=B/outcomes/` of the collected tree
/// (docs/fleet.md, "Keys and app outcomes"): `keys.json` (the board's own TEKs, a JSON key list
/// as `trial report --keys` reads), `app.json` (this type), `windows.json` (gaend's exposure
/// windows, the Android shape) and `MANIFEST.sha256`. The writer (GaenCollect) and the reader
/// (`trial report --placement`) share it.
public struct CollectedOutcomes: Codable, Sendable, Equatable {
    public struct Risk: Codable, Sendable, Equatable {
        /// Unix seconds of the computation.
        public var computedAt: Int64
        public var engine: String
        /// "low", "high" or "unknown".
        public var level: String
        public var windows: Int
        public init(computedAt: Int64, engine: String, level: String, windows: Int) {
            self.computedAt = computedAt; self.engine = engine; self.level = level; self.windows = windows
        }
    }

    public struct Package: Codable, Sendable, Equatable {
        /// The layout's coordinates (`cwa/DE/2026-11-20`, ...).
        public var id: String
        public var keys: Int
        /// When gaend accepted it (Unix seconds); nil: covered by a package provided before.
        public var providedAt: Int64?
        public init(id: String, keys: Int, providedAt: Int64?) { self.id = id; self.keys = keys; self.providedAt = providedAt }
    }

    /// A collected app.json or keys.json that cannot be read, with the file in its text.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public static let formatVersion = 1
    public static let directoryName = "outcomes"
    public static let appFile = "app.json", keysFile = "keys.json", windowsFile = "windows.json"

    public var formatVersion = CollectedOutcomes.formatVersion
    public var board: String
    public var collectedAt: Int64
    /// The UTC days whose keys the app uploaded to the key server (`app submit`): the days the
    /// board was reported positive for.
    public var submittedDays: [String]
    /// Every risk the app computed and kept (its changes, oldest first), and the last one.
    public var riskHistory: [Risk]
    public var risk: Risk?
    public var highRiskSince: Int64?
    /// The packages gaend was given (matching counts per package are not kept by the app).
    public var packagesProvided: [Package]
    /// Windows gaend held at collection (the risk's input).
    public var windows: Int

    public init(board: String, collectedAt: Int64, submittedDays: [String], riskHistory: [Risk], risk: Risk?, highRiskSince: Int64?,
                packagesProvided: [Package], windows: Int) {
        self.board = board; self.collectedAt = collectedAt; self.submittedDays = submittedDays; self.riskHistory = riskHistory
        self.risk = risk; self.highRiskSince = highRiskSince; self.packagesProvided = packagesProvided; self.windows = windows
    }

    /// When the app first found high risk, if ever (the history, else the last risk).
    public var firstHigh: Int64? {
        (riskHistory + (risk.map { [$0] } ?? [])).filter { $0.level == "high" }.map(\.computedAt).min()
    }

    public func encoded() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try e.encode(self) + Data("\n".utf8)
    }

    public static func decode(_ data: Data, file: String) throws -> CollectedOutcomes {
        let o: CollectedOutcomes
        do { o = try JSONDecoder().decode(CollectedOutcomes.self, from: data) } catch {
            throw Failure("\(file): not a collected app.json (\(error))")
        }
        guard o.formatVersion == formatVersion else { throw Failure("\(file): format version \(o.formatVersion), this gaenctl reads \(formatVersion)") }
        return o
    }

    /// What the collected tree holds for one board: its outcomes and the UTC days of its keys,
    /// or nil when `board=B/outcomes/app.json` is absent (nothing was collected).
    public static func read(collected root: URL, board: String) throws -> (outcomes: CollectedOutcomes, keyDays: [String])? {
        let dir = root.appendingPathComponent("board=\(DailyLayout.escape(board))/\(directoryName)")
        let app = dir.appendingPathComponent(appFile).path
        guard FileManager.default.fileExists(atPath: app) else { return nil }
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(app, limit: 16 << 20) } catch { throw Failure("\(app) \(error)") }
        let o = try decode(Data(bytes), file: app)
        guard o.board == board else { throw Failure("\(app): written for board \(o.board), found under board=\(board)") }
        var days: [String] = []
        let keys = dir.appendingPathComponent(keysFile).path
        if FileManager.default.fileExists(atPath: keys) {
            let k: [UInt8]
            do { k = try SmallFile.read(keys, limit: 16 << 20) } catch { throw Failure("\(keys) \(error)") }
            days = Set(try KeyListFile.decode(Data(k), file: keys).map { DailyLayout.day(Double($0.rollingStartIntervalNumber.rawValue) * 600) }).sorted()
        }
        return (o, days)
    }
}
