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
    /// Keys of one day in all (CWA layout: a day's package, whose hours' packages hold parts
    /// of the same keys). The CWA layout has one file per day and hour, so a day cannot be
    /// split: keys beyond this wait for the next hour with room, on the next day.
    public var maximumKeysPerDay: Int = PackageLimits.maxKeysPerPackage

    public init(country: String, region: String) {
        self.country = country
        self.region = region
    }
}

/// What every package must stay within, so that the app downloads it and gaend takes it in a
/// call with up to 15 others, whatever the boards upload.
public enum PackageLimits {
    /// The app's largest download (`gaenctl app sync --max-package-bytes`, 16 MiB).
    public static let appMaxPackageBytes = 16 << 20
    /// gaend's bytes of export.bin in one ProvideDiagnosisKeys call (64 MiB, `ProvideLimits`)
    /// and the files an app puts in one call (16): a package within their quotient never makes
    /// a full call too large.
    public static let maxExportBytes = (64 << 20) / 16
    /// The largest key entry a publisher writes with values `KeyRules` accepts: tag and length
    /// (2), key_data (18), transmission risk (2), rolling start (1 + up to 5), rolling period
    /// (1 + 2), report type (2), days since onset (2).
    public static let maxEncodedKeyBytes = 35
    /// Keys per package: within `maxExportBytes` (64 KiB kept for the header and signature
    /// infos) and within what gaend accepts in one file (`KeyAcceptanceLimits.maxKeysPerFile`).
    public static let maxKeysPerPackage = min(KeyAcceptanceLimits.default.maxKeysPerFile, (maxExportBytes - (64 << 10)) / maxEncodedKeyBytes)
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
    /// Keys that went to a later hour because their day's packages were full (`maximumKeysPerDay`).
    public var keysDeferred = 0

    /// `sealed`: the hours an earlier run published (before `sealedBefore`, an hour number),
    /// with their keys as published (`PublishedTree.sealedHours`). They are published again
    /// exactly so, whatever the inbox holds now (a board may delete or rewrite its files), and
    /// new keys go only into later hours: a published package never changes and no key moves.
    public static func plan(_ submitted: [SubmittedKey], now: Int64, options o: PublishOptions,
                            sealed: [Int64: [DiagnosisKey]] = [:], sealedBefore: Int64 = .min) -> PublicationPlan {
        var plan = PublicationPlan()
        let currentHour = floorDiv(now, 3600)
        let today = UTCDay(Int32(floorDiv(now, 86_400)))
        let firstDay = today.advanced(by: -o.retentionDays)
        let firstHour = Int64(firstDay.rawValue) * 24
        func id(_ k: DiagnosisKey) -> Data { k.key.bytes + k.rollingStartIntervalNumber.littleEndianBytes }
        let sealedIDs = Set(sealed.values.joined().map(id))

        // A key submitted twice (a board uploading again) counts once, at its first submission.
        var byKey: [Data: SubmittedKey] = [:]
        for s in submitted {
            let id = id(s.key)
            if sealedIDs.contains(id) { continue }
            if let seen = byKey[id], seen.submittedAt <= s.submittedAt { continue }
            byKey[id] = s
        }
        var buckets: [Int64: [SubmittedKey]] = [:]
        for s in byKey.values {
            buckets[max(floorDiv(s.availableAt(embargo: o.embargo), 3600), sealedBefore), default: []].append(s)
        }

        // Shift thin hours forward; only complete hours are published. Every key takes part,
        // also those whose hour has left the retention: were they dropped first, the hours
        // they were shifted into would change (and keys move) as the retention moves on.
        // Earliest available first, then by key bytes: the same keys give the same packages.
        func order(_ a: SubmittedKey, _ b: SubmittedKey) -> Bool {
            let (ta, tb) = (a.availableAt(embargo: o.embargo), b.availableAt(embargo: o.embargo))
            return ta != tb ? ta < tb : a.key.key.bytes.lexicographicallyPrecedes(b.key.key.bytes)
        }
        var deferred: Set<Data> = []
        var emitted: [(hour: Int64, keys: [DiagnosisKey])] = []
        var pending: [SubmittedKey] = []
        var perDay: [Int64: Int] = [:]
        let minimum = max(1, o.minimumKeysPerPackage), dayCap = max(1, o.maximumKeysPerDay)
        for (hour, keys) in sealed.sorted(by: { $0.key < $1.key }) where hour < min(sealedBefore, currentHour) {
            perDay[floorDiv(hour, 24), default: 0] += keys.count
            if hour < firstHour { plan.keysExpired += keys.count; continue }
            emitted.append((hour, keys.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }))
        }
        let hours = buckets.keys.sorted()
        var next = 0
        var hour = hours.first ?? currentHour
        while hour < currentHour {
            while next < hours.count, hours[next] <= hour { pending += buckets[hours[next]]!.sorted(by: order); next += 1 }
            let day = floorDiv(hour, 24)
            let room = dayCap - perDay[day, default: 0]
            // The day's packages are full: the rest waits for the first hour of the next day
            // (or an earlier hour with new keys, which also finds the day full).
            let full = pending.count >= minimum && pending.count > room
            let following = next < hours.count ? hours[next] : currentHour
            defer { hour = full ? min(following, (day + 1) * 24) : following }
            guard pending.count >= minimum else { continue }
            let take = pending.count <= room ? pending.count : (room >= minimum ? room : 0)
            for k in pending.dropFirst(take) { deferred.insert(k.key.key.bytes + k.key.rollingStartIntervalNumber.littleEndianBytes) }
            guard take > 0 else { continue }
            let keys = pending.prefix(take).map(\.key).sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
            pending.removeFirst(take)
            perDay[day, default: 0] += take
            if hour < firstHour { plan.keysExpired += take; continue }
            emitted.append((hour, keys))
        }
        plan.keysWaiting = pending.count + buckets.filter { $0.key >= currentHour }.reduce(0) { $0 + $1.value.count }
        plan.keysPublished = emitted.reduce(0) { $0 + $1.keys.count }
        plan.keysDeferred = deferred.count

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

