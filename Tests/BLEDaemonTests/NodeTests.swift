import DBusCore
import GaendAPI
import ENProtocol
import Foundation
@testable import HCIHost
import Logging
import NodeConfig
import NodeTestSupport
import Testing
@testable import BLEDaemon

/// The node without a radio: key schedule, key history, provided key files, matching, rate
/// limits and the D-Bus argument conversions. The radio paths run in Tests/e2e.
@Suite("Node core (no radio)", .serialized)
struct NodeTests {
    /// A node on a manual clock whose controller never answers (nothing listens there).
    func makeNode(_ dir: TempStoreDir, trial: Bool = false, configure: (inout GaendSettings) -> Void = { _ in })
        throws -> (GaenNode, ManualClock) {
        var s = GaendSettings()
        s.controller = .unix(path: dir.url.appendingPathComponent("no-controller").path)
        s.stateDirectory = dir.url.path
        s.storeKeyFile = dir.keyPath
        s.trial = trial
        configure(&s)
        let clock = ManualClock(wall: 1_700_000_000, monotonic: 100)  // 2023-11-14T22:13:20Z
        let node = try GaenNode(settings: s, logger: Logger(label: "test"), clock: clock, sync: FixedClockSync(.synchronized(source: "test")),
                                radio: RadioService.makeRadio(settings: s, clock: clock, logger: Logger(label: "test")))
        return (node, clock)
    }

    static let day = UTCDay(unixSeconds: 1_700_000_000)

    @Test("a rotation creates the day's key once; today's key is released only in trial mode")
    func keySchedule() async throws {
        let dir = try TempStoreDir()
        let (node, clock) = try makeNode(dir)
        let reading = ClockReading(wall: clock.wallTime(), monotonic: 100)
        await node.schedule.perform(.rotate(AdvertisingSlot(wall: reading.wall)), at: reading)
        await node.schedule.perform(.rotate(AdvertisingSlot(wall: reading.wall + 700)), at: reading)
        #expect(await node.snapshot.advertisements == 2)
        #expect(try await node.exposure.keyHistory().isEmpty)  // today's key is still on air
        let tek = try node.store.key(for: Self.day)
        #expect(try node.store.keys(in: Self.day...Self.day).count == 1)
        // The next day, yesterday's key is released with its day's first interval.
        clock.stepWall(by: 86_400)
        let history = try await node.exposure.keyHistory()
        #expect(history.map(\.key) == [tek])
        #expect(history.first?.rollingStartIntervalNumber == Self.day.firstInterval)
        #expect(history.first?.rollingPeriod == 144)
        await node.shutdown()

        let dir2 = try TempStoreDir()
        let (trialNode, trialClock) = try makeNode(dir2, trial: true)
        let r2 = ClockReading(wall: trialClock.wallTime(), monotonic: 100)
        await trialNode.schedule.perform(.rotate(AdvertisingSlot(wall: r2.wall)), at: r2)
        #expect(try await trialNode.exposure.keyHistory().count == 1)
        await trialNode.shutdown()
    }

    @Test("a scan without a controller is not recorded (nothing was observed)")
    func noControllerNoRecord() async throws {
        let dir = try TempStoreDir()
        let (node, clock) = try makeNode(dir)
        let r = ClockReading(wall: clock.wallTime(), monotonic: 100)
        await node.schedule.perform(.startScan(ScanWindow(startWall: r.wall, startMonotonic: 100, duration: 4)), at: r)
        await node.schedule.perform(.finishScan(CompletedScan(startWall: r.wall, endWall: r.wall + 4)), at: r)
        #expect(await node.snapshot.scans == 0)
        #expect(try node.store.counts().scans == 0)
        #expect(await node.snapshot.status.contains(.controllerMissing))
        await node.shutdown()
    }

    /// A signed-free key file holding `keys`.
    func keyFile(_ keys: [DiagnosisKey]) throws -> Data {
        try KeyExportWriter.exportBin(header: KeyExportHeader(startTimestamp: 0, endTimestamp: 1, region: "t"), keys: keys)
    }

