import DBusCore
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
import HTTPClient
import KeyDistribution
import PlatformSupport
import TrialTime

/// Which layout the server is read in.
public enum ServerLayout: Sendable, Equatable {
    case cwa(country: String)
    case google(region: String)
}

/// The knobs of one run, with the phone apps' values as defaults.
public struct SyncSettings: Sendable {
    public var server: String
    public var layout: ServerLayout
    public var trust: KeyExportTrustSet
    /// The CWA app refuses to go on when the device is more than 2 h off the server's Date.
    public var maxClockSkew: Double = 7_200
    public var perFileTimeout: Double = 30
    public var runTimeout: Double = 600
    public var maxPackageBytes = 16 << 20
    public var maxIndexBytes = 1 << 20
    /// Attempts per file (transport errors, 5xx, 429).
    public var attempts = 4
    public var backoffBase: Double = 1
    public var backoffCap: Double = 60
    /// Free space kept on the state directory's file system after a download.
    public var minFreeBytes: Int64 = 32 << 20
    public var retentionDays = 14
    public var hourDays = 2
    /// New files fetched at most per run; more wait for the next runs. A national server's 14
    /// days are a few hundred files; an index listing hundreds of thousands (a broken or hostile
    /// server) must not turn one run into as many requests.
    public var maxNewFilesPerRun = 1_000
    /// Log lines at most per run for single files (retries, refusals); the rest are counted in
    /// one line, so a hostile index cannot flood the journal.
    public var maxLogLinesPerRun = 200

    public init(server: String, layout: ServerLayout, trust: KeyExportTrustSet) {
        var s = server
        while s.hasSuffix("/") { s.removeLast() }
        self.server = s
        self.layout = layout
        self.trust = trust
    }
}

/// What a download run found.
public struct DownloadOutcome: Sendable {
    public var newPackages = 0
    public var refused = 0
    /// Listed but not fetched this time (server errors, timeouts): the next run tries again.
    public var pending = 0
    public var bytes = 0
    public var requests = 0
    public var configuration: AppConfiguration?
    public var serverDate: Int64?
    /// Indexes that could not be read (the packages they list wait): the run is reported as
    /// not complete, though what it could fetch is provided.
    public var incomplete: [String] = []
    public init() {}
}

/// One run of the app's download half, as the phone apps' clients do it: the server's
/// indexes minus the local cache, every file verified before it is kept, the clock checked
/// against the server's Date, bounded sizes and time, retries with backoff and jitter.
public final class SyncRun {
    public let settings: SyncSettings
    public let store: AppStateStore
    public var state: AppState
    private let http: HTTPSession
    /// Real time: the run's deadline, retries, the server's Date.
    private let now: () -> Double
    /// The trial's time for days and the state's times (`trialClock`), else the real time.
    private let trialClock: TrialClock?
    private func calendarNow() -> Double { trialClock?.trialTime(real: now()) ?? now() }
    private let sleep: (Double) -> Void
    private let log: (String) -> Void
    private var deadline: Double = 0
    private var clockChecked = false
    private var outcome = DownloadOutcome()
    private var logged = 0, unlogged = 0, newFiles = 0, overCap = 0

    /// A line about one file or request: at most `maxLogLinesPerRun` a run, the rest counted.
    private func say(_ line: String) {
        if logged < settings.maxLogLinesPerRun { log(line); logged += 1 } else { unlogged += 1 }
    }

    /// Whether another new file may be fetched in this run (counts the ones that may not).
    private func mayFetchNewFile() -> Bool {
        if newFiles < settings.maxNewFilesPerRun { newFiles += 1; return true }
        overCap += 1
        outcome.pending += 1
        return false
    }