    public static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
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
        /// Half-built trees of killed runs removed.
        public var staleRemoved = 0
    }

    public func publish(_ plan: PublicationPlan, to output: String) throws -> Summary {
        let out = URL(fileURLWithPath: output).standardizedFileURL.path
        let parent = PathName.directory(of: out)
        let fm = FileManager.default
        var isDir = false
        if fm.fileExists(atPath: out, isDirectory: &isDir), !isDir { throw PublishError.notADirectory(path: out) }
        if !fm.fileExists(atPath: parent) {
            do { try fm.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                throw PublishError.io(path: parent, reason: SystemCallError.reason(of: error))
            }
        }
        // One publisher at a time (a timer run and a manual run).
        let lockPath = out + ".lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw PublishError.io(path: lockPath, reason: SystemCallError.lastReason) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { throw PublishError.busy(path: lockPath) }

        let name = PathName.name(of: out)
        let staging = "\(parent)/.\(name).new-\(getpid())"
        var summary = Summary()
        // A publisher killed mid-run left its half-built tree; with the lock held, no other
        // run is building one, so every staging tree here is such a leftover.
        for entry in (try? fm.contentsOfDirectory(atPath: parent)) ?? [] where entry.hasPrefix(".\(name).new-") {
            if (try? fm.removeItem(atPath: "\(parent)/\(entry)")) != nil { summary.staleRemoved += 1 }
        }
        do {
            try fm.createDirectory(atPath: staging, withIntermediateDirectories: true)
            try write(plan, staging: staging, old: isDir ? out : nil, summary: &summary)
        } catch {
            try? fm.removeItem(atPath: staging)
            if let e = error as? PublishError { throw e }
            throw PublishError.io(path: staging, reason: SystemCallError.reason(of: error))
        }
        if fm.fileExists(atPath: out) {
            if let e = exchangePaths(staging, out) {
                try? fm.removeItem(atPath: staging)
                throw PublishError.io(path: out, reason: "cannot swap in the new tree: \(SystemCallError.reason(code: e))")
            }
            try? fm.removeItem(atPath: staging) // the old tree now
        } else if rename(staging, out) != 0 {
            let reason = SystemCallError.lastReason
            try? fm.removeItem(atPath: staging)
            throw PublishError.io(path: out, reason: "cannot move the new tree in: \(reason)")
        }
        return summary
    }

    private func write(_ plan: PublicationPlan, staging: String, old: String?, summary: inout Summary) throws {
        let o = options
        func put(_ relative: String, _ data: Data) throws {
            let path = staging + "/" + relative
            try FileManager.default.createDirectory(atPath: PathName.directory(of: path), withIntermediateDirectories: true)
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

/// What an earlier run published, read back from its tree.
public enum PublishedTree {
    /// The keys of every hour before `before` (an hour number) that the tree at `output`
    /// publishes in the Google layout of `region` (one file per hour and batch, named by its
    /// window, so every published hour is there while in retention). A file that cannot be
    /// read is named in `problems`; its hour is then not sealed.
    public static func sealedHours(output: String, region: String, before: Int64) -> (hours: [Int64: [DiagnosisKey]], problems: [String]) {
        let root = URL(fileURLWithPath: output).standardizedFileURL.path
        guard let index = try? Data(contentsOf: URL(fileURLWithPath: root + "/" + GoogleLayout.index(region))),
              let paths = try? GoogleLayout.decodeIndex(index, url: GoogleLayout.index(region)) else { return ([:], []) }
        var hours: [Int64: [DiagnosisKey]] = [:], problems: [String] = []
        for path in paths {
            let name = PathName.name(of: path)
            let parts = name.dropLast(4).split(separator: "-")
            guard path.hasPrefix(region + "/"), name.hasSuffix(".zip"), parts.count == 3, let start = Int64(parts[0]), start % 3600 == 0 else { continue }
            let hour = start / 3600
            guard hour < before else { continue }
            do {
                let file = try KeyExportFile(parsing: Data(contentsOf: URL(fileURLWithPath: root + "/" + path)))
                hours[hour, default: []] += file.keyBatches().flatMap { $0 }
            } catch {
                problems.append("\(path): \(error)")
            }
        }
        return (hours, problems)
    }
}
