import DBusCore
import Foundation
import GaendAPI
import Testing

/// The API edge: every method of gaend's tables is a typed method whose request and reply
/// types carry the arguments (written once), and whose encoders and decoders agree.
@Suite("gaend's typed methods and configurations")
struct GaendMethodsTests {
    typealias EN = GaendExposureNotification
    typealias R = GaendResearch

    struct Typed {
        var interface: String
        var name: String
        var inArgs: [DBusArgument]
        var outArgs: [DBusArgument]
        init<M: GaendMethod>(_ m: M.Type) {
            interface = M.interface
            name = M.name
            inArgs = M.Request.arguments
            outArgs = M.Reply.arguments
        }
    }

    static let typed: [Typed] = [
        Typed(EN.Start.self), Typed(EN.Stop.self), Typed(EN.GetTemporaryExposureKeyHistory.self),
        Typed(EN.ProvideDiagnosisKeys.self), Typed(EN.GetExposureWindows.self), Typed(EN.GetDailySummaries.self),
        Typed(EN.SetDiagnosisKeysDataMapping.self), Typed(EN.GetDiagnosisKeysDataMapping.self), Typed(EN.GetExposureSummary.self),
        Typed(R.ExportSightings.self), Typed(R.AddMarker.self), Typed(R.GetMarkers.self), Typed(R.SetCalibration.self),
    ]