    /// `now` and `sleep` are injected so the backoff and the clock check run on any clock. With
    /// a rehearsal's `trialClock` the days (today, retention, the daily provide count, a refused
    /// package's daily retry) and the times kept in the state are the trial's; the run's
    /// deadline, its retries and the check of the server's Date stay on the real `now`.
    public init(settings: SyncSettings, store: AppStateStore, http: HTTPSession,
                now: @escaping () -> Double = { Date().timeIntervalSince1970 }, trialClock: TrialClock? = nil,
                sleep: @escaping (Double) -> Void = { s in if s > 0 { usleep(UInt32(min(s, 4_000) * 1_000_000)) } },
                log: @escaping (String) -> Void) throws {
        self.settings = settings
        self.store = store
        self.state = try store.load()
        self.http = http
        self.now = now
        self.trialClock = trialClock
        self.sleep = sleep
        self.log = log
    }

    // MARK: HTTP with retries

    /// GET with the run's rules. Returns nil when the file is left for the next run.
    private func fetch(_ url: String, etag: String?, maxBytes: Int) throws -> HTTPResponse? {
        var attempt = 0
        while true {
            let remaining = deadline - now()
            guard remaining > 0 else { say("\(url): the run's time is up; left for the next run"); return nil }
            attempt += 1
            outcome.requests += 1
            var retryAfter: Double? = nil
            do {
                let r = try http.get(url, etag: etag, maxBytes: maxBytes, timeout: min(settings.perFileTimeout, remaining))
                try checkClock(r)
                if r.status == 429 || r.status >= 500 {
                    say("\(url): HTTP \(r.status)\(r.retryAfter.map { ", Retry-After \($0) s" } ?? "")")
                    retryAfter = r.retryAfter
                } else {
                    return r
                }
            } catch let e as HTTPError {
                if case .tooLarge = e { throw e }
                say("\(e)")
            }
            guard attempt < settings.attempts else { say("\(url): \(attempt) attempts failed; left for the next run"); return nil }
            // Exponential backoff with jitter (half to all of the step), at least what the server asked.
            let step = min(settings.backoffCap, settings.backoffBase * pow(2, Double(attempt - 1)))
            let wait = max(retryAfter ?? 0, step * Double.random(in: 0.5...1.0))
            guard now() + wait < deadline else { say("\(url): retry would pass the run's time; left for the next run"); return nil }
            sleep(wait)
        }
    }

    private func checkClock(_ r: HTTPResponse) throws {
        guard !clockChecked, let date = r.date else { return }
        clockChecked = true
        outcome.serverDate = date
        let skew = now() - Double(date)
        if abs(skew) > settings.maxClockSkew {
            throw AppError.clock("the device clock is \(Int(skew.rounded())) s off the server's Date (more than \(Int(settings.maxClockSkew)) s): "
                                 + "nothing downloaded; fix the clock (timesyncd or chrony)")
        }
    }

    /// An index or the configuration: conditional GET, the body kept for a 304.
    private func fetchIndex(_ url: String) throws -> Data? {
        let cached = store.cachePath("index-" + SHA256.hash(Data(url.utf8)).hexString.prefix(32))
        let etag = FileManager.default.fileExists(atPath: cached) ? state.indexETags[url] : nil
        guard let r = try fetch(url, etag: etag, maxBytes: settings.maxIndexBytes) else { return nil }
        if r.status == 304, let body = try? SmallFile.read(cached, limit: settings.maxIndexBytes) { return Data(body) }
        guard r.status == 200 else {
            if r.status != 404 { say("\(url): HTTP \(r.status)") }
            return r.status == 404 ? Data() : nil
        }
        try checkSpace(r.body.count)
        if FileManager.default.createFile(atPath: cached, contents: r.body) { state.indexETags[url] = r.etag }
        outcome.bytes += r.body.count
        return r.body
    }

    /// A file refused at download: counted in the run and in the state's total.
    private func countRefusal() {
        outcome.refused += 1
        state.refusedDownloadsTotal = (state.refusedDownloadsTotal ?? 0) + 1
    }

    private func checkSpace(_ bytes: Int) throws {
        var fs = statvfs()
        guard statvfs(store.cacheDirectory, &fs) == 0 else { return }
        let free = Int64(fs.f_bavail) * Int64(fs.f_frsize)
        if free - Int64(bytes) < settings.minFreeBytes {
            throw AppError.space("\(store.cacheDirectory): \(free) bytes free, a download of \(bytes) would leave less than \(settings.minFreeBytes)")
        }
    }

