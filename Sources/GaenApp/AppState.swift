#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport

/// A package the app holds: where it came from, what it was, whether gaend has it.
public struct CachedPackage: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case day, hour, file }
    /// The layout's coordinates: `cwa/DE/2026-11-20`, `cwa/DE/2026-11-20/13` or `google/R/START-END-BATCH.zip`.
    public var id: String
    public var url: String
    public var kind: Kind
    /// The UTC day of the package (CWA), for replacing hours by the day and for retention.
    public var day: String?
    public var hour: Int?
    public var sha256: String
    public var etag: String?
    public var bytes: Int
    public var keys: Int
    /// Unix seconds.
    public var fetchedAt: Int64
    /// The cached file, relative to the cache directory.
    public var file: String
    public var providedAt: Int64?
    /// Its keys were all in packages already provided (a day after its hours): no call needed.
    public var coveredByProvided: Bool = false
    /// Bytes of its export.bin (what gaend's per-call limit counts besides the file's own
    /// bytes); nil in a state written before it was recorded (then read from the cached file).
    public var exportBytes: Int?
    /// When gaend last refused it (Unix seconds), why, and how many times: a refused package
    /// goes into no batch again; it is tried alone once a UTC day, at most
    /// `SyncRun.maxRefusals` times in all, in case the refusal was gaend's clock's.
    public var refusedAt: Int64?
    public var refusal: String?
    public var refusals: Int?
    public var provided: Bool { providedAt != nil || coveredByProvided }
    public var refused: Bool { !provided && refusedAt != nil }
}

/// One run's outcome.
public struct SyncRecord: Codable, Sendable, Equatable {
    public var startedAt: Int64
    public var finishedAt: Int64
    public var server: String
    public var newPackages: Int
    public var provided: Int
    public var refused: Int
    /// Files left for the next run (server errors, timeouts, the rate limit).
    public var pending: Int
    public var bytes: Int
    /// Empty when the run completed.
    public var error: String
    /// Of `refused`, the packages gaend refused in this run (nil in records written before).
    public var refusedByGaend: Int?

    public init(startedAt: Int64, finishedAt: Int64, server: String, newPackages: Int, provided: Int, refused: Int,
                pending: Int, bytes: Int, error: String) {
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.server = server
        self.newPackages = newPackages
        self.provided = provided
        self.refused = refused
        self.pending = pending
        self.bytes = bytes
        self.error = error
    }
}

/// A risk computation's outcome.
public struct RiskRecord: Codable, Sendable, Equatable {
    public var computedAt: Int64
    public var engine: String
    /// "low", "high" or "unknown" (no configuration, or the engine failed).
    public var level: String
    public var windows: Int
    /// The engine's own result, as `gaenctl risk ENGINE` prints it.
    public var detail: String
}

/// The app's state, one JSON file in its state directory (not gaend's store: the app runs
/// as its own service and never reads gaend's files). Readers other than the app itself
/// (`gaenctl status`, a metrics exporter) read `status.json` beside it (`AppStatus`).
public struct AppState: Codable, Sendable, Equatable {
    public static let version = 1
    public var formatVersion = AppState.version
    public var packages: [String: CachedPackage] = [:]
    /// Conditional GET of indexes and the configuration: URL -> ETag, body in the cache.
    public var indexETags: [String: String] = [:]
    /// ProvideDiagnosisKeys calls made, Unix seconds (the app's own count of gaend's daily limit).
    public var provideCalls: [Int64] = []
    public var lastSync: SyncRecord?
    public var risk: RiskRecord?
    /// Risk changes, oldest first, at most `historyLimit`.
    public var history: [RiskRecord] = []
    public static let historyLimit = 200
    /// When the level last turned high (nil while it is not high).
    public var highRiskSince: Int64?
    /// Packages refused since the state began: at download (signature, size, window,
    /// revoked) and by gaend (ProvideDiagnosisKeys refused the file). Counters, for the metrics.
    public var refusedDownloadsTotal: Int?
    public var refusedByGaendTotal: Int?
    /// The last ProvideDiagnosisKeys call gaend accepted (Unix seconds).
    public var lastProvidedAt: Int64?
    /// The highest app configuration `version` accepted per trusted key (`ID:VERSION` of the
    /// signature that verified it): an older configuration signed by the same key is refused,
    /// so a server (or a man in the middle) replaying it cannot bring a revoked package back.
    public var configurationVersions: [String: Int]?

    public init() {}
}

