import BLEDaemon
import DBusCore
import GaendAPI
import Foundation
import GaendClient
import Testing

/// Sample values of every wire type.
enum Samples {
    static let key = GaendTemporaryExposureKey(keyData: Data(repeating: 0xAB, count: 16),
                                               rollingStartIntervalNumber: 2_642_976, rollingPeriod: 144)
    static let window = GaendExposureWindow(
        dateMillisSinceEpoch: 1_585_785_600_000, reportType: 1, infectiousness: 2, calibrationConfidence: 3,
        scanInstances: [GaendScanInstance(typicalAttenuationDb: 55, minAttenuationDb: 50, secondsSinceLastScan: 300),
                        GaendScanInstance(typicalAttenuationDb: 60, minAttenuationDb: 58, secondsSinceLastScan: 240)])
    static let summary = GaendDailySummary(
        daysSinceEpoch: 18_354,
        summaryData: GaendSummaryData(maximumScore: 900, scoreSum: 1500, weightedDurationSum: 1500),
        reportTypeSummaries: [1: GaendSummaryData(maximumScore: 900, scoreSum: 1500, weightedDurationSum: 1500)])
    static let v1 = GaendExposureSummaryV1(daysSinceLastExposure: 2, matchedKeyCount: 1, maximumRiskScore: 8,
                                           summationRiskScore: 8, attenuationDurationsInMinutes: [5, 10, 0])
    static let sighting = GaendSighting(time: 1_700_000_000_123, rpi: Data(repeating: 1, count: 16),
                                        aem: Data([1, 2, 3, 4]), rssi: -71)
    static let marker = GaendMarker(id: 7, time: 1_700_000_000_000, label: "seat 3", distance: 1.5, note: "")
}

/// A stand-in daemon with both real tables bound to canned handlers, to check the client
/// against the contract (the node implements the real handlers).
final class CannedDaemon: Sendable {
    let connection: BusConnection
    let service: BusService
    private let task: Task<Void, Never>

    static let controller = GaendController(name: "hci0", address: "DC:A6:32:01:02:03", manufacturer: 0x0131,
                                            manufacturerName: "Cypress Semiconductor", hciVersion: 9, hciSubversion: 0x0123,
                                            lmpVersion: 9, lmpSubversion: 0x6119)
    static let rpi = Data((0..<16).map { UInt8($0 * 17) })

