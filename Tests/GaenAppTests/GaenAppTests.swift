import DBusCore
import ENProtocol
import Foundation
import GaendAPI
import HTTPClient
@testable import KeyDistribution
import RiskEngines
import Testing
@testable import GaenApp

@Suite struct ProvideBatchingTests {
    static func run(_ directory: String, now: @escaping () -> Double) throws -> SyncRun {
        var trust = KeyExportTrustSet()
        trust.add(keyId: "K", key: try P256PrivateKey.generate().publicKey)
        return try SyncRun(settings: SyncSettings(server: "http://127.0.0.1:1/keys/", layout: .cwa(country: "DE"), trust: trust),
                           store: try AppStateStore(directory: directory), http: try HTTPSession(), now: now, sleep: { _ in }, log: { _ in })
    }

    static func package(_ i: Int, day: String) -> CachedPackage {
        CachedPackage(id: "cwa/DE/\(day)/\(i)", url: "u\(i)", kind: .hour, day: day, hour: i, sha256: String(repeating: "0", count: 64),
                      etag: nil, bytes: 1, keys: 1, fetchedAt: 0, file: "f\(i).zip", providedAt: nil)
    }

    @Test func batchesOfSixteenWithinTheCallsLeftAndNeverTwice() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaenapp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let day: Double = 20_000 * 86_400
        let sync = try Self.run(dir, now: { day + 3600 })
        for i in 0..<40 { let p = Self.package(i, day: "2024-10-04"); sync.state.packages[p.id] = p }
        #expect(sync.callsLeft(gaendRemaining: .max, perDay: 6) == 6)
        #expect(sync.callsLeft(gaendRemaining: 1, perDay: 6) == 1)
        var calls: [[String]] = []
        let provided = try await sync.provide(calls: 2) { calls.append($0) }
        #expect(provided.provided == 32 && provided.calls == 2 && calls.map(\.count) == [16, 16])
        #expect(sync.waiting.count == 8)
        #expect(sync.callsLeft(gaendRemaining: .max, perDay: 6) == 4)
        // Oldest first: hours 0...15 went in the first call.
        #expect(calls[0] == (0..<16).map { sync.store.cachePath("f\($0).zip") })
        // A call failing for a reason not in its files stops; nothing is marked.
        struct Refused: Error {}
        let none = try await sync.provide(calls: 4) { _ in throw Refused() }
        #expect(none.provided == 0 && none.stopped != nil && sync.waiting.count == 8)
        // The state survives a restart: the provided ones are never provided again.
        let again = try Self.run(dir, now: { day + 7200 })
        #expect(again.waiting.count == 8 && again.state.provideCalls.count == 2)
        // A new UTC day: the app's own count starts again.
        let tomorrow = try Self.run(dir, now: { day + 86_400 + 60 })
        #expect(tomorrow.callsLeft(gaendRemaining: .max, perDay: 6) == 6)
    }

    @Test func riskHistoryRecordsChangesAndAnnouncesOnlyTheTurnToHigh() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaenapp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sync = try Self.run(dir, now: { 0 })
        func risk(_ level: String, _ t: Int64) -> RiskRecord { RiskRecord(computedAt: t, engine: "cwa", level: level, windows: 0, detail: "{}") }
        #expect(try sync.record(risk: risk("low", 1)) == false)
        #expect(try sync.record(risk: risk("high", 2)) == true)
        #expect(try sync.record(risk: risk("high", 3)) == false)
        #expect(sync.state.highRiskSince == 2)
        #expect(try sync.record(risk: risk("low", 4)) == false)
        #expect(try sync.record(risk: risk("high", 5)) == true)
        #expect(sync.state.history.map(\.computedAt) == [1, 2, 4, 5])
        let status = try AppStatus.read(directory: dir)
        #expect(status?.risk?.level == "high" && status?.highRiskSince == 5)
    }

    @Test func httpDatesAndRetryAfter() {
        #expect(HTTPSession.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPSession.retryAfter("120") == 120)
        #expect(HTTPSession.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_700) == 77)
        #expect(HTTPSession.retryAfter("soon") == nil)
    }

    @Test func configurationIsChecked() throws {
        #expect(throws: DistributionError.self) { try AppConfiguration(json: Data(#"{"riskEngine":"magic","parameters":{}}"#.utf8)) }
        #expect(throws: DistributionError.self) { try AppConfiguration(json: Data(#"{"riskEngine":"cwa","parameters":{},"revokedPackages":["xyz"]}"#.utf8)) }
        let nhs = PublishedRiskConfigurations.nhs
        let c = try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(nhs),"revokedPackages":["\#(String(repeating: "AB", count: 32))"]}"#.utf8))
        #expect(c.riskEngine == "nhs" && c.revokedPackages == [String(repeating: "ab", count: 32)])
        // Parameters the named engine cannot read: refused with the engine's reason, so the
        // publisher never signs it and no app keeps it.
        #expect {
            try AppConfiguration(json: Data(#"{"riskEngine":"cwa","parameters":{"a":1}}"#.utf8))
        } throws: { "\($0)".contains("the cwa engine refuses its parameters") }
        // Engines an app never shipped are not for app configurations.
        #expect(throws: DistributionError.self) { try AppConfiguration(json: Data(#"{"riskEngine":"gaen-v1","parameters":{}}"#.utf8)) }
    }

    /// The parameters are kept as the same JSON (read on FoundationEssentials, without
    /// JSONSerialization): whole numbers as integers, keys sorted; every published engine's
    /// parameters read back as what was given.
    @Test func configurationKeepsItsParameters() throws {
        let c = try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(PublishedRiskConfigurations.nhs)}"#.utf8))
        let given = try JSONSerialization.jsonObject(with: Data(PublishedRiskConfigurations.nhs.utf8)) as? NSDictionary
        #expect(try JSONSerialization.jsonObject(with: c.parameters) as? NSDictionary == given)
        let shape = try AppConfiguration.integral(JSONValue.parse(Data(#"{"b":[1.5,2,-3,1e20],"a":{"n":null,"t":true}}"#.utf8)))
        #expect(shape.serialized() == #"{"a":{"n":null,"t":true},"b":[1.5,2,-3,1e+20]}"#)
        // As JSONSerialization.isValidJSONObject: an object or an array, nothing else.
        #expect(throws: DistributionError.self) { try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":3}"#.utf8)) }
        #expect(throws: DistributionError.self) {
            try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(PublishedRiskConfigurations.nhs),"revokedPackages":["\#(String(repeating: "a", count: 64))",1]}"#.utf8))
        }
    }

    /// The example the server package installs as /etc/gaend-trial/app-config.json is one the
    /// publisher signs and the apps keep: its engine reads its parameters.
    @Test func shippedExampleConfiguration() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/trial/app-config.json")
        let config = try AppConfiguration(json: try Data(contentsOf: path))
        #expect(config.riskEngine == "cwa" && config.revokedPackages.isEmpty)
        let windows = Data(#"[{"dateMillisSinceEpoch": 1599955200000, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 0, "transmissionRiskLevel": 4, "scanInstances": [{"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}]}]"#.utf8)
        let r = try AppRisk.evaluate(config, windows: windows, today: UTCDay(isoDate: "2020-09-14")!, at: 1_600_100_000)
        #expect(r.engine == "cwa" && r.windows == 1 && ["low", "high"].contains(r.level))
    }

    @Test("Every registered app engine runs the app's risk from its published parameters")
    func everyAppEngineFromTheRegistry() throws {
        let windows = Data(#"[{"dateMillisSinceEpoch": 1599955200000, "reportType": 1, "infectiousness": 2, "calibrationConfidence": 0, "transmissionRiskLevel": 4, "scanInstances": [{"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}, {"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}, {"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}, {"typicalAttenuationDb": 50, "minAttenuationDb": 45, "secondsSinceLastScan": 300}]}]"#.utf8)
        let names = RiskEngineRegistry.appEngineNames
        #expect(Set(names) == AppConfiguration.engines && names.count == 4)
        for engine in RiskEngineRegistry.engines where engine.servesApps {
            let config = AppConfiguration(riskEngine: engine.name, parameters: try #require(engine.publishedParameters))
            let r = try AppRisk.evaluate(config, windows: windows, today: UTCDay(isoDate: "2020-09-14")!, at: 1_600_100_000)
            #expect(r.engine == engine.name && ["low", "high"].contains(r.level) && r.windows == 1 && !r.detail.isEmpty, "\(engine.name)")
        }
    }
}

/// gaend as the provide closure sees it: the framework's checks reduced to what decides the
/// app's behaviour (a bad file named by its place in the call, the per-call byte limit).
final class FakeGaend: @unchecked Sendable {
    var bad: Set<String> = []
    /// Names the bad file as gaend does ("file N: ..."); false: a refusal without a name.
    var namesFile = true
    var maxCallBytes = 64 << 20
    var sizes: [String: Int] = [:]
    var accepted: [[String]] = []
    var refusedCalls = 0

    func provide(_ paths: [String]) throws {
        let total = paths.reduce(0) { $0 + (sizes[$1] ?? 1) }
        if total > maxCallBytes {
            refusedCalls += 1
            throw DBusNamedError(name: GaendInterfaces.ErrorName.limitExceeded,
                                 message: "the files' export.bin are \(total) bytes together; one call's may be at most \(maxCallBytes)")
        }
        if let n = paths.firstIndex(where: { bad.contains($0) }) {
            refusedCalls += 1
            throw DBusNamedError(name: GaendInterfaces.ErrorName.invalidKeyFile,
                                 message: namesFile ? "file \(n + 1): keys[3]: rolling_start_interval_number 3050640 starts after tomorrow"
                                                    : "a key starts after tomorrow")
        }
        accepted.append(paths)
    }
}

@Suite struct RefusedPackageTests {
    static let day: Double = 20_000 * 86_400

    static func filled(_ dir: String, count: Int, now: @escaping () -> Double, bytes: Int = 1, exportBytes: Int? = nil,
                       log: @escaping (String) -> Void = { _ in }) throws -> SyncRun {
        var trust = KeyExportTrustSet()
        trust.add(keyId: "K", key: try P256PrivateKey.generate().publicKey)
        let sync = try SyncRun(settings: SyncSettings(server: "http://127.0.0.1:1/keys", layout: .cwa(country: "DE"), trust: trust),
                               store: try AppStateStore(directory: dir), http: try HTTPSession(), now: now, sleep: { _ in }, log: log)
        for i in 0..<count {
            var p = ProvideBatchingTests.package(i, day: "2024-10-04")
            p.url = "http://127.0.0.1:1/keys/hour/\(i)"
            p.bytes = bytes
            p.exportBytes = exportBytes
            p.fetchedAt = Int64(day) + Int64(i)
            sync.state.packages[p.id] = p
        }
        return sync
    }

    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gaenapp-\(UUID().uuidString)").path
    }

    @Test("A file gaend refuses is set apart, refused, counted and logged; the rest are provided in the same run")
    func refusedFileIsIsolatedAndTheRestProvided() async throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var clock = Self.day + 3600
        var logged: [String] = []
        let sync = try Self.filled(dir, count: 40, now: { clock }, log: { logged.append($0) })
        let gaend = FakeGaend()
        // Hour 3 (in the first call, the oldest) and hour 20 are refused by gaend.
        gaend.bad = [sync.store.cachePath("f3.zip"), sync.store.cachePath("f20.zip")]
        let outcome = try await sync.provide(calls: 6) { try gaend.provide($0) }
        #expect(outcome.provided == 38 && outcome.refused == 2 && outcome.stopped == nil)
        // One accepted call per batch: the named file goes alone and is refused for nothing of
        // gaend's daily count (accepted calls only), the rest of its batch goes on.
        #expect(outcome.calls == 3 && gaend.accepted.count == 3)
        #expect(Set(gaend.accepted.joined()).count == 38 && gaend.accepted.joined().allSatisfy { !gaend.bad.contains($0) })
        #expect(sync.waiting.isEmpty)
        #expect(sync.state.packages.values.filter(\.refused).compactMap(\.hour).sorted() == [3, 20])
        #expect(sync.state.refusedByGaendTotal == 2)
        #expect(logged.contains { $0.contains("refused by gaend http://127.0.0.1:1/keys/hour/3: org.gaend.Error.InvalidKeyFile: file 1: keys[3]") })
        // What the status says: nothing waits, two refused, the last provide.
        let status = try #require(try AppStatus.read(directory: dir))
        #expect(status.packagesWaiting == 0 && status.packagesRefused == 2 && status.refusedByGaendTotal == 2)
        #expect(status.oldestWaitingFetchedAt == nil && status.lastProvidedAt == Int64(clock))

        // The same day: the refused packages go into no call.
        gaend.accepted = []
        let again = try await sync.provide(calls: 6) { try gaend.provide($0) }
        #expect(again == SyncRun.ProvideOutcome() && gaend.accepted.isEmpty)
        // Each later day they are tried alone, 3 refusals in all, then never again.
        for d in 1...3 {
            clock += 86_400
            let retry = try await sync.provide(calls: 6) { try gaend.provide($0) }
            #expect(retry.refused == (d < 3 ? 2 : 0) && retry.provided == 0, "day \(d)")
        }
        #expect(sync.state.packages.values.filter(\.refused).allSatisfy { $0.refusals == SyncRun.maxRefusals })
        // A refusal that was transient (gaend's clock): the retry alone passes.
        let dir2 = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        clock = Self.day + 3600
        let other = try Self.filled(dir2, count: 3, now: { clock })
        gaend.bad = [other.store.cachePath("f1.zip")]
        #expect(try await other.provide(calls: 6) { try gaend.provide($0) }.refused == 1)
        gaend.bad = []
        clock += 86_400
        let passed = try await other.provide(calls: 6) { try gaend.provide($0) }
        #expect(passed.provided == 1 && other.state.packages.values.allSatisfy(\.provided))
    }

    @Test("A refusal that names no file is found by halving the call")
    func unnamedRefusalIsBisected() async throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sync = try Self.filled(dir, count: 16, now: { Self.day + 3600 })
        let gaend = FakeGaend()
        gaend.namesFile = false
        gaend.bad = [sync.store.cachePath("f11.zip")]
        let outcome = try await sync.provide(calls: 6) { try gaend.provide($0) }
        #expect(outcome.provided == 15 && outcome.refused == 1 && outcome.stopped == nil)
        #expect(sync.state.packages["cwa/DE/2024-10-04/11"]?.refused == true)
        // Halving 16 -> 8 -> 4 -> 2 -> 1: a handful of accepted calls, within the day's 6.
        #expect(outcome.calls <= 5 && gaend.refusedCalls == 5)
    }

    @Test("Calls are sized by bytes too: never more than gaend's 64 MiB a call")
    func callsAreSizedByBytes() async throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Five packages of 14 MB export.bin each (70 MB together), as one flooding board makes.
        let sync = try Self.filled(dir, count: 5, now: { Self.day + 3600 }, bytes: 9_000_000, exportBytes: 14_040_155)
        let gaend = FakeGaend()
        for i in 0..<5 { gaend.sizes[sync.store.cachePath("f\(i).zip")] = 14_040_155 }
        let outcome = try await sync.provide(calls: 6) { try gaend.provide($0) }
        #expect(gaend.refusedCalls == 0 && outcome.provided == 5 && outcome.refused == 0)
        #expect(gaend.accepted.map(\.count) == [4, 1])
        // The export sizes count, not only the files' bytes: 5 small zips inflating to 70 MB.
        let dir2 = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        let small = try Self.filled(dir2, count: 5, now: { Self.day + 3600 }, bytes: 100_000, exportBytes: 14_040_155)
        #expect(small.batches(small.waiting, limits: SyncRun.CallLimits()).map(\.count) == [4, 1])
    }

    @Test("A call refused for a reason not in its files stops the provide; the packages wait and the run says so")
    func transientRefusalStops() async throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sync = try Self.filled(dir, count: 20, now: { Self.day + 3600 })
        for error in [DBusNamedError(name: GaendInterfaces.ErrorName.busy, message: "an earlier ProvideDiagnosisKeys is still being matched"),
                      DBusNamedError(name: GaendInterfaces.ErrorName.limitExceeded,
                                     message: "gaend already holds 90 MiB of key files in flight (at most 96 MiB for all calls together)")] {
            let outcome = try await sync.provide(calls: 6) { _ in throw error }
            #expect(outcome.provided == 0 && outcome.refused == 0 && outcome.stopped?.contains(error.name) == true)
            #expect(sync.waiting.count == 20 && !sync.state.packages.values.contains(where: \.refused))
        }
        let status = try #require(try AppStatus.read(directory: dir))
        #expect(status.packagesWaiting == 20 && status.oldestWaitingFetchedAt == Int64(Self.day))
    }

    @Test("The summary line says what waits")
    func summaryLine() {
        var r = SyncRecord(startedAt: 0, finishedAt: 0, server: "s", newPackages: 3, provided: 2, refused: 1, pending: 0, bytes: 0, error: "")
        #expect(AppSyncJob.summary(r) == "3 new packages, 2 provided, 1 refused")
        r.pending = 4
        #expect(AppSyncJob.summary(r) == "3 new packages, 2 provided, 1 refused, 4 waiting")
    }
}