/// The part of the state others read: written after every run as `status.json`, documented
/// in docs/key-server.md ("What the status fields mean").
public struct AppStatus: Codable, Sendable, Equatable {
    public var formatVersion = 1
    public var lastSync: SyncRecord?
    public var packagesHeld: Int
    public var packagesProvided: Int
    public var packagesWaiting: Int
    public var risk: RiskRecord?
    public var highRiskSince: Int64?
    /// Held packages gaend refused (not in `packagesWaiting`).
    public var packagesRefused: Int?
    /// The oldest `fetchedAt` of the waiting packages: how long keys have waited for gaend.
    public var oldestWaitingFetchedAt: Int64?
    /// The last provide gaend accepted, Unix seconds.
    public var lastProvidedAt: Int64?
    /// Packages refused since the state began, at download and by gaend.
    public var refusedDownloadsTotal: Int?
    public var refusedByGaendTotal: Int?

    public static let fileName = "status.json"

    public init(lastSync: SyncRecord? = nil, packagesHeld: Int, packagesProvided: Int, packagesWaiting: Int, risk: RiskRecord? = nil,
                highRiskSince: Int64? = nil, packagesRefused: Int? = nil, oldestWaitingFetchedAt: Int64? = nil,
                lastProvidedAt: Int64? = nil, refusedDownloadsTotal: Int? = nil, refusedByGaendTotal: Int? = nil) {
        self.lastSync = lastSync
        self.packagesHeld = packagesHeld
        self.packagesProvided = packagesProvided
        self.packagesWaiting = packagesWaiting
        self.risk = risk
        self.highRiskSince = highRiskSince
        self.packagesRefused = packagesRefused
        self.oldestWaitingFetchedAt = oldestWaitingFetchedAt
        self.lastProvidedAt = lastProvidedAt
        self.refusedDownloadsTotal = refusedDownloadsTotal
        self.refusedByGaendTotal = refusedByGaendTotal
    }

    public static func read(directory: String) throws -> AppStatus? {
        let path = directory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        // Bounded before reading: a huge (or sparse) file is refused, not read into memory.
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: 1 << 20) } catch { throw AppError.state("\(path) \(error)") }
        do { return try JSONDecoder().decode(AppStatus.self, from: Data(bytes)) } catch {
            throw AppError.state("\(path) is not the app's status file: \(error)")
        }
    }
}

public enum AppError: Error, CustomStringConvertible {
    case state(String)
    case clock(String)
    case server(String)
    case space(String)
    case configuration(String)

    public var description: String {
        switch self {
        case .state(let s), .clock(let s), .server(let s), .space(let s), .configuration(let s): return s
        }
    }
}

/// The state directory: state.json, status.json, cache/. Writes are atomic (temp file,
/// fsync, rename), so a power cut leaves the old state or the new one.
public struct AppStateStore: Sendable {
    public let directory: String
    public var cacheDirectory: String { directory + "/cache" }

    /// state.json is read only up to this size.
    public static let maxStateBytes = 64 << 20

    public init(directory: String) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch { throw AppError.state("\(directory): cannot create the state directory: \(SystemCallError.reason(of: error))") }
    }

    public func load() throws -> AppState {
        let path = directory + "/state.json"
        guard FileManager.default.fileExists(atPath: path) else { return AppState() }
        do {
            // Bounded before reading (a state of 14 days of hour packages is a few hundred KiB).
            let data = Data(try SmallFile.read(path, limit: Self.maxStateBytes))
            let state = try JSONDecoder().decode(AppState.self, from: data)
            guard state.formatVersion == AppState.version else { throw AppError.state("format version \(state.formatVersion)") }
            return state
        } catch {
            throw AppError.state("\(path): cannot read the app's state (\(error)); move it away to start afresh")
        }
    }

    public func save(_ state: AppState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try write(try encoder.encode(state), to: "state.json")
        let waiting = state.packages.values.filter { !$0.provided && !$0.refused }
        let status = AppStatus(lastSync: state.lastSync, packagesHeld: state.packages.count,
                               packagesProvided: state.packages.values.filter(\.provided).count,
                               packagesWaiting: waiting.count,
                               risk: state.risk,
                               highRiskSince: state.highRiskSince,
                               packagesRefused: state.packages.values.filter(\.refused).count,
                               oldestWaitingFetchedAt: waiting.map(\.fetchedAt).min(),
                               lastProvidedAt: state.lastProvidedAt,
                               refusedDownloadsTotal: state.refusedDownloadsTotal ?? 0,
                               refusedByGaendTotal: state.refusedByGaendTotal ?? 0)
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try write(try encoder.encode(status), to: AppStatus.fileName)
    }

    public func write(_ data: Data, to name: String) throws {
        let path = directory + "/" + name
        do throws(SystemCallError) { try AtomicFile.write(data, to: path, mode: 0o644) } catch {
            throw AppError.state("\(path): cannot replace: \(error.description)")
        }
    }

    public func cachePath(_ file: String) -> String { cacheDirectory + "/" + file }
}
