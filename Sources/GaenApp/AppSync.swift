import ENProtocol
import Foundation
import HTTPClient
import KeyDistribution

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
    private let now: () -> Double
    private let sleep: (Double) -> Void
    private let log: (String) -> Void
    private var deadline: Double = 0
    private var clockChecked = false
    private var outcome = DownloadOutcome()

    /// `now` and `sleep` are injected so the backoff and the clock check run on any clock.
    public init(settings: SyncSettings, store: AppStateStore, http: HTTPSession,
                now: @escaping () -> Double = { Date().timeIntervalSince1970 },
                sleep: @escaping (Double) -> Void = { s in if s > 0 { usleep(UInt32(min(s, 4_000) * 1_000_000)) } },
                log: @escaping (String) -> Void) throws {
        self.settings = settings
        self.store = store
        self.state = try store.load()
        self.http = http
        self.now = now
        self.sleep = sleep
        self.log = log
    }

    // MARK: HTTP with retries

    /// GET with the run's rules. Returns nil when the file is left for the next run.
    private func fetch(_ url: String, etag: String?, maxBytes: Int) throws -> HTTPResponse? {
        var attempt = 0
        while true {
            let remaining = deadline - now()
            guard remaining > 0 else { log("\(url): the run's time is up; left for the next run"); return nil }
            attempt += 1
            outcome.requests += 1
            var retryAfter: Double? = nil
            do {
                let r = try http.get(url, etag: etag, maxBytes: maxBytes, timeout: min(settings.perFileTimeout, remaining))
                try checkClock(r)
                if r.status == 429 || r.status >= 500 {
                    log("\(url): HTTP \(r.status)\(r.retryAfter.map { ", Retry-After \($0) s" } ?? "")")
                    retryAfter = r.retryAfter
                } else {
                    return r
                }
            } catch let e as HTTPError {
                if case .tooLarge = e { throw e }
                log("\(e)")
            }
            guard attempt < settings.attempts else { log("\(url): \(attempt) attempts failed; left for the next run"); return nil }
            // Exponential backoff with jitter (half to all of the step), at least what the server asked.
            let step = min(settings.backoffCap, settings.backoffBase * pow(2, Double(attempt - 1)))
            let wait = max(retryAfter ?? 0, step * Double.random(in: 0.5...1.0))
            guard now() + wait < deadline else { log("\(url): retry would pass the run's time; left for the next run"); return nil }
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
        if r.status == 304, let body = FileManager.default.contents(atPath: cached) { return body }
        guard r.status == 200 else {
            if r.status != 404 { log("\(url): HTTP \(r.status)") }
            return r.status == 404 ? Data() : nil
        }
        try checkSpace(r.body.count)
        if FileManager.default.createFile(atPath: cached, contents: r.body) { state.indexETags[url] = r.etag }
        outcome.bytes += r.body.count
        return r.body
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
        let last = FileManager.default.contents(atPath: good).flatMap { try? AppConfiguration(signed: $0, trust: settings.trust) }
        guard let body = try fetchIndex(url(path)) else { return last }
        if body.isEmpty { log("\(url(path)): no app configuration published; risk not computed"); return last }
        do {
            let config = try AppConfiguration(signed: body, trust: settings.trust)
            try store.write(body, to: "cache/app-config.zip")
            return config
        } catch {
            outcome.refused += 1
            log("refused \(url(path)): \(error); the last good configuration stays")
            return last
        }
    }

    private func downloadCWA(_ country: String, revoked: Set<String>) throws {
        let now = self.now()
        let today = UTCDay(unixSeconds: now)
        let oldest = today.advanced(by: -settings.retentionDays)
        // Without the layout's first index nothing can be compared: the run failed (the next one catches up).
        guard let countriesBody = try fetchIndex(url(CWALayout.countries())) else {
            throw AppError.server("\(url(CWALayout.countries())): no answer; nothing downloaded, the next run catches up")
        }
        let countries = try CWALayout.decodeStrings(countriesBody, url: url(CWALayout.countries()))
        guard countries.contains(country) else { throw AppError.server("\(url(CWALayout.countries())): country \(country) is not served (\(countries.joined(separator: ", ")))") }
        guard let daysBody = try fetchIndex(url(CWALayout.days(country))) else { outcome.pending += 1; return }
        let days = try CWALayout.decodeStrings(daysBody, url: url(CWALayout.days(country))).compactMap { text -> UTCDay? in
            guard let d = UTCDay(isoDate: text) else { log("\(url(CWALayout.days(country))): '\(text)' is not a date; skipped"); return nil }
            return d
        }
        for day in days.sorted() where day >= oldest && day < today {
            let id = "cwa/\(country)/\(day.isoDate)"
            guard state.packages[id] == nil else { continue }
            if try download(id: id, path: CWALayout.day(country, day), kind: .day, day: day, hour: nil,
                            window: (day.unixSeconds, day.unixSeconds + 86_400), revoked: revoked) {
                replaceHours(of: day, by: id)
            }
        }
        let listed = Set(days)
        for back in stride(from: settings.hourDays - 1, through: 0, by: -1) {
            let day = today.advanced(by: -back)
            guard !listed.contains(day), day >= oldest else { continue }
            guard let body = try fetchIndex(url(CWALayout.hours(country, day))) else { outcome.pending += 1; continue }
            if body.isEmpty { continue } // no hour of that day published yet
            for hour in try CWALayout.decodeHours(body, url: url(CWALayout.hours(country, day))).sorted() {
                let id = "cwa/\(country)/\(day.isoDate)/\(hour)"
                guard state.packages[id] == nil else { continue }
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
            guard state.packages[id] == nil else { continue }
            _ = try download(id: id, path: path, kind: .file, day: nil, hour: nil, window: nil, revoked: revoked)
        }
        // Files the server no longer lists are past its retention.
        let listed = Set(paths.map { "google/" + $0 })
        let cutoff = Int64(now()) - Int64(settings.retentionDays + 1) * 86_400
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
            outcome.refused += 1
            log("refused \(u): \(e)")
            return false
        }
        guard r.status == 200 else {
            outcome.pending += 1
            log("\(u): listed in the index but HTTP \(r.status); left for the next run")
            return false
        }
        outcome.bytes += r.body.count
        let sha = SHA256.hash(r.body).hexString
        guard !revoked.contains(sha) else {
            outcome.refused += 1
            log("refused \(u): revoked by the configuration (SHA-256 \(sha))")
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
            outcome.refused += 1
            log("refused \(u): \(error)")
            return false
        }
        try checkSpace(r.body.count)
        let name = sha + ".zip"
        try store.write(r.body, to: "cache/" + name)
        state.packages[id] = CachedPackage(id: id, url: u, kind: kind, day: day?.isoDate, hour: hour, sha256: sha, etag: r.etag,
                                           bytes: r.body.count, keys: file.keyCount + file.revisedKeyCount, fetchedAt: Int64(now()),
                                           file: name, providedAt: nil)
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
        guard let data = FileManager.default.contents(atPath: store.cachePath(p.file)),
              let file = try? KeyExportFile(parsing: data) else { return nil }
        return Set(file.keyBatches().flatMap { $0 }.map { $0.key.bytes + $0.rollingStartIntervalNumber.littleEndianBytes })
    }

    private func remove(_ id: String) {
        guard let p = state.packages.removeValue(forKey: id) else { return }
        if !state.packages.values.contains(where: { $0.file == p.file }) { try? FileManager.default.removeItem(atPath: store.cachePath(p.file)) }
    }

    // MARK: Providing

    /// The packages gaend does not have yet, oldest first.
    public var waiting: [CachedPackage] {
        state.packages.values.filter { !$0.provided }.sorted { ($0.day ?? "", $0.hour ?? -1, $0.id) < ($1.day ?? "", $1.hour ?? -1, $1.id) }
    }

    /// ProvideDiagnosisKeys calls the app may still make today: gaend's own count, and the
    /// app's (`perDay` a UTC day), whichever is lower.
    public func callsLeft(gaendRemaining: UInt32, perDay: Int) -> Int {
        let today = Int64(UTCDay(unixSeconds: now()).unixSeconds)
        state.provideCalls.removeAll { $0 < today }
        return max(0, min(Int(min(gaendRemaining, UInt32(Int32.max))), perDay - state.provideCalls.count))
    }

    /// Hands the waiting packages to `provide` in batches of at most 16 files, within
    /// `calls` calls; each package provided is remembered, so none is provided twice.
    /// Returns the packages provided. A failed call stops (the rest wait for the next run).
    public func provide(calls: Int, _ provide: ([String]) async throws -> Void) async throws -> Int {
        var done = 0
        let batches = stride(from: 0, to: waiting.count, by: 16).map { Array(waiting[$0..<min(waiting.count, $0 + 16)]) }
        for batch in batches.prefix(max(0, calls)) {
            do {
                try await provide(batch.map { store.cachePath($0.file) })
            } catch {
                log("ProvideDiagnosisKeys: \(error); \(waiting.count) packages wait for the next run")
                break
            }
            let t = Int64(now())
            state.provideCalls.append(t)
            for p in batch { state.packages[p.id]?.providedAt = t }
            done += batch.count
            try store.save(state)
        }
        return done
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