    // MARK: The run

    /// Downloads what the server has and the cache does not. Throws only for what stops the
    /// whole run (the clock, free space, the state); a bad file is refused and the run goes on.
    public func download() throws -> DownloadOutcome {
        outcome = DownloadOutcome()
        deadline = now() + settings.runTimeout
        clockChecked = false
        logged = 0; unlogged = 0; newFiles = 0; overCap = 0
        defer {
            if overCap > 0 { log("\(overCap) more new files listed wait for the next runs (at most \(settings.maxNewFilesPerRun) a run)") }
            if unlogged > 0 { log("\(unlogged) more lines about single files were not printed (at most \(settings.maxLogLinesPerRun) a run)") }
        }
        let configuration = try loadConfiguration()
        outcome.configuration = configuration
        if let revoked = configuration?.revokedPackages, !revoked.isEmpty {
            for (id, p) in state.packages where revoked.contains(p.sha256) {
                log("\(p.url): revoked by the configuration; dropped and checked again")
                remove(id)
            }
        }
        switch settings.layout {
        case .cwa(let country): try downloadCWA(country, revoked: configuration?.revokedPackages ?? [])
        case .google(let region): try downloadGoogle(region, revoked: configuration?.revokedPackages ?? [])
        }
        try store.save(state)
        return outcome
    }

    private func url(_ path: String) -> String { settings.server + "/" + path }

    private func loadConfiguration() throws -> AppConfiguration? {
        let path: String
        switch settings.layout {
        case .cwa(let c): path = CWALayout.appConfig(c)
        case .google(let r): path = GoogleLayout.appConfig(r)
        }
        let good = store.cachePath("app-config.zip")
        let last = (try? SmallFile.read(good, limit: AppConfiguration.maxSize)).flatMap { try? AppConfiguration(signed: Data($0), trust: settings.trust) }
        guard let body = try fetchIndex(url(path)) else { return last }
        if body.isEmpty { log("\(url(path)): no app configuration published; risk not computed"); return last }
        do {
            let config = try accept(configuration: body)
            try store.write(body, to: "cache/app-config.zip")
            return config
        } catch {
            countRefusal()
            log("refused \(url(path)): \(error); the last good configuration stays")
            return last
        }
    }

    /// A fetched configuration checked: its signature against the trust list, and its version
    /// against the highest accepted before under any key it is signed with. Versions only move
    /// forward per key: an older one, validly signed, would bring back what a later one
    /// revoked (a configuration signed by the old and the new key while rotating sets both).
    /// Per key, so that a new signing key may start from its own first version.
    public func accept(configuration body: Data) throws -> AppConfiguration {
        let (config, signers) = try AppConfiguration.verified(signed: body, trust: settings.trust)
        var versions = state.configurationVersions ?? [:]
        for key in signers {
            if let highest = versions[key], config.version < highest {
                throw AppError.configuration("version \(config.version) is older than version \(highest), accepted before under key \(key)")
            }
        }
        for key in signers { versions[key] = max(versions[key] ?? 0, config.version) }
        state.configurationVersions = versions
        return config
    }