    /// Owns `name`; `sightings` tells instances apart in tests with several; `revision` makes
    /// an older daemon (ExposureNotification1 without the later properties).
    init(address: String, name: String = GaendBus.busName, sightings: UInt64 = 345, revision: Int? = nil) async throws {
        connection = try BusConnection.connect(.address(address))
        let service = BusService(connection: connection, fallbackErrorName: GaendInterfaces.ErrorName.failed)
        self.service = service
        var table = GaendInterfaces.exposureNotification
        if let revision {
            table.revision = revision
            table.properties.removeAll { $0.since > revision }
        }
        let en = table
        typealias EN = GaendExposureNotification
        var on = GaendHandlers(interface: en.name)
        on.on(EN.Start.self) { _, _ in .init() }
        on.on(EN.Stop.self) { _, _ in .init() }
        on.on(EN.SetDiagnosisKeysDataMapping.self) { _, _ in .init() }
        on.on(EN.GetTemporaryExposureKeyHistory.self) { _, call in
            guard try await call.callerUID() == 0 else {
                throw DBusNamedError(name: GaendInterfaces.ErrorName.notAuthorized, message: "root only")
            }
            return .init(keys: [Samples.key])
        }
        on.on(EN.ProvideDiagnosisKeys.self) { request, _ in
            var keys: UInt32 = 0
            for f in request.files {
                guard let text = try? readAll(f), text.hasPrefix("PK") else {
                    throw DBusNamedError(name: GaendInterfaces.ErrorName.invalidKeyFile, message: "file is not a zip")
                }
                keys += 1
            }
            let token = request.token, n = keys
            Task {
                try? await service.emit(path: GaendBus.objectPath, interface: en.name, signal: GaendExposureStateUpdate.member,
                                        GaendExposureStateUpdate(token: token, matchedKeys: n, windows: 1, error: "").args)
            }
            return .init(keys: keys)
        }
        on.on(EN.GetExposureWindows.self) { _, _ in .init(windows: [Samples.window]) }
        on.on(EN.GetDailySummaries.self) { request, _ in
            guard request.config.attenuationBucketThresholdsDb != nil else {
                throw DBusNamedError.invalidArgs("attenuation_bucket_thresholds_db is required")
            }
            return .init(summaries: [Samples.summary])
        }
        on.on(EN.GetDiagnosisKeysDataMapping.self) { _, _ in .init(mapping: GaendDataMapping(reportTypeWhenMissing: 1)) }
        on.on(EN.GetExposureSummary.self) { _, _ in .init(summary: Samples.v1) }
        let methods = on.methods
        var getters: [String: DBusPropertyGetter] = [
            "Version": { .string("0.1.0") }, "Enabled": { .boolean(true) },
            "Status": { .array(.string, [.string(GaendStatus.active)]) }, "TrialMode": { .boolean(false) },
            "AdvertisementCount": { .uint64(3) }, "ScanCount": { .uint64(12) }, "SightingCount": { .uint64(sightings) },
            "LastScanTime": { .int64(1_700_000_000_000) }, "ProvideDiagnosisKeysRemaining": { .uint32(6) },
            "QuarantinedRecords": { .uint32(1) }, "DroppedScans": { .uint64(2) }, "DroppedSightings": { .uint64(30) },
            "ClockSync": { .string("synchronized (kernel NTP state)") },
            "AdvertisingOnAir": { .boolean(true) }, "ScanningOnAir": { .boolean(false) }, "RadioFailures": { .uint64(2) },
            "ReportsIgnored": { .uint64(40) }, "ReportsDropped": { .uint64(0) },
            "Controller": { Self.controller.dbusValue }, "AdvertisingAddress": { .string("3A:11:22:33:44:55") },
            "CurrentRpi": { .bytes(Self.rpi) }, "TxPower": { .int16(-30) }, "RssiCorrection": { .int16(5) },
            "CalibrationConfidence": { .int32(2) }, "Node": { .string("board-3") }, "Site": { .string("bus 7") },
            "Matching": { .boolean(true) },
        ]
        for key in getters.keys where !en.properties.contains(where: { $0.name == key }) { getters[key] = nil }
        let research = GaendInterfaces.research
        typealias R = GaendResearch
        var onResearch = GaendHandlers(interface: research.name)
        onResearch.on(R.ExportSightings.self) { request, _ in
            guard let fd = request.fd.take() else { throw DBusNamedError.invalidArgs("fd") }
            let out = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            try out.write(contentsOf: Data("time,rpi,aem,rssi,scan_start,scan_end\n".utf8))
            return .init(rows: 0)
        }
        onResearch.on(R.AddMarker.self) { _, _ in .init(id: Samples.marker.id) }
        onResearch.on(R.GetMarkers.self) { _, _ in .init(markers: [Samples.marker]) }
        onResearch.on(R.SetCalibration.self) { _, _ in
            // As gaend sends a scan (ScanRecorded, then ScanFinished), then a scan as an
            // older gaend sends it (ScanFinished alone).
            var addressed = Samples.sighting
            addressed.address = "3A:11:22:33:44:55"
            let scan = GaendScanFinished(start: 1, end: 2, sightings: [addressed])
            try await service.emit(path: GaendBus.objectPath, interface: research.name, signal: GaendScanRecorded.member,
                                   GaendScanRecorded(scan).args)
            try await service.emit(path: GaendBus.objectPath, interface: research.name, signal: GaendScanFinished.member, scan.args)
            try await service.emit(path: GaendBus.objectPath, interface: research.name, signal: GaendScanFinished.member,
                                   GaendScanFinished(start: 3, end: 4, sightings: [Samples.sighting]).args)
            return .init()
        }
        let researchImpl = try DBusInterfaceImplementation(research, methods: onResearch.methods,
                                                           getters: ["TxPower": { .int16(-30) }, "RssiCorrection": { .int16(5) }, "CalibrationConfidence": { .int32(2) },
                                                                     "Node": { .string("board-3") }, "Site": { .string("bus 7") }])
        try service.export(path: GaendBus.objectPath, [
            try DBusInterfaceImplementation(en, methods: methods, getters: getters), researchImpl,
        ])
        task = Task { await service.run() }
        try await connection.requestName(name)
    }

    func close() {
        connection.close()
        task.cancel()
    }
}