    @Test("each table method and signal is a typed message with the same arguments, and none is left out")
    func tablesAreTheTypedMessages() {
        var declared = 0
        for table in GaendInterfaces.all {
            for m in table.methods {
                declared += 1
                let t = Self.typed.first { $0.interface == table.name && $0.name == m.name }
                #expect(t != nil, "\(table.name).\(m.name) has no typed method")
                #expect(t?.inArgs == m.inArgs && t?.outArgs == m.outArgs, "\(m.name)")
            }
        }
        #expect(declared == Self.typed.count)
        #expect(GaendInterfaces.exposureNotification.signals == [DBusSignalDecl(GaendExposureStateUpdate.self, since: 1)])
        #expect(GaendInterfaces.research.signals == [DBusSignalDecl(GaendScanFinished.self, since: 1),
                                                     DBusSignalDecl(GaendScanRecorded.self, since: 2)])
        #expect(GaendExposureStateUpdate.interface == GaendInterfaces.exposureNotification.name)
        #expect(GaendScanFinished.interface == GaendInterfaces.research.name)
        #expect(GaendScanRecorded.interface == GaendInterfaces.research.name)
    }

    /// Encodes `message`, checks the declared signature, decodes it back.
    func roundTrip<T: GaendMessage & Equatable>(_ message: T) throws {
        #expect(DBusValue.signature(of: message.args) == T.signature, "\(T.self)")
        #expect(try T(args: message.args) == message)
    }

    @Test("every request and reply encodes its declared signature and decodes to itself")
    func messagesRoundTrip() throws {
        try roundTrip(GaendNoArguments())
        try roundTrip(EN.GetTemporaryExposureKeyHistory.Reply(keys: [Samples.key]))
        try roundTrip(EN.ProvideDiagnosisKeys.Reply(keys: 7))
        try roundTrip(EN.GetExposureWindows.Reply(windows: [Samples.window]))
        try roundTrip(EN.GetDailySummaries.Request(config: GaendDailySummariesConfig(
            attenuationBucketThresholdsDb: [30, 50, 70], attenuationBucketWeights: [1, 1, 0.5, 0], infectiousnessWeights: [1: 1, 2: 1.5],
            reportTypeWeights: [1: 1, 3: 0.5], daysSinceExposureThreshold: 14, minimumWindowScore: 0.5)))
        try roundTrip(EN.GetDailySummaries.Reply(summaries: [Samples.summary]))
        try roundTrip(EN.Mapping(mapping: GaendDataMapping(daysSinceOnsetToInfectiousness: [-2: 1, 0: 2], reportTypeWhenMissing: 1,
                                                            infectiousnessWhenDaysSinceOnsetMissing: 1)))
        try roundTrip(EN.GetExposureSummary.Request(config: GaendExposureConfigurationV1(
            attenuationDurationThresholds: [50, 70], minimumRiskScore: 1, attenuationScores: [1, 2, 3, 4, 5, 6, 7, 8])))
        try roundTrip(EN.GetExposureSummary.Reply(summary: Samples.v1))
        try roundTrip(R.ExportSightings.Reply(rows: 3))
        try roundTrip(R.AddMarker.Request(time: 1_700_000_000_000, label: "seat 3", distance: 1.5, note: "n"))
        try roundTrip(R.AddMarker.Reply(id: 9))
        try roundTrip(R.GetMarkers.Request(from: 0, to: 1))
        try roundTrip(R.GetMarkers.Reply(markers: [Samples.marker]))
        try roundTrip(R.SetCalibration.Request(txPower: -30, rssiCorrection: 5, confidence: 2))
        try roundTrip(GaendExposureStateUpdate(token: "t", matchedKeys: 1, windows: 2, error: ""))
        try roundTrip(GaendScanFinished(start: 1, end: 2, sightings: [Samples.sighting]))
        // Requests holding descriptors (not Equatable): the signature and the fields.
        let fd = try DBusUnixFD(duplicating: 0)
        let provide = EN.ProvideDiagnosisKeys.Request(files: [fd, fd], token: "tok")
        #expect(DBusValue.signature(of: provide.args) == "ahs")
        let back = try EN.ProvideDiagnosisKeys.Request(args: provide.args)
        #expect(back.files.count == 2 && back.token == "tok")
        let export = R.ExportSightings.Request(fd: fd, from: 1, to: 2, format: "csv")
        #expect(DBusValue.signature(of: export.args) == "hxxs")
        let e = try R.ExportSightings.Request(args: export.args)
        #expect(e.from == 1 && e.to == 2 && e.format == "csv")
    }

    @Test("Research1's properties are one typed value: its encoder writes each table property with the table's type, its decoder reads it back")
    func researchProperties() throws {
        let p = GaendResearchProperties(txPower: -30, rssiCorrection: 5, calibrationConfidence: 2, node: "board-3", site: "bus 7")
        let table = GaendInterfaces.research.properties
        #expect(Set(table.map(\.name)) == Set(GaendResearchProperties.names))
        #expect(Set(p.values.keys) == Set(GaendResearchProperties.names))
        for decl in table { #expect(try p.value(decl.name).type.signature == decl.signature, "\(decl.name)") }
        #expect(try GaendResearchProperties(properties: p.values) == p)
        var wrong = p.values
        wrong["TxPower"] = .int32(-30)
        #expect(throws: GaendWireError.wrongType(what: "TxPower", expected: "n", actual: "i")) { try GaendResearchProperties(properties: wrong) }
    }

    @Test("ExposureNotification1's properties are one typed value: the table's properties are its list, its encoder writes each with the table's type, its decoder reads it back (and an older gaend's reply)")
    func exposureProperties() throws {
        var p = GaendExposureProperties()
        p.version = "0.1.0"; p.enabled = true; p.status = ["active"]; p.trialMode = true
        p.advertisementCount = 7; p.scanCount = 3; p.sightingCount = 11; p.lastScanTime = 1_700_000_000_000
        p.provideDiagnosisKeysRemaining = 6; p.quarantinedRecords = 1; p.droppedScans = 2; p.droppedSightings = 3
        p.clockSync = "synchronised (adjtimex)"; p.advertisingOnAir = true; p.scanningOnAir = false; p.radioFailures = 4
        p.reportsIgnored = 5; p.reportsDropped = 0; p.controller = GaendController(name: "hci0", address: "00:1A:7D:DA:71:13", manufacturer: 2)
        p.advertisingAddress = "5A:01:02:03:04:05"; p.currentRPI = Data(repeating: 9, count: 16)
        p.txPower = -30; p.rssiCorrection = 5; p.calibrationConfidence = 2; p.node = "board-3"; p.site = "bus 7"; p.matching = false
        p.rotationCount = 8; p.failedRotations = 1; p.secondsOnAir = 3_600; p.secondsOffAir = 12; p.watchdogFeeds = 240
        p.matchingRuns = 2; p.matchingTime = 830; p.keyFiles = 3; p.exposureWindows = 4; p.storeBytes = 1 << 20
        let table = GaendInterfaces.exposureNotification.properties
        #expect(table.map(\.name) == GaendExposureProperties.names)
        #expect(Set(p.values.keys) == Set(table.map(\.name)))
        for decl in table { #expect(try p.value(decl.name).type.signature == decl.signature, "\(decl.name)") }
        #expect(try GaendExposureProperties(properties: p.values) == p)
        // PropertiesChanged carries exactly the properties the table says emit changes.
        #expect(GaendExposureProperties.changing == table.filter { $0.emitsChanged == .true }.map(\.name))
        #expect(!GaendExposureProperties.changing.contains("Version") && GaendExposureProperties.changing.contains("Matching"))

        // Nothing on air: the empty address and RPI are "none" both ways.
        var off = p
        off.advertisingAddress = nil; off.currentRPI = nil
        #expect(off.values["AdvertisingAddress"] == .string("") && off.values["CurrentRpi"] == .bytes(Data()))
        #expect(try GaendExposureProperties(properties: off.values) == off)

        // A gaend of revision 1 lacks the later properties: nil, not an error.
        let revision1 = p.values.filter { name, _ in (table.first { $0.name == name }?.since ?? 99) == 1 }
        let old = try GaendExposureProperties(properties: revision1)
        #expect(old.scanCount == 3 && old.quarantinedRecords == nil && old.controller == nil && old.matching == nil)
        var missing = p.values
        missing["ScanCount"] = nil
        #expect(throws: GaendWireError.wrongType(what: "ScanCount", expected: "t", actual: "nothing")) { try GaendExposureProperties(properties: missing) }
        var wrong = p.values
        wrong["RadioFailures"] = .uint32(4)
        #expect(throws: GaendWireError.wrongType(what: "RadioFailures", expected: "t", actual: "u")) { try GaendExposureProperties(properties: wrong) }
        // A property a newer gaend adds is ignored.
        var newer = p.values
        newer["SomethingNew"] = .string("x")
        #expect(try GaendExposureProperties(properties: newer) == p)
    }

    @Test("a request of the wrong shape is refused naming its arguments")
    func wrongArguments() {
        #expect(throws: GaendWireError.wrongType(what: "arguments (from, to)", expected: "xx", actual: "xs")) {
            try R.GetMarkers.Request(args: [.int64(0), .string("1")])
        }
        #expect(throws: GaendWireError.wrongType(what: "arguments (keys)", expected: "u", actual: "")) {
            try EN.ProvideDiagnosisKeys.Reply(args: [])
        }
    }

    @Test("config decoders name the key and the type they expect, and refuse unknown keys")
    func configErrors() throws {
        #expect(throws: GaendWireError.wrongType(what: "config key 'attenuation_bucket_thresholds_db'", expected: "ai", actual: "s")) {
            try GaendDailySummariesConfig(dbus: .vardict(["attenuation_bucket_thresholds_db": .string("30,50,70")]))
        }
        #expect(throws: GaendWireError.wrongType(what: "config key 'attenuation_bucket_weights'", expected: "ad", actual: "ai")) {
            try GaendDailySummariesConfig(dbus: .vardict(["attenuation_bucket_weights": .array(.int32, [.int32(1)])]))
        }
        #expect(throws: GaendWireError.wrongType(what: "config key 'minimum_window_score'", expected: "d", actual: "i")) {
            try GaendDailySummariesConfig(dbus: .vardict(["minimum_window_score": .int32(1)]))
        }
        #expect(throws: GaendWireError.wrongType(what: "config key 'report_type_weights'", expected: "a{id}", actual: "a{is}")) {
            try GaendDailySummariesConfig(dbus: .vardict(["report_type_weights": .dict(key: .int32, value: .string, [
                DBusDictEntry(key: .int32(1), value: .string("x"))])]))
        }
        #expect(throws: GaendWireError.unknownKey(what: "config", key: "colour", known: GaendDailySummariesConfig.keys)) {
            try GaendDailySummariesConfig(dbus: .vardict(["colour": .string("red")]))
        }
        #expect(throws: GaendWireError.wrongType(what: "config key 'minimum_risk_score'", expected: "i", actual: "s")) {
            try GaendExposureConfigurationV1(dbus: .vardict(["minimum_risk_score": .string("1")]))
        }
        #expect(throws: GaendWireError.wrongType(what: "mapping key 'days_since_onset_to_infectiousness'", expected: "a{ii}", actual: "ai")) {
            try GaendDataMapping(dbus: .vardict(["days_since_onset_to_infectiousness": .array(.int32, [.int32(1)])]))
        }
        #expect(throws: GaendWireError.wrongType(what: "mapping", expected: "a{sv}", actual: "s")) {
            try GaendDataMapping(dbus: .string("x"))
        }
        #expect("\(GaendWireError.unknownKey(what: "mapping", key: "x", known: ["a", "b"]))" == "mapping: unknown key 'x' (known: a, b)")
        // Integers of any D-Bus integer type that fits, and dict values in variants, are read.
        let lenient = try GaendDataMapping(dbus: .vardict([
            "report_type_when_missing": .int64(2),
            "days_since_onset_to_infectiousness": .dict(key: .int32, value: .variant, [DBusDictEntry(key: .int32(0), value: .variant(.int32(2)))]),
        ]))
        #expect(lenient == GaendDataMapping(daysSinceOnsetToInfectiousness: [0: 2], reportTypeWhenMissing: 2))
        #expect(throws: GaendWireError.wrongType(what: "mapping key 'report_type_when_missing'", expected: "i", actual: "x")) {
            try GaendDataMapping(dbus: .vardict(["report_type_when_missing": .int64(Int64(Int32.max) + 1)]))
        }
    }
}
