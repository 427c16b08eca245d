import ENProtocol
import Foundation
import HTTPClient
import KeyDistribution
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
        #expect(provided == 32 && calls.map(\.count) == [16, 16])
        #expect(sync.waiting.count == 8)
        #expect(sync.callsLeft(gaendRemaining: .max, perDay: 6) == 4)
        // Oldest first: hours 0...15 went in the first call.
        #expect(calls[0] == (0..<16).map { sync.store.cachePath("f\($0).zip") })
        // A failing call stops; nothing is marked.
        struct Refused: Error {}
        let none = try await sync.provide(calls: 4) { _ in throw Refused() }
        #expect(none == 0 && sync.waiting.count == 8)
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