@Suite("Typed gaend client against the contract tables", .serialized)
struct GaendClientTests {
    @Test("every wire value round-trips through its D-Bus value and checks its shape")
    func wireRoundTrips() throws {
        #expect(try GaendTemporaryExposureKey(dbus: Samples.key.dbusValue) == Samples.key)
        #expect(try GaendExposureWindow(dbus: Samples.window.dbusValue) == Samples.window)
        #expect(try GaendDailySummary(dbus: Samples.summary.dbusValue) == Samples.summary)
        #expect(try GaendExposureSummaryV1(dbus: Samples.v1.dbusValue) == Samples.v1)
        #expect(try GaendSighting(dbus: Samples.sighting.dbusValue) == Samples.sighting)
        #expect(try GaendMarker(dbus: Samples.marker.dbusValue) == Samples.marker)
        // The wire types are exactly the tables' signatures.
        let en = GaendInterfaces.exposureNotification, research = GaendInterfaces.research
        #expect(en.method("GetTemporaryExposureKeyHistory")?.outSignature == "a" + GaendTemporaryExposureKey.signature)
        #expect(en.method("GetExposureWindows")?.outSignature == "a" + GaendExposureWindow.signature)
        #expect(en.method("GetDailySummaries")?.outSignature == "a" + GaendDailySummary.signature)
        #expect(en.method("GetExposureSummary")?.outSignature == GaendExposureSummaryV1.signature)
        #expect(research.method("GetMarkers")?.outSignature == "a" + GaendMarker.signature)
        #expect(research.signal("ScanFinished")?.signature == DBusValue.signature(of: GaendScanFinished(start: 0, end: 0, sightings: []).args))
        #expect(research.signal("ScanRecorded")?.signature
                == DBusValue.signature(of: GaendScanRecorded(GaendScanFinished(start: 0, end: 0, sightings: [])).args))
        var withAddress = Samples.sighting
        withAddress.address = "3A:11:22:33:44:55"
        let recorded = GaendScanFinished(start: 5, end: 6, sightings: [withAddress, Samples.sighting])
        // The empty address stands for "not known" and reads back as nil; ScanFinished has none.
        #expect(try GaendScanRecorded(args: GaendScanRecorded(recorded).args).scan == recorded)
        #expect(try GaendScanFinished(args: recorded.args) == GaendScanFinished(start: 5, end: 6, sightings: [Samples.sighting, Samples.sighting]))
        #expect(throws: GaendWireError.self) { try GaendScanRecorded(args: recorded.args) }
        #expect(en.signal("ExposureStateUpdated")?.signature
                == DBusValue.signature(of: GaendExposureStateUpdate(token: "", matchedKeys: 0, windows: 0, error: "").args))

        var short = Samples.sighting
        short.rpi = Data(count: 15)
        #expect(throws: GaendWireError.wrongLength(what: "rpi", expected: 16, actual: 15)) {
            try GaendSighting(dbus: short.dbusValue)
        }
        #expect(throws: GaendWireError.wrongType(what: "exposure window", expected: GaendExposureWindow.signature, actual: "s")) {
            try GaendExposureWindow(dbus: .string("x"))
        }
        #expect(!"\(Samples.key)".contains("ab"), "a TEK's description must not show the key")
    }

    @Test("Controller round-trips, a missing controller has only its name, unknown keys are ignored, a wrong type is named")
    func controllerProperty() throws {
        #expect(try GaendController(dbus: CannedDaemon.controller.dbusValue) == CannedDaemon.controller)
        let bare = GaendController(name: "tcp:127.0.0.1:9000")
        #expect(bare.dbusValue == .vardict(["name": .string("tcp:127.0.0.1:9000")]))
        #expect(try GaendController(dbus: bare.dbusValue) == bare)
        #expect(try GaendController(dbus: .vardict(["name": .string("hci1"), "future_key": .int32(1)])) == GaendController(name: "hci1"))
        #expect(throws: GaendWireError.wrongType(what: "Controller.manufacturer", expected: "q", actual: "u")) {
            try GaendController(dbus: .vardict(["name": .string("hci1"), "manufacturer": .uint32(2)]))
        }
        #expect(throws: GaendWireError.wrongType(what: "Controller.name", expected: "s", actual: "nothing")) {
            try GaendController(dbus: .vardict([:]))
        }
    }

    @Test("an older gaend (revision 2) gives nil field checks, not an error")
    func olderDaemon() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address, revision: 2)
        defer { daemon.close() }
        let client = GaendClient(bus: try BusClient(bus: .address(bus.address), timeout: .seconds(10)))
        defer { client.bus.close() }
        let status = try await client.status()
        #expect(status.advertisingOnAir == true && status.sightingCount == 345)
        #expect(status.controller == nil && status.advertisingAddress == nil && status.currentRPI == nil && status.txPower == nil
                && status.rssiCorrection == nil && status.calibrationConfidence == nil && status.node == nil && status.site == nil
                && status.matching == nil)
    }

    @Test("the typed client calls every method, reads the properties and receives both signals")
    func typedClient() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address)
        defer { daemon.close() }
        let client = GaendClient(bus: try BusClient(bus: .address(bus.address), timeout: .seconds(10)))
        defer { client.bus.close() }

        let status = try await client.status()
        #expect(status.enabled && status.status == ["active"] && status.sightingCount == 345)
        #expect(status.quarantinedRecords == 1 && status.droppedScans == 2 && status.droppedSightings == 30)
        #expect(status.clockSync == "synchronized (kernel NTP state)")
        #expect(status.advertisingOnAir == true && status.scanningOnAir == false && status.radioFailures == 2
                && status.reportsIgnored == 40 && status.reportsDropped == 0)
        #expect(status.controller == CannedDaemon.controller && status.advertisingAddress == "3A:11:22:33:44:55")
        #expect(status.currentRPI == CannedDaemon.rpi && status.txPower == -30 && status.rssiCorrection == 5
                && status.calibrationConfidence == 2 && status.node == "board-3" && status.site == "bus 7" && status.matching == true)
        try await client.start()
        try await client.stop()
        #expect(try await client.temporaryExposureKeyHistory() == [Samples.key])
        #expect(try await client.exposureWindows() == [Samples.window])
        let summaries = try await client.dailySummaries(config: GaendDailySummariesConfig(
            attenuationBucketThresholdsDb: [30, 50, 70], attenuationBucketWeights: [1, 1, 0.5, 0]))
        #expect(summaries == [Samples.summary])
        await #expect(throws: DBusNamedError.invalidArgs("attenuation_bucket_thresholds_db is required")) {
            _ = try await client.dailySummaries(config: GaendDailySummariesConfig())
        }
        #expect(try await client.exposureSummary(config: GaendExposureConfigurationV1()) == Samples.v1)
        #expect(try await client.diagnosisKeysDataMapping() == GaendDataMapping(reportTypeWhenMissing: 1))
        try await client.setDiagnosisKeysDataMapping(GaendDataMapping(reportTypeWhenMissing: 2))

        let updates = try await client.exposureStateUpdates()
        var pipeFDs: [Int32] = [-1, -1]
        #expect(pipe(&pipeFDs) == 0)
        let w = FileHandle(fileDescriptor: pipeFDs[1], closeOnDealloc: true)
        try w.write(contentsOf: Data("PK\u{3}\u{4}".utf8))
        try w.close()
        let keys = try await client.provideDiagnosisKeys(files: [DBusUnixFD(owning: pipeFDs[0])], token: "batch-1")
        #expect(keys == 1)
        var it = updates.makeAsyncIterator()
        #expect(await it.next() == GaendExposureStateUpdate(token: "batch-1", matchedKeys: 1, windows: 1, error: ""))

        #expect(pipe(&pipeFDs) == 0)
        close(pipeFDs[1])
        let e = await namedError { _ = try await client.provideDiagnosisKeys(files: [DBusUnixFD(owning: pipeFDs[0])], token: "") }
        #expect(e?.name == "org.gaend.Error.InvalidKeyFile")

        #expect(try await client.calibration() == GaendCalibration(txPower: -30, rssiCorrection: 5, calibrationConfidence: 2))
        let labels = try await client.labels()
        #expect(labels.node == "board-3" && labels.site == "bus 7")
        #expect(try await client.addMarker(time: 0, label: "seat 3", distance: 1.5, note: "") == 7)
        #expect(try await client.markers(from: 0, to: Int64.max) == [Samples.marker])
        let scans = try await client.scanFinished()
        try await client.setCalibration(txPower: -30, rssiCorrection: 5, confidence: 2)
        var scanIt = scans.makeAsyncIterator()
        var addressed = Samples.sighting
        addressed.address = "3A:11:22:33:44:55"
        // Each scan once, with addresses from ScanRecorded; without them from an older daemon.
        #expect(await scanIt.next() == GaendScanFinished(start: 1, end: 2, sightings: [addressed]))
        #expect(await scanIt.next() == GaendScanFinished(start: 3, end: 4, sightings: [Samples.sighting]))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-export-\(UUID().uuidString).csv")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        _ = try await client.exportSightings(to: try DBusUnixFD(duplicating: handle.fileDescriptor), from: 0, to: 1, format: "csv")
        try handle.close()
        #expect(try String(contentsOf: file, encoding: .utf8).hasPrefix("time,rpi,aem,rssi"))
    }
}
