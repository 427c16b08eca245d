import ENProtocol
import Foundation
import PlatformSupport

/// A key as it arrived in the inbox: the key and when it was submitted (the file's time).
public struct SubmittedKey: Sendable, Hashable {
    public var key: DiagnosisKey
    /// Unix seconds.
    public var submittedAt: Int64
    public init(key: DiagnosisKey, submittedAt: Int64) {
        self.key = key
        self.submittedAt = submittedAt
    }

    /// When the key may be published: after it was submitted, and only once it has expired
    /// and the embargo has passed (an RPI of a published key must not be on air any more).
    public func availableAt(embargo: Int64) -> Int64 {
        max(submittedAt, key.validityEnd.unixSeconds + embargo)
    }
}

/// How a publisher cuts keys into packages (the CWA distribution service's settings).
public struct PublishOptions: Sendable, Equatable {
    public var country: String
    public var region: String
    /// Seconds after a key's expiry before it may be published (CWA's server: 2 h).
    public var embargo: Int64 = 7_200
    /// An hour with fewer keys is shifted into the next hour's package (CWA: 140), so no
    /// package holds so few keys that they identify the few people who submitted them.
    public var minimumKeysPerPackage: Int = 140
    /// Hour packages are published for the current day and the days before it, this many days in all (CWA: 2).
    public var hourPackageDays: Int = 2
    /// Days of packages kept (the keys' 14 days of relevance).
    public var retentionDays: Int = 14
    /// Google layout: keys per file before the batch is split (exposure-notifications-server: 30,000).
    public var maximumKeysPerFile: Int = 30_000

    public init(country: String, region: String) {
        self.country = country
        self.region = region
    }
}

/// What the keys become as of one moment: hour buckets after shifting, the days' packages,
/// the Google layout's batches. Pure: the same keys, options and moment give the same plan.
public struct PublicationPlan: Sendable, Equatable {
    public struct Package: Sendable, Equatable {
        /// Path of the file in the tree.
        public var path: String
        public var start: Int64
        public var end: Int64
        public var batchNum: Int32 = 1
        public var batchSize: Int32 = 1
        /// Sorted by key bytes, which hides the order of submission.
        public var keys: [DiagnosisKey]
    }

    public var days: [UTCDay] = []
    public var hours: [UTCDay: [Int]] = [:]
    public var cwaPackages: [Package] = []
    public var googlePackages: [Package] = []
    /// Keys held back: available but shifted into an hour not complete yet.
    public var keysWaiting = 0
    /// Keys dropped as older than the retention.
    public var keysExpired = 0
    public var keysPublished = 0

    public static func plan(_ submitted: [SubmittedKey], now: Int64, options o: PublishOptions) -> PublicationPlan {
        var plan = PublicationPlan()
        let currentHour = floorDiv(now, 3600)
        let today = UTCDay(Int32(floorDiv(now, 86_400)))
        let firstDay = today.advanced(by: -o.retentionDays)
        let firstHour = Int64(firstDay.rawValue) * 24

        // A key submitted twice (a board uploading again) counts once, at its first submission.
        var byKey: [Data: SubmittedKey] = [:]
        for s in submitted {
            let id = s.key.key.bytes + s.key.rollingStartIntervalNumber.littleEndianBytes
            if let seen = byKey[id], seen.submittedAt <= s.submittedAt { continue }
            byKey[id] = s
        }
        var buckets: [Int64: [DiagnosisKey]] = [:]
        for s in byKey.values {
            let hour = floorDiv(s.availableAt(embargo: o.embargo), 3600)
            if hour < firstHour { plan.keysExpired += 1; continue }
            buckets[hour, default: []].append(s.key)
        }

        // Shift thin hours forward; only complete hours are published.
        var emitted: [(hour: Int64, keys: [DiagnosisKey])] = []
        var pending: [DiagnosisKey] = []
        for hour in buckets.keys.sorted() {
            guard hour < currentHour else { pending += buckets[hour]!; continue }
            pending += buckets[hour]!
            if pending.count >= max(1, o.minimumKeysPerPackage) {
                emitted.append((hour, pending.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }))
                pending = []
            }
        }
        plan.keysWaiting = pending.count
        plan.keysPublished = emitted.reduce(0) { $0 + $1.keys.count }