    @Test("the exposure service's busy state: matching from an accepted call to the end of its matching; another call is Busy meanwhile")
    func matchingBusyState() async throws {
        let dir = try TempStoreDir()
        let (node, _) = try makeNode(dir)
        #expect(await node.snapshot.matching == false)
        let key = DiagnosisKey(key: try TemporaryExposureKey(bytes: Data(repeating: 3, count: 16)), rollingStartIntervalNumber: Self.day.firstInterval)
        _ = try await node.exposure.acceptKeyFiles([keyFile([key])], trust: KeyExportTrustSet())
        #expect(await node.snapshot.matching)
        await #expect(throws: NodeError.busy("an earlier ProvideDiagnosisKeys is still being matched")) {
            _ = try await node.exposure.acceptKeyFiles([keyFile([key])], trust: KeyExportTrustSet())
        }
        let (ended, signal) = AsyncStream.makeStream(of: Bool.self)
        node.setObserver(MatchingEnds(token: "t1", signal: signal))
        await node.exposure.beginMatching(token: "t1")
        var it = ended.makeAsyncIterator()
        #expect(await it.next() == true)
        #expect(await node.snapshot.matching == false)
        await node.exposure.stopMatching()
        await node.shutdown()
    }

    @Test("a provided key file is kept while its keys can match a kept sighting, dropped by retention after; kept files are not parsed again")
    func keyFileRetention() async throws {
        let dir = try TempStoreDir()
        let (node, _) = try makeNode(dir)
        func key(_ byte: UInt8, _ day: UTCDay) throws -> DiagnosisKey {
            DiagnosisKey(key: try TemporaryExposureKey(bytes: Data(repeating: byte, count: 16)), rollingStartIntervalNumber: day.firstInterval)
        }
        let old = try key(1, UTCDay(Self.day.rawValue - 3)), recent = try key(2, Self.day)
        _ = try await node.exposure.acceptKeyFiles([keyFile([old])], trust: KeyExportTrustSet())
        _ = try await node.exposure.runMatching()
        _ = try await node.exposure.acceptKeyFiles([keyFile([recent]), keyFile([old, recent])], trust: KeyExportTrustSet())
        _ = try await node.exposure.runMatching()
        #expect(try node.store.keyFiles().map(\.validUntil) == [Double(Self.day.rawValue - 2) * 86_400, Double(Self.day.rawValue + 1) * 86_400,
                                                                Double(Self.day.rawValue + 1) * 86_400])
        // A file provided again replaces its earlier copy (one row, at the end).
        _ = try await node.exposure.acceptKeyFiles([keyFile([old])], trust: KeyExportTrustSet())
        _ = try await node.exposure.runMatching()
        #expect(try node.store.keyFiles().count == 3)
        #expect(node.exposure.keyFiles.parses == 0)
        // 14 days (+ the 2 h tolerance) after the old key's validity: its file goes, the others stay.
        let retention = Double(node.settings.store.retentionDays) * 86_400
        let r = try node.store.applyRetention(now: Double(Self.day.rawValue - 2) * 86_400 + retention + 7_201)
        #expect(r.keyFiles == 1)
        #expect(try node.store.keyFiles().map(\.validUntil) == [Double(Self.day.rawValue + 1) * 86_400, Double(Self.day.rawValue + 1) * 86_400])
        _ = try await node.exposure.runMatching()
        #expect(node.exposure.keyFiles.parses == 0)
        await node.shutdown()
        // After a restart each of the two kept files is parsed once, at first use (here: the
        // next call, looking for a copy of its file), and never again.
        let (again, _) = try makeNode(dir)
        _ = try await again.exposure.acceptKeyFiles([keyFile([recent])], trust: KeyExportTrustSet())
        #expect(again.exposure.keyFiles.parses == 2)
        _ = try await again.exposure.runMatching()
        _ = try await again.exposure.runMatching()
        #expect(again.exposure.keyFiles.parses == 2)
        await again.shutdown()
    }

    @Test("provided keys are matched against stored sightings; a corrupt file is refused and earlier windows stay")
    func provideAndMatch() async throws {
        let dir = try TempStoreDir()
        let (node, clock) = try makeNode(dir)
        // A peer's key and three scans that heard its RPIs at 1.5 m (RSSI -64, TX power -20).
        var rng = SeededRandom(seed: 5)
        let tek = try TemporaryExposureKey.generate(using: &rng)
        let schedule = try GAENKeySchedule()
        let start = clock.wallTime() - 3600
        for i in 0..<3 {
            let t = start + Double(i) * 240
            let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: ENIntervalNumber(unixSeconds: t))
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_0(txPower: -20), rpi: rpi,
                                                                     aemk: schedule.associatedEncryptedMetadataKey(for: tek))
            _ = try node.store.recordScan(Scan(start: t, end: t + 4, sightings: [
                Sighting(time: t + 1, rpi: rpi, aem: aem, rssi: -64),
                Sighting(time: t + 2, rpi: rpi, aem: aem, rssi: -64),
            ]))
        }
        let key = DiagnosisKey(key: tek, rollingStartIntervalNumber: Self.day.firstInterval)
        #expect(try await node.exposure.acceptKeyFiles([keyFile([key])], trust: KeyExportTrustSet()) == 1)
        let (matched, count) = try await node.exposure.runMatching()
        #expect(matched == 1 && count == 1)
        let windows = try await node.exposure.exposureWindows()
        #expect(windows.count == 1)
        #expect(windows.first?.scanInstances.map(\.typicalAttenuationDb) == [44, 44, 44])

        // Providing the same key again counts once.
        _ = try await node.exposure.acceptKeyFiles([keyFile([key])], trust: KeyExportTrustSet())
        _ = try await node.exposure.runMatching()
        #expect(try await node.exposure.exposureWindows() == windows)
        // Files are parsed once, when provided: matching again parses none of them.
        let other = DiagnosisKey(key: try TemporaryExposureKey(bytes: Data(repeating: 7, count: 16)), rollingStartIntervalNumber: Self.day.firstInterval)
        _ = try await node.exposure.acceptKeyFiles([keyFile([other])], trust: KeyExportTrustSet())
        let (ownMatched, ownWindows) = try await node.exposure.runMatching()
        #expect(node.exposure.keyFiles.parses == 0)
        // The call's own figures: a key that matches nothing reports 0, whatever matched before.
        #expect(ownMatched == 0 && ownWindows == 0)
        #expect(try await node.exposure.exposureWindows() == windows)

        // One bad file rejects the whole call.
        await #expect(throws: NodeError.self) { try await node.exposure.acceptKeyFiles([try keyFile([key]), Data("junk".utf8)], trust: KeyExportTrustSet()) }
        do {
            _ = try await node.exposure.acceptKeyFiles([Data("junk".utf8)], trust: KeyExportTrustSet())
            Issue.record("junk accepted")
        } catch let e as NodeError {
            #expect(NodeBus.errorName(e) == GaendInterfaces.ErrorName.invalidKeyFile)
        }
        #expect(try await node.exposure.exposureWindows() == windows)
        // The store holds no TEK or RPI in clear.
        let bytes = try dir.storeBytes()
        #expect(!bytes.contains(tek.bytes))
        await node.shutdown()
    }

    @Test("each scan keeps the RSSI correction it was recorded with: a later calibration changes neither windows nor export of earlier scans")
    func correctionPerScan() async throws {
        let dir = try TempStoreDir()
        let (node, clock) = try makeNode(dir, trial: true)
        var rng = SeededRandom(seed: 9)
        let tek = try TemporaryExposureKey.generate(using: &rng)
        let schedule = try GAENKeySchedule()
        let start = clock.wallTime() - 3600
        // Scan 0 recorded before any correction was kept (nil: takes the current one), scan 1
        // with +4 dB, scan 2 with -2 dB. Heard at RSSI -64 from TX power -20: 44 dB uncorrected.
        for (i, correction) in [nil, 4, -2].enumerated() {
            let t = start + Double(i) * 240
            let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: ENIntervalNumber(unixSeconds: t))
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_0(txPower: -20), rpi: rpi,
                                                                     aemk: schedule.associatedEncryptedMetadataKey(for: tek))
            _ = try node.store.recordScan(Scan(start: t, end: t + 4, rssiCorrection: correction,
                                               sightings: [Sighting(time: t + 1, rpi: rpi, aem: aem, rssi: -64)]))
        }
        try await node.calibration.set(txPower: -30, rssiCorrection: 1, confidence: 1)
        _ = try await node.exposure.acceptKeyFiles([keyFile([DiagnosisKey(key: tek, rollingStartIntervalNumber: Self.day.firstInterval)])], trust: KeyExportTrustSet())
        _ = try await node.exposure.runMatching()
        #expect(try await node.exposure.exposureWindows().first?.scanInstances.map(\.typicalAttenuationDb) == [43, 40, 46])
        let csv = try node.exportCSV(from: 0, to: .infinity)
        let corrections = try SightingsFile.records(Data(csv.utf8)).map(\.rssiCorrection)
        #expect(corrections == [1, 4, -2])
        await node.shutdown()
    }

    @Test("framework rate limit: 6 ProvideDiagnosisKeys calls per UTC day, none in trial mode")
    func rateLimit() async throws {
        let dir = try TempStoreDir()
        let (node, _) = try makeNode(dir)
        // One key (a file with none is refused): the same file each time.
        let file = try keyFile([DiagnosisKey(key: try TemporaryExposureKey(bytes: Data(repeating: 9, count: 16)),
                                             rollingStartIntervalNumber: Self.day.firstInterval)])
        for _ in 0..<6 {
            _ = try await node.exposure.acceptKeyFiles([file], trust: KeyExportTrustSet())
            _ = try await node.exposure.runMatching()
        }
        #expect(node.exposure.provideRemaining == 0)
        do {
            _ = try await node.exposure.acceptKeyFiles([file], trust: KeyExportTrustSet())
            Issue.record("seventh call accepted")
        } catch let e as NodeError {
            #expect(NodeBus.errorName(e) == GaendInterfaces.ErrorName.rateLimited)
        }
        await node.shutdown()

        let dir2 = try TempStoreDir()
        let (trial, _) = try makeNode(dir2, trial: true)
        for _ in 0..<8 {
            _ = try await trial.exposure.acceptKeyFiles([file], trust: KeyExportTrustSet())
            _ = try await trial.exposure.runMatching()
        }
        await trial.shutdown()
    }

    @Test("enabled, calibration and data mapping persist in the node state file")
    func persistentState() async throws {
        let dir = try TempStoreDir()
        do {
            let (node, _) = try makeNode(dir)
            try await node.disable()
            try await node.calibration.set(txPower: -25, rssiCorrection: 3, confidence: 2)
            try await node.exposure.setDataMapping(try DiagnosisKeysDataMapping(daysSinceOnsetToInfectiousness: [0: .high], reportTypeWhenMissing: .selfReport))
            await #expect(throws: NodeError.self) { try await node.calibration.set(txPower: 200, rssiCorrection: 0, confidence: 0) }
            await node.shutdown()
        }
        let (again, _) = try makeNode(dir)
        #expect(await again.snapshot.enabled == false)
        #expect(await again.snapshot.status.contains(.inactive))
        let c = again.calibration.current
        #expect(c.txPower == -25 && c.rssiCorrection == 3 && c.confidence == .medium)
        let m = try again.exposure.dataMapping()
        #expect(m.reportTypeWhenMissing == .selfReport && m.daysSinceOnsetToInfectiousness?[0] == .high)
        // A second change within 7 days is refused (framework limit).
        do {
            try await again.exposure.setDataMapping(.default)
            Issue.record("second mapping change accepted")
        } catch let e as NodeError {
            #expect(NodeBus.errorName(e) == GaendInterfaces.ErrorName.rateLimited)
        }
        await again.shutdown()
    }

    @Test("SetCalibration holds over the config until the config's calibration changes; then the config's applies")
    func calibrationPrecedence() async throws {
        let dir = try TempStoreDir()
        func configured(_ rssi: Int, site: String = "") -> (inout GaendSettings) -> Void {
            { s in s.calibration.txPower = -22; s.calibration.rssiCorrection = rssi; s.calibration.calibrationConfidence = .low; s.research.site = site }
        }
        do {
            let (node, _) = try makeNode(dir, configure: configured(2))
            #expect(node.calibration.current.rssiCorrection == 2)
            try await node.calibration.set(txPower: -25, rssiCorrection: 7, confidence: 3)
            #expect(node.calibration.current.rssiCorrection == 7)
            await node.shutdown()
        }
        do {
            // Same calibration in the config, another setting changed: the override stays.
            let (node, _) = try makeNode(dir, configure: configured(2, site: "bus-9"))
            let c = node.calibration.current
            #expect(c.txPower == -25 && c.rssiCorrection == 7 && c.confidence == .high)
            await node.shutdown()
        }
        do {
            // The config's calibration changed (gaenctl calibrate --config): the config wins, and
            // the override is gone for good, also when the config is later set back.
            let (node, _) = try makeNode(dir, configure: configured(-4))
            let c = node.calibration.current
            #expect(c.txPower == -22 && c.rssiCorrection == -4 && c.confidence == .low)
            await node.shutdown()
        }
        let (again, _) = try makeNode(dir, configure: configured(2))
        #expect(again.calibration.current.rssiCorrection == 2)
        await again.shutdown()
    }

    @Test("markers keep the ids AddMarker returned; bad labels are InvalidArgs")
    func markers() async throws {
        let dir = try TempStoreDir()
        let (node, clock) = try makeNode(dir, trial: true)
        let first = try await node.research.addMarker(time: 0, label: "seated", distance: 1.5, note: "")
        let second = try await node.research.addMarker(time: clock.wallTime() + 10, label: "standing", distance: -1, note: "n")
        let got = try await node.research.markers(from: 0, to: clock.wallTime() + 60)
        #expect(got.map(\.id) == [first, second])
        #expect(got.map(\.marker.label) == ["seated", "standing"])
        #expect(got[0].marker.distanceMeters == 1.5 && got[1].marker.distanceMeters == nil)
        await #expect(throws: NodeError.self) { try await node.research.addMarker(time: 0, label: "", distance: 1, note: "") }
        await node.shutdown()
    }

    @Test("D-Bus configurations: required keys, counts and ranges are InvalidArgs at the edge; types and unknown keys fail the typed decoder")
    func configConversions() throws {
        let good: [String: DBusValue] = [
            "attenuation_bucket_thresholds_db": .array(.int32, [.int32(30), .int32(50), .int32(70)]),
            "attenuation_bucket_weights": .array(.double, [.double(1), .double(1), .double(0.5), .double(0)]),
            "report_type_weights": .dict(key: .int32, value: .double, [DBusDictEntry(key: .int32(1), value: .double(2))]),
        ]
        func summaries(_ d: [String: DBusValue]) throws -> DailySummariesConfig {
            try NodeBus.domain(GaendDailySummariesConfig(dbus: .vardict(d)))
        }
        let c = try summaries(good)
        #expect(c.attenuationBucketThresholdDb == [30, 50, 70])
        #expect(c.reportTypeWeights == [0, 2, 1, 1, 1, 0])
        #expect(c.infectiousnessWeights == [0, 1, 1])
        var missing = good
        missing["attenuation_bucket_weights"] = nil
        #expect(throws: NodeError.invalidArgs("attenuation_bucket_weights: 4 weights required")) { try summaries(missing) }
        var short = good
        short["attenuation_bucket_thresholds_db"] = .array(.int32, [.int32(30)])
        #expect(throws: NodeError.invalidArgs("attenuation_bucket_thresholds_db: 3 thresholds required")) { try summaries(short) }
        var badKey = good
        badKey["report_type_weights"] = .dict(key: .int32, value: .double, [DBusDictEntry(key: .int32(9), value: .double(2))])
        #expect(throws: NodeError.self) { try summaries(badKey) }
        var unknown = good
        unknown["colour"] = .string("red")
        #expect(throws: GaendWireError.unknownKey(what: "config", key: "colour", known: GaendDailySummariesConfig.keys)) { try summaries(unknown) }
        var wrongType = good
        wrongType["attenuation_bucket_thresholds_db"] = .string("30,50,70")
        #expect(throws: GaendWireError.wrongType(what: "config key 'attenuation_bucket_thresholds_db'", expected: "ai", actual: "s")) {
            try summaries(wrongType)
        }

        let v1 = try NodeBus.domain(GaendExposureConfigurationV1())
        #expect(v1.attenuationDurationThresholds == [50, 70])
        let m = try NodeBus.domain(GaendDataMapping(reportTypeWhenMissing: 2))
        #expect(m.reportTypeWhenMissing == .confirmedClinicalDiagnosis)
        #expect(throws: NodeError.self) { try NodeBus.domain(GaendDataMapping(reportTypeWhenMissing: 0)) }
        #expect(throws: NodeError.self) { try NodeBus.domain(GaendDataMapping(daysSinceOnsetToInfectiousness: [0: 3])) }
        // What GetDiagnosisKeysDataMapping returns reads back as the same mapping.
        let full = try NodeBus.domain(GaendDataMapping(daysSinceOnsetToInfectiousness: [-1: 1, 0: 2], reportTypeWhenMissing: 3,
                                                       infectiousnessWhenDaysSinceOnsetMissing: 0))
        #expect(try NodeBus.domain(NodeBus.wire(full)) == full)
    }

    @Test("scanning that hears nothing after a controller restart is said as scanning-silent, beside the controller's own state, until it hears again")
    func scanningSilentCondition() throws {
        let dir = try TempStoreDir()
        let (node, _) = try makeNode(dir)
        var f = NodeStatusBoard.Facts()
        f.clockUsable = true
        f.radio.controller = .active
        #expect(node.conditions(f, enabled: true) == [.active])
        f.radio.scanRecovery = RadioOwner.ScanRecovery(reason: "scans empty", since: 100, attempts: 2, failures: 1, nextAttempt: 700)
        #expect(node.conditions(f, enabled: true) == [.scanningSilent])
        // A restart whose reconnect fails leaves the controller in error: both are said.
        f.radio.controller = .error
        #expect(node.conditions(f, enabled: true).map(NodeBus.wire) == ["controller-error", "scanning-silent"])
        f.radio.scanRecovery = nil
        #expect(node.conditions(f, enabled: true) == [.controllerError])
    }

    @Test("node errors and conditions become gaend's D-Bus names and Status strings only at the edge")
    func errorNames() {
        let e = NodeBus.wireError(NodeError.busy("matching")) as? DBusNamedError
        #expect(e == DBusNamedError(name: "org.gaend.Error.Busy", message: "matching"))
        #expect((NodeBus.wireError(NodeError.invalidArgs("x")) as? DBusNamedError)?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect((NodeBus.wireError(NodeError.storage("disk")) as? DBusNamedError)?.name == GaendInterfaces.ErrorName.storageError)
        #expect(NodeBus.wireError(CancellationError()) is CancellationError)
        // Each condition has its own Status string, and every documented string is one.
        let strings = NodeCondition.allCases.map(NodeBus.wire)
        #expect(Set(strings).count == NodeCondition.allCases.count)
        #expect(Set(strings) == Set(GaendStatus.all))
    }
}

extension GaenNode {
    /// The research export as CSV text (tests).
    func exportCSV(from: Double, to: Double) throws -> String {
        var out = Data()
        _ = try research.exportSightings(from: from, to: to, format: "csv") { out.append($0) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Says through `signal` whether the matching of `token`'s files succeeded, as the node's
/// events report it to the D-Bus edge.
private struct MatchingEnds: NodeObserver {
    let token: String
    let signal: AsyncStream<Bool>.Continuation
    func statusChanged() async {}
    func scanFinished(_ scan: Scan) async {}
    func matchingFinished(token: String, _ result: MatchingResult) async {
        guard token == self.token else { return }
        if case .success = result { signal.yield(true) } else { signal.yield(false) }
    }
}