@Suite struct ConfigurationVersionTests {
    static let nhs = PublishedRiskConfigurations.nhs

    static func signed(_ version: Int?, revoked: [String] = [], by signers: [KeyExportSigner]) throws -> Data {
        let v = version.map { ",\"version\":\($0)" } ?? ""
        let json = #"{"riskEngine":"nhs","parameters":\#(nhs),"revokedPackages":[\#(revoked.map { "\"\($0)\"" }.joined(separator: ","))]\#(v)}"#
        return try KeyExportWriter.signedZip(exportBin: Data(json.utf8), signers: signers)
    }

    @Test("The version is an integer from 0, 0 when absent")
    func versionParsed() throws {
        #expect(try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(Self.nhs)}"#.utf8)).version == 0)
        #expect(try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(Self.nhs),"version":7}"#.utf8)).version == 7)
        for bad in ["-1", "1.5", "true", "\"2\"", "9007199254740993"] {
            #expect(throws: DistributionError.self, "\(bad)") {
                try AppConfiguration(json: Data(#"{"riskEngine":"nhs","parameters":\#(Self.nhs),"version":\#(bad)}"#.utf8))
            }
        }
    }

    @Test("An older configuration signed by the same key is refused: v1 served again cannot bring back what v2 revoked")
    func olderVersionRefused() throws {
        let dir = RefusedPackageTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = try P256PrivateKey.generate(), new = try P256PrivateKey.generate()
        let oldSigner = KeyExportSigner(key: old, info: KeyExportSignatureInfo(keyId: "TRIAL", keyVersion: "1"))
        let newSigner = KeyExportSigner(key: new, info: KeyExportSignatureInfo(keyId: "TRIAL", keyVersion: "2"))
        var trust = KeyExportTrustSet()
        trust.add(keyId: "TRIAL", version: "1", key: old.publicKey)
        trust.add(keyId: "TRIAL", version: "2", key: new.publicKey)
        func run() throws -> SyncRun {
            try SyncRun(settings: SyncSettings(server: "http://127.0.0.1:1/keys", layout: .cwa(country: "DE"), trust: trust),
                        store: try AppStateStore(directory: dir), http: try HTTPSession(), now: { 0 }, sleep: { _ in }, log: { _ in })
        }
        let revoked = String(repeating: "ab", count: 32)
        let sync = try run()
        #expect(try sync.accept(configuration: Self.signed(1, by: [oldSigner])).version == 1)
        #expect(try sync.accept(configuration: Self.signed(2, revoked: [revoked], by: [oldSigner])).revokedPackages == [revoked])
        try sync.store.save(sync.state)
        // The state survives a restart.
        let later = try run()
        #expect { try later.accept(configuration: Self.signed(1, by: [oldSigner])) } throws: {
            "\($0)" == "version 1 is older than version 2, accepted before under key TRIAL:1"
        }
        #expect(throws: AppError.self) { try later.accept(configuration: Self.signed(nil, by: [oldSigner])) }
        // The same version again (an unchanged configuration, or one served again) is fine.
        #expect(try later.accept(configuration: Self.signed(2, revoked: [revoked], by: [oldSigner])).version == 2)
        // Rotating: v3 signed by the new key and the old one sets both; the new key's own v1
        // is then refused too, but a new key that never signed before starts from its first.
        #expect(try later.accept(configuration: Self.signed(3, by: [newSigner, oldSigner])).version == 3)
        #expect(throws: AppError.self) { try later.accept(configuration: Self.signed(2, by: [newSigner])) }
        let fresh = try run()
        fresh.state.configurationVersions = ["TRIAL:1": 3]
        #expect(try fresh.accept(configuration: Self.signed(1, by: [newSigner])).version == 1)
    }
}