    private func downloadCWA(_ country: String, revoked: Set<String>) throws {
        let now = calendarNow()
        let today = UTCDay(unixSeconds: now)
        let oldest = today.advanced(by: -settings.retentionDays)
        // Without the layout's first index nothing can be compared: the run failed (the next one catches up).
        guard let countriesBody = try fetchIndex(url(CWALayout.countries())) else {
            throw AppError.server("\(url(CWALayout.countries())): no answer; nothing downloaded, the next run catches up")
        }
        let countries = try CWALayout.decodeStrings(countriesBody, url: url(CWALayout.countries()))
        guard countries.contains(country) else { throw AppError.server("\(url(CWALayout.countries())): country \(country) is not served (\(countries.joined(separator: ", ")))") }
        // Without the days index the hours of the last days still come (what can be fetched is provided).
        let daysBody: Data
        if let body = try fetchIndex(url(CWALayout.days(country))) { daysBody = body } else {
            outcome.pending += 1
            outcome.incomplete.append("\(url(CWALayout.days(country))): the days index could not be read; its packages wait for the next run")
            daysBody = Data()
        }
        let days = daysBody.isEmpty ? [] : try CWALayout.decodeStrings(daysBody, url: url(CWALayout.days(country))).compactMap { text -> UTCDay? in
            guard let d = UTCDay(isoDate: text) else { log("\(url(CWALayout.days(country))): '\(text)' is not a date; skipped"); return nil }
            return d
        }
        for day in days.sorted() where day >= oldest && day < today {
            let id = "cwa/\(country)/\(day.isoDate)"
            guard state.packages[id] == nil, mayFetchNewFile() else { continue }
            if try download(id: id, path: CWALayout.day(country, day), kind: .day, day: day, hour: nil,
                            window: (day.unixSeconds, day.unixSeconds + 86_400), revoked: revoked) {
                replaceHours(of: day, by: id)
            }
        }
        let listed = Set(days)
        for back in stride(from: settings.hourDays - 1, through: 0, by: -1) {
            let day = today.advanced(by: -back)
            guard !listed.contains(day), day >= oldest else { continue }
            guard let body = try fetchIndex(url(CWALayout.hours(country, day))) else {
                outcome.pending += 1
                outcome.incomplete.append("\(url(CWALayout.hours(country, day))): the hours index could not be read; its packages wait for the next run")
                continue
            }
            if body.isEmpty { continue } // no hour of that day published yet
            for hour in try CWALayout.decodeHours(body, url: url(CWALayout.hours(country, day))).sorted() {
                let id = "cwa/\(country)/\(day.isoDate)/\(hour)"
                guard state.packages[id] == nil, mayFetchNewFile() else { continue }
                let start = day.unixSeconds + Int64(hour) * 3600
                _ = try download(id: id, path: CWALayout.hour(country, day, hour), kind: .hour, day: day, hour: hour,
                                 window: (start, start + 3600), revoked: revoked)
            }
        }
        // Retention: nothing older than the keys' 14 days is kept.
        for (id, p) in state.packages where p.day.flatMap(UTCDay.init(isoDate:)).map({ $0 < oldest }) ?? false { remove(id) }
    }

    private func downloadGoogle(_ region: String, revoked: Set<String>) throws {
        let indexURL = url(GoogleLayout.index(region))
        guard let body = try fetchIndex(indexURL) else {
            throw AppError.server("\(indexURL): no answer; nothing downloaded, the next run catches up")
        }
        let paths = try GoogleLayout.decodeIndex(body, url: indexURL)
        for path in paths {
            let id = "google/" + path
            guard state.packages[id] == nil, mayFetchNewFile() else { continue }
            _ = try download(id: id, path: path, kind: .file, day: nil, hour: nil, window: nil, revoked: revoked)
        }
        // Files the server no longer lists are past its retention.
        let listed = Set(paths.map { "google/" + $0 })
        let cutoff = Int64(calendarNow()) - Int64(settings.retentionDays + 1) * 86_400
        for (id, p) in state.packages where !listed.contains(id) && p.fetchedAt < cutoff { remove(id) }
    }