        let hourDaysFrom = today.advanced(by: -(max(1, o.hourPackageDays) - 1))
        var byDay: [UTCDay: [(Int, [DiagnosisKey])]] = [:]
        for (hour, keys) in emitted {
            byDay[UTCDay(Int32(floorDiv(hour, 24))), default: []].append((Int(hour % 24), keys))
        }
        for day in byDay.keys.sorted() {
            let hours = byDay[day]!
            if day < today {
                plan.days.append(day)
                let keys = hours.flatMap(\.1).sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
                plan.cwaPackages.append(Package(path: CWALayout.day(o.country, day), start: day.unixSeconds,
                                                end: day.unixSeconds + 86_400, keys: keys))
            }
            if day >= hourDaysFrom {
                plan.hours[day] = hours.map(\.0)
                for (h, keys) in hours {
                    let start = day.unixSeconds + Int64(h) * 3600
                    plan.cwaPackages.append(Package(path: CWALayout.hour(o.country, day, h), start: start, end: start + 3600, keys: keys))
                }
            }
        }
        for (hour, keys) in emitted {
            let start = hour * 3600, end = start + 3600
            let size = max(1, o.maximumKeysPerFile)
            let batches = stride(from: 0, to: keys.count, by: size).map { Array(keys[$0..<min(keys.count, $0 + size)]) }
            for (i, batch) in batches.enumerated() {
                plan.googlePackages.append(Package(path: GoogleLayout.file(o.region, start: start, end: end, batch: i + 1), start: start, end: end,
                                                   batchNum: Int32(i + 1), batchSize: Int32(batches.count), keys: batch))
            }
        }
        return plan
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

/// Errors of a publish run.
public enum PublishError: Error, CustomStringConvertible {
    case io(path: String, reason: String)
    case busy(path: String)
    case notADirectory(path: String)

    public var description: String {
        switch self {
        case .io(let p, let r): return "\(p): \(r)"
        case .busy(let p): return "\(p): another publish holds the lock"
        case .notADirectory(let p): return "\(p) exists and is not a directory"
        }
    }
}

/// Writes a plan as a static tree in both layouts and swaps it in whole.
///
/// The new tree is built beside the output directory and exchanged with it in one
/// renameat2(RENAME_EXCHANGE), so a reader sees the old tree or the new one, never a
/// half-written index. A package whose export.bin and signers are unchanged keeps its old
/// bytes (ECDSA signatures differ each time), so a run over the same inbox is byte for byte
/// the same tree and the clients' ETags stay valid.
public struct TreeWriter {
    public var options: PublishOptions
    public var signers: [KeyExportSigner]
    /// The app configuration's JSON, published signed (nil: none published).
    public var appConfiguration: Data?

    public init(options: PublishOptions, signers: [KeyExportSigner], appConfiguration: Data?) {
        self.options = options
        self.signers = signers
        self.appConfiguration = appConfiguration
    }

    public struct Summary: Sendable {
        public var files = 0
        public var bytes = 0
        public var reused = 0
    }

    public func publish(_ plan: PublicationPlan, to output: String) throws -> Summary {
        let out = URL(fileURLWithPath: output).standardizedFileURL.path
        let parent = (out as NSString).deletingLastPathComponent
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: out, isDirectory: &isDir), !isDir.boolValue { throw PublishError.notADirectory(path: out) }
        if !fm.fileExists(atPath: parent) {
            do { try fm.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                throw PublishError.io(path: parent, reason: error.localizedDescription)
            }
        }
        // One publisher at a time (a timer run and a manual run).
        let lockPath = out + ".lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw PublishError.io(path: lockPath, reason: String(cString: strerror(errno))) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { throw PublishError.busy(path: lockPath) }