    /// Fetches, verifies and keeps one package. true when kept.
    private func download(id: String, path: String, kind: CachedPackage.Kind, day: UTCDay?, hour: Int?,
                          window: (Int64, Int64)?, revoked: Set<String>) throws -> Bool {
        let u = url(path)
        let r: HTTPResponse
        do {
            guard let got = try fetch(u, etag: nil, maxBytes: settings.maxPackageBytes) else { outcome.pending += 1; return false }
            r = got
        } catch let e as HTTPError {
            countRefusal()
            say("refused \(u): \(e)")
            return false
        }
        guard r.status == 200 else {
            outcome.pending += 1
            say("\(u): listed in the index but HTTP \(r.status); left for the next run")
            return false
        }
        outcome.bytes += r.body.count
        let sha = SHA256.hash(r.body).hexString
        guard !revoked.contains(sha) else {
            countRefusal()
            say("refused \(u): revoked by the configuration (SHA-256 \(sha))")
            return false
        }
        let file: KeyExportFile
        do {
            file = try KeyExportFile(parsing: r.body, limits: KeyExportLimits(maxFileSize: settings.maxPackageBytes, maxExportSize: settings.maxPackageBytes))
            try file.requireTrustedSignature(settings.trust)
            if let (start, end) = window, file.header.startTimestamp != UInt64(start) || file.header.endTimestamp != UInt64(end) {
                throw AppError.server("its header covers \(file.header.startTimestamp)-\(file.header.endTimestamp), the index says \(start)-\(end)")
            }
        } catch {
            countRefusal()
            say("refused \(u): \(error)")
            return false
        }
        try checkSpace(r.body.count)
        let name = sha + ".zip"
        try store.write(r.body, to: "cache/" + name)
        state.packages[id] = CachedPackage(id: id, url: u, kind: kind, day: day?.isoDate, hour: hour, sha256: sha, etag: r.etag,
                                           bytes: r.body.count, keys: file.keyCount + file.revisedKeyCount, fetchedAt: Int64(calendarNow()),
                                           file: name, providedAt: nil, exportBytes: file.exportBin.count)
        outcome.newPackages += 1
        // Saved after each file: a run cut short keeps what it has.
        try store.save(state)
        return true
    }

    /// A day package replaces the day's hour packages. Hours gaend already has need no new
    /// call for the day when every key of the day was among them.
    private func replaceHours(of day: UTCDay, by dayID: String) {
        let hours = state.packages.filter { $0.value.kind == .hour && $0.value.day == day.isoDate }
        guard !hours.isEmpty, var dayPackage = state.packages[dayID] else { return }
        let provided = hours.values.filter(\.provided)
        if !provided.isEmpty, let dayKeys = keys(of: dayPackage) {
            let had = provided.reduce(into: Set<Data>()) { set, p in set.formUnion(keys(of: p) ?? []) }
            if dayKeys.isSubset(of: had) {
                dayPackage.coveredByProvided = true
                state.packages[dayID] = dayPackage
            }
        }
        for id in hours.keys { remove(id) }
    }

    private func keys(of p: CachedPackage) -> Set<Data>? {
        guard let data = (try? SmallFile.read(store.cachePath(p.file), limit: settings.maxPackageBytes)).map({ Data($0) }),
              let file = try? KeyExportFile(parsing: data) else { return nil }
        return Set(file.keyBatches().flatMap { $0 }.map { $0.key.bytes + $0.rollingStartIntervalNumber.littleEndianBytes })
    }

    private func remove(_ id: String) {
        guard let p = state.packages.removeValue(forKey: id) else { return }
        if !state.packages.values.contains(where: { $0.file == p.file }) { try? FileManager.default.removeItem(atPath: store.cachePath(p.file)) }
    }

    // MARK: Providing

    /// The packages gaend does not have yet and has not refused, oldest first.
    public var waiting: [CachedPackage] {
        state.packages.values.filter { !$0.provided && !$0.refused }.sorted(by: Self.oldestFirst)
    }

    static func oldestFirst(_ a: CachedPackage, _ b: CachedPackage) -> Bool {
        (a.day ?? "", a.hour ?? -1, a.id) < (b.day ?? "", b.hour ?? -1, b.id)
    }

    /// A refused package is tried again alone at most this many times in all (once a UTC day):
    /// a refusal against gaend's clock (a key "after tomorrow" on a node whose clock was
    /// behind) can pass later; one in its content never does, and then it stays refused.
    public static let maxRefusals = 3