        let name = (out as NSString).lastPathComponent
        let staging = "\(parent)/.\(name).new-\(getpid())"
        try? fm.removeItem(atPath: staging)
        var summary = Summary()
        do {
            try fm.createDirectory(atPath: staging, withIntermediateDirectories: true)
            try write(plan, staging: staging, old: isDir.boolValue ? out : nil, summary: &summary)
        } catch {
            try? fm.removeItem(atPath: staging)
            if let e = error as? PublishError { throw e }
            throw PublishError.io(path: staging, reason: "\(error)")
        }
        if fm.fileExists(atPath: out) {
            if let e = exchangePaths(staging, out) {
                try? fm.removeItem(atPath: staging)
                throw PublishError.io(path: out, reason: "cannot swap in the new tree: \(String(cString: strerror(e)))")
            }
            try? fm.removeItem(atPath: staging) // the old tree now
        } else if rename(staging, out) != 0 {
            let reason = String(cString: strerror(errno))
            try? fm.removeItem(atPath: staging)
            throw PublishError.io(path: out, reason: "cannot move the new tree in: \(reason)")
        }
        return summary
    }

    private func write(_ plan: PublicationPlan, staging: String, old: String?, summary: inout Summary) throws {
        let o = options
        func put(_ relative: String, _ data: Data) throws {
            let path = staging + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o644]) else {
                throw PublishError.io(path: path, reason: "cannot write")
            }
            summary.files += 1
            summary.bytes += data.count
        }
        func package(_ p: PublicationPlan.Package) throws -> Data {
            let header = KeyExportHeader(startTimestamp: UInt64(p.start), endTimestamp: UInt64(p.end), region: p.path.hasPrefix("version/") ? o.country : o.region,
                                         batchNum: p.batchNum, batchSize: p.batchSize, signatureInfos: signers.map(\.info))
            let bin = try KeyExportWriter.exportBin(header: header, keys: p.keys)
            if let old, let previous = try? Data(contentsOf: URL(fileURLWithPath: old + "/" + diskPath(p.path))),
               let file = try? KeyExportFile(parsing: previous), file.exportBin == bin,
               file.signatures.map(\.info) == signers.map(\.info) {
                summary.reused += 1
                return previous
            }
            return try KeyExportWriter.signedZip(exportBin: bin, batchNum: p.batchNum, batchSize: p.batchSize, signers: signers)
        }
        func signedConfig(_ json: Data, at path: String) throws -> Data {
            if let old, let previous = try? Data(contentsOf: URL(fileURLWithPath: old + "/" + path)),
               let (payload, _, infos) = try? KeyExportFile.verifiedPayload(zip: previous, trust: selfTrust), payload == json,
               infos == signers.map(\.info) {
                summary.reused += 1
                return previous
            }
            return try KeyExportWriter.signedZip(exportBin: json, signers: signers)
        }

        // CWA layout: indexes, then packages.
        try put(CWALayout.file(CWALayout.countries()), CWALayout.encodeStrings([o.country]))
        try put(CWALayout.file(CWALayout.days(o.country)), CWALayout.encodeStrings(plan.days.map(\.isoDate)))
        for (day, hours) in plan.hours {
            try put(CWALayout.file(CWALayout.hours(o.country, day)), CWALayout.encodeHours(hours.sorted()))
        }
        for p in plan.cwaPackages { try put(CWALayout.file(p.path), try package(p)) }
        // Google layout.
        for p in plan.googlePackages { try put(p.path, try package(p)) }
        try put(GoogleLayout.index(o.region), GoogleLayout.encodeIndex(plan.googlePackages.map(\.path)))
        if let appConfiguration {
            let cwaPath = CWALayout.file(CWALayout.appConfig(o.country))
            try put(cwaPath, try signedConfig(appConfiguration, at: cwaPath))
            try put(GoogleLayout.appConfig(o.region), try signedConfig(appConfiguration, at: GoogleLayout.appConfig(o.region)))
        }
    }

    private func diskPath(_ path: String) -> String { path.hasPrefix("version/") ? CWALayout.file(path) : path }

    private var selfTrust: KeyExportTrustSet {
        var t = KeyExportTrustSet()
        // The old file must verify under the newest signer's own key; its list of signers is compared separately.
        if let first = signers.first { t.add(keyId: first.info.keyId, version: first.info.keyVersion, key: first.key.publicKey) }
        return t
    }
}