    /// The refused packages due for another try: refused on an earlier UTC day, fewer than
    /// `maxRefusals` times.
    public var dueForRetry: [CachedPackage] {
        let today = UTCDay(unixSeconds: calendarNow())
        return state.packages.values.filter { p in
            guard p.refused, let at = p.refusedAt else { return false }
            return (p.refusals ?? 1) < Self.maxRefusals && UTCDay(unixSeconds: Double(at)) < today
        }.sorted(by: Self.oldestFirst)
    }

    /// ProvideDiagnosisKeys calls the app may still make today: gaend's own count, and the
    /// app's (`perDay` a UTC day), whichever is lower.
    public func callsLeft(gaendRemaining: UInt32, perDay: Int) -> Int {
        let today = Int64(UTCDay(unixSeconds: calendarNow()).unixSeconds)
        state.provideCalls.removeAll { $0 < today }
        return max(0, min(Int(min(gaendRemaining, UInt32(Int32.max))), perDay - state.provideCalls.count))
    }

    /// gaend's limits on one call: 16 descriptors, and 64 MiB read and 64 MiB of export.bin.
    public struct CallLimits: Sendable {
        public var files = 16
        public var bytes = 64 << 20
        public init() {}
    }

    /// What gaend's refusal of a call says about its files.
    enum Refusal: Equatable {
        /// InvalidKeyFile or UntrustedKeyFile naming `file N` (index from 0): that file.
        case file(Int, String)
        /// LimitExceeded for the call's files (too many, too many bytes): smaller calls pass.
        case tooLarge(String)
        /// Anything else (Busy, RateLimited, the budget of calls in flight, the bus, the
        /// store): nothing is wrong with the files; they wait for the next run.
        case transient(String)
    }

    static func refusal(of error: any Error, files: Int) -> Refusal {
        guard let e = error as? DBusNamedError else { return .transient("\(error)") }
        let text = "\(e.name): \(e.message)"
        switch e.name {
        case GaendInterfaces.ErrorName.invalidKeyFile, GaendInterfaces.ErrorName.untrustedKeyFile:
            // "file N: reason", N counted from 1 in the call's order.
            if e.message.hasPrefix("file "), let colon = e.message.firstIndex(of: ":"),
               let n = Int(e.message[e.message.index(e.message.startIndex, offsetBy: 5)..<colon]), (1...files).contains(n) {
                return .file(n - 1, text)
            }
            // Not named: found by halving.
            return .tooLarge(text)
        case GaendInterfaces.ErrorName.limitExceeded:
            // "already holds ... in flight": other callers' bytes, not these files'.
            return e.message.contains("in flight") ? .transient(text) : .tooLarge(text)
        default:
            return .transient(text)
        }
    }

    /// One provide pass's result.
    public struct ProvideOutcome: Sendable, Equatable {
        /// Packages gaend accepted.
        public var provided = 0
        /// Packages gaend refused in this pass (each logged with its URL and reason).
        public var refused = 0
        /// Calls gaend accepted.
        public var calls = 0
        /// Set when a call failed for a reason not in its files: the rest wait for the next run.
        public var stopped: String?
    }

    /// The export.bin size of a held package (recorded at download; read from the cached file
    /// for a state written before).
    private func exportBytes(_ p: CachedPackage) -> Int {
        if let n = p.exportBytes { return n }
        guard let data = (try? SmallFile.read(store.cachePath(p.file), limit: settings.maxPackageBytes)).map({ Data($0) }),
              let n = try? KeyExportFile.declaredExportSize(data) else { return p.bytes }
        state.packages[p.id]?.exportBytes = n
        return n
    }

    /// The waiting packages in calls within gaend's limits, oldest first: at most `files`
    /// files and `bytes` bytes read and of export.bin, so LimitExceeded is avoided up front.
    func batches(_ packages: [CachedPackage], limits: CallLimits) -> [[CachedPackage]] {
        var out: [[CachedPackage]] = []
        var current: [CachedPackage] = [], read = 0, inflated = 0
        for p in packages {
            let e = exportBytes(p)
            if !current.isEmpty && (current.count == limits.files || read + p.bytes > limits.bytes || inflated + e > limits.bytes) {
                out.append(current)
                current = []; read = 0; inflated = 0
            }
            current.append(p); read += p.bytes; inflated += e
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// Hands the waiting packages to `provide` in calls within gaend's limits and `calls`
    /// accepted calls; each package provided is remembered, so none is provided twice.
    /// A call gaend refuses for one of its files: that file (named by gaend, else found by
    /// halving) is refused, counted and logged with its URL and reason, and the others go on
    /// in the same run; a call refused for another reason stops (the rest wait). A refused
    /// call costs none of gaend's daily calls (it counts only accepted ones). Refused packages
    /// due for a retry go last, each alone.
    public func provide(calls: Int, limits: CallLimits = CallLimits(),
                        _ provide: ([String]) async throws -> Void) async throws -> ProvideOutcome {
        var outcome = ProvideOutcome()
        var queue = batches(waiting, limits: limits) + dueForRetry.map { [$0] }
        while !queue.isEmpty, outcome.calls < calls {
            let batch = queue.removeFirst()
            do {
                try await provide(batch.map { store.cachePath($0.file) })
            } catch {
                switch Self.refusal(of: error, files: batch.count) {
                case .file(let n, let reason) where batch.count == 1:
                    try refuse(batch[n], reason, &outcome)
                case .file(let n, _):
                    // The named file alone, after the others: gaend's per-day key count spans
                    // the call, so the file it names may pass on its own.
                    var rest = batch
                    let suspect = rest.remove(at: n)
                    queue.insert(contentsOf: [rest, [suspect]], at: 0)
                case .tooLarge(let reason):
                    if batch.count == 1 {
                        try refuse(batch[0], reason, &outcome)
                    } else {
                        queue.insert(contentsOf: [Array(batch.prefix(batch.count / 2)), Array(batch.dropFirst(batch.count / 2))], at: 0)
                    }
                case .transient(let reason):
                    outcome.stopped = "ProvideDiagnosisKeys: \(reason)"
                    log("ProvideDiagnosisKeys: \(reason); \(waiting.count) packages wait for the next run")
                    try store.save(state)
                    return outcome
                }
                try store.save(state)
                continue
            }
            let t = Int64(calendarNow())
            state.provideCalls.append(t)
            state.lastProvidedAt = t
            for p in batch {
                state.packages[p.id]?.providedAt = t
                if p.refused { log("\(p.url): provided on its own after \(p.refusals ?? 1) refusals") }
            }
            outcome.calls += 1
            outcome.provided += batch.count
            try store.save(state)
        }
        return outcome
    }

    private func refuse(_ p: CachedPackage, _ reason: String, _ outcome: inout ProvideOutcome) throws {
        guard var held = state.packages[p.id] else { return }
        held.refusedAt = Int64(calendarNow())
        held.refusal = reason
        held.refusals = (held.refusals ?? 0) + 1
        state.packages[p.id] = held
        state.refusedByGaendTotal = (state.refusedByGaendTotal ?? 0) + 1
        outcome.refused += 1
        let again = held.refusals! < Self.maxRefusals ? "tried alone again tomorrow" : "not tried again"
        log("refused by gaend \(p.url): \(reason) (refusal \(held.refusals!) of \(Self.maxRefusals); \(again))")
    }

    /// Records the run (and saves the state).
    public func finish(_ record: SyncRecord) throws {
        state.lastSync = record
        try store.save(state)
    }

    /// Records a risk result; true when it turned high (announce it).
    @discardableResult
    public func record(risk: RiskRecord) throws -> Bool {
        let before = state.risk?.level
        state.risk = risk
        let turnedHigh = risk.level == "high" && before != "high"
        if risk.level != before {
            state.history.append(risk)
            if state.history.count > AppState.historyLimit { state.history.removeFirst(state.history.count - AppState.historyLimit) }
        }
        if risk.level == "high" { state.highRiskSince = state.highRiskSince ?? risk.computedAt } else { state.highRiskSince = nil }
        try store.save(state)
        return turnedHigh
    }
}
