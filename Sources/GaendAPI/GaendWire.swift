#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBusCore

/// The typed values of gaend's D-Bus API (docs/dbus.md), each with one encoder (`dbusValue`)
/// and one throwing decoder (`init(dbus:)`), shared by the daemon and the client so both
/// sides agree on every field. Times are milliseconds since the Unix epoch, UTC.
public protocol GaendWireValue: Sendable, Equatable {
    static var type: DBusType { get }
    var dbusValue: DBusValue { get }
    init(dbus value: DBusValue) throws(GaendWireError)
}

extension GaendWireValue {
    public static var signature: String { type.signature }

    /// An array of values (`aT`).
    public static func array(_ items: [Self]) -> DBusValue {
        .array(type, items.map(\.dbusValue))
    }

    /// Decodes an array of values (`aT`).
    public static func decodeArray(_ value: DBusValue, what: String) throws(GaendWireError) -> [Self] {
        guard case .array(let element, let items) = value, element == type else {
            throw .wrongType(what: what, expected: "a" + signature, actual: value.type.signature)
        }
        var out: [Self] = []
        out.reserveCapacity(items.count)
        for item in items { out.append(try Self(dbus: item)) }
        return out
    }
}

public enum GaendWireError: Error, Sendable, Equatable, CustomStringConvertible {
    case wrongType(what: String, expected: String, actual: String)
    case wrongLength(what: String, expected: Int, actual: Int)
    /// A key an `a{sv}` configuration does not have.
    case unknownKey(what: String, key: String, known: [String])

    public var description: String {
        switch self {
        case .wrongType(let w, let e, let a): "\(w): expected D-Bus type '\(e)', got '\(a)'"
        case .wrongLength(let w, let e, let a): "\(w): expected \(e) bytes, got \(a)"
        case .unknownKey(let w, let k, let known): "\(w): unknown key '\(k)' (known: \(known.joined(separator: ", ")))"
        }
    }
}

/// Field extraction for decoders: each throws naming the field and both types.
extension DBusValue {
    public func wireStruct(_ what: String, _ type: DBusType) throws(GaendWireError) -> [DBusValue] {
        guard self.type == type, case .structure(let fields) = self else {
            throw .wrongType(what: what, expected: type.signature, actual: self.type.signature)
        }
        return fields
    }
    public func wireInt16(_ what: String) throws(GaendWireError) -> Int16 {
        guard case .int16(let v) = self else { throw .wrongType(what: what, expected: "n", actual: type.signature) }
        return v
    }
    public func wireInt32(_ what: String) throws(GaendWireError) -> Int32 {
        guard case .int32(let v) = self else { throw .wrongType(what: what, expected: "i", actual: type.signature) }
        return v
    }
    public func wireUInt32(_ what: String) throws(GaendWireError) -> UInt32 {
        guard case .uint32(let v) = self else { throw .wrongType(what: what, expected: "u", actual: type.signature) }
        return v
    }
    public func wireInt64(_ what: String) throws(GaendWireError) -> Int64 {
        guard case .int64(let v) = self else { throw .wrongType(what: what, expected: "x", actual: type.signature) }
        return v
    }
    public func wireUInt64(_ what: String) throws(GaendWireError) -> UInt64 {
        guard case .uint64(let v) = self else { throw .wrongType(what: what, expected: "t", actual: type.signature) }
        return v
    }
    public func wireDouble(_ what: String) throws(GaendWireError) -> Double {
        guard case .double(let v) = self else { throw .wrongType(what: what, expected: "d", actual: type.signature) }
        return v
    }
    public func wireString(_ what: String) throws(GaendWireError) -> String {
        guard case .string(let v) = self else { throw .wrongType(what: what, expected: "s", actual: type.signature) }
        return v
    }
    public func wireBytes(_ what: String, count: Int? = nil) throws(GaendWireError) -> Data {
        guard let d = bytesValue, type == .array(.byte) else {
            throw .wrongType(what: what, expected: "ay", actual: type.signature)
        }
        if let count, d.count != count { throw .wrongLength(what: what, expected: count, actual: d.count) }
        return d
    }
}

/// One of the node's own TEKs (`(ayuu)`, GetTemporaryExposureKeyHistory). Secret: its
/// description never shows the key.
public struct GaendTemporaryExposureKey: GaendWireValue, CustomStringConvertible {
    public var keyData: Data
    public var rollingStartIntervalNumber: UInt32
    public var rollingPeriod: UInt32

    public init(keyData: Data, rollingStartIntervalNumber: UInt32, rollingPeriod: UInt32) {
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
    }

    public static let type = DBusType.structure([.array(.byte), .uint32, .uint32])
    public var dbusValue: DBusValue {
        .structure([.bytes(keyData), .uint32(rollingStartIntervalNumber), .uint32(rollingPeriod)])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("temporary exposure key", Self.type)
        keyData = try f[0].wireBytes("key_data", count: 16)
        rollingStartIntervalNumber = try f[1].wireUInt32("rolling_start_interval_number")
        rollingPeriod = try f[2].wireUInt32("rolling_period")
    }
    public var description: String {
        "TemporaryExposureKey(<redacted>, start: \(rollingStartIntervalNumber), period: \(rollingPeriod))"
    }
}

/// `(iii)`: one scan instance of an exposure window (Android names).
public struct GaendScanInstance: GaendWireValue, Codable {
    public var typicalAttenuationDb: Int32
    public var minAttenuationDb: Int32
    public var secondsSinceLastScan: Int32

    public init(typicalAttenuationDb: Int32, minAttenuationDb: Int32, secondsSinceLastScan: Int32) {
        self.typicalAttenuationDb = typicalAttenuationDb
        self.minAttenuationDb = minAttenuationDb
        self.secondsSinceLastScan = secondsSinceLastScan
    }

    public static let type = DBusType.structure([.int32, .int32, .int32])
    public var dbusValue: DBusValue {
        .structure([.int32(typicalAttenuationDb), .int32(minAttenuationDb), .int32(secondsSinceLastScan)])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("scan instance", Self.type)
        typicalAttenuationDb = try f[0].wireInt32("typicalAttenuationDb")
        minAttenuationDb = try f[1].wireInt32("minAttenuationDb")
        secondsSinceLastScan = try f[2].wireInt32("secondsSinceLastScan")
    }
}

/// `(xiiia(iii))`: an exposure window with the Android field names (also its JSON form).
public struct GaendExposureWindow: GaendWireValue, Codable {
    public var dateMillisSinceEpoch: Int64
    public var reportType: Int32
    public var infectiousness: Int32
    public var calibrationConfidence: Int32
    public var scanInstances: [GaendScanInstance]

    public init(dateMillisSinceEpoch: Int64, reportType: Int32, infectiousness: Int32,
                calibrationConfidence: Int32, scanInstances: [GaendScanInstance]) {
        self.dateMillisSinceEpoch = dateMillisSinceEpoch
        self.reportType = reportType
        self.infectiousness = infectiousness
        self.calibrationConfidence = calibrationConfidence
        self.scanInstances = scanInstances
    }

    public static let type = DBusType.structure([.int64, .int32, .int32, .int32, .array(GaendScanInstance.type)])
    public var dbusValue: DBusValue {
        .structure([.int64(dateMillisSinceEpoch), .int32(reportType), .int32(infectiousness),
                    .int32(calibrationConfidence), GaendScanInstance.array(scanInstances)])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("exposure window", Self.type)
        dateMillisSinceEpoch = try f[0].wireInt64("dateMillisSinceEpoch")
        reportType = try f[1].wireInt32("reportType")
        infectiousness = try f[2].wireInt32("infectiousness")
        calibrationConfidence = try f[3].wireInt32("calibrationConfidence")
        scanInstances = try GaendScanInstance.decodeArray(f[4], what: "scanInstances")
    }
}

/// `(ddd)`: Android's ExposureSummaryData.
public struct GaendSummaryData: GaendWireValue, Codable {
    public var maximumScore: Double
    public var scoreSum: Double
    public var weightedDurationSum: Double

    public init(maximumScore: Double, scoreSum: Double, weightedDurationSum: Double) {
        self.maximumScore = maximumScore
        self.scoreSum = scoreSum
        self.weightedDurationSum = weightedDurationSum
    }

    public static let type = DBusType.structure([.double, .double, .double])
    public var dbusValue: DBusValue { .structure([.double(maximumScore), .double(scoreSum), .double(weightedDurationSum)]) }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("summary data", Self.type)
        maximumScore = try f[0].wireDouble("maximumScore")
        scoreSum = try f[1].wireDouble("scoreSum")
        weightedDurationSum = try f[2].wireDouble("weightedDurationSum")
    }
}

/// `(u(ddd)a{i(ddd)})`: Android's DailySummary; per-report-type data keyed by report type.
public struct GaendDailySummary: GaendWireValue, Codable {
    public var daysSinceEpoch: UInt32
    public var summaryData: GaendSummaryData
    public var reportTypeSummaries: [Int32: GaendSummaryData]

    public init(daysSinceEpoch: UInt32, summaryData: GaendSummaryData, reportTypeSummaries: [Int32: GaendSummaryData]) {
        self.daysSinceEpoch = daysSinceEpoch
        self.summaryData = summaryData
        self.reportTypeSummaries = reportTypeSummaries
    }

    public static let type = DBusType.structure([.uint32, GaendSummaryData.type, .dict(key: .int32, value: GaendSummaryData.type)])
    public var dbusValue: DBusValue {
        .structure([
            .uint32(daysSinceEpoch), summaryData.dbusValue,
            .dict(key: .int32, value: GaendSummaryData.type, reportTypeSummaries.sorted { $0.key < $1.key }.map {
                DBusDictEntry(key: .int32($0.key), value: $0.value.dbusValue)
            }),
        ])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("daily summary", Self.type)
        daysSinceEpoch = try f[0].wireUInt32("daysSinceEpoch")
        summaryData = try GaendSummaryData(dbus: f[1])
        guard case .dict(_, _, let entries) = f[2] else {
            throw .wrongType(what: "reportTypeSummaries", expected: "a{i(ddd)}", actual: f[2].type.signature)
        }
        var map: [Int32: GaendSummaryData] = [:]
        for e in entries { map[try e.key.wireInt32("report type")] = try GaendSummaryData(dbus: e.value) }
        reportTypeSummaries = map
    }
}

/// `(iiiiai)`: the v1 ExposureSummary (GetExposureSummary).
public struct GaendExposureSummaryV1: GaendWireValue, Codable {
    public var daysSinceLastExposure: Int32
    public var matchedKeyCount: Int32
    public var maximumRiskScore: Int32
    public var summationRiskScore: Int32
    public var attenuationDurationsInMinutes: [Int32]

    public init(daysSinceLastExposure: Int32, matchedKeyCount: Int32, maximumRiskScore: Int32,
                summationRiskScore: Int32, attenuationDurationsInMinutes: [Int32]) {
        self.daysSinceLastExposure = daysSinceLastExposure
        self.matchedKeyCount = matchedKeyCount
        self.maximumRiskScore = maximumRiskScore
        self.summationRiskScore = summationRiskScore
        self.attenuationDurationsInMinutes = attenuationDurationsInMinutes
    }

    public static let type = DBusType.structure([.int32, .int32, .int32, .int32, .array(.int32)])
    public var dbusValue: DBusValue {
        .structure([.int32(daysSinceLastExposure), .int32(matchedKeyCount), .int32(maximumRiskScore),
                    .int32(summationRiskScore), .array(.int32, attenuationDurationsInMinutes.map { .int32($0) })])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("exposure summary", Self.type)
        daysSinceLastExposure = try f[0].wireInt32("daysSinceLastExposure")
        matchedKeyCount = try f[1].wireInt32("matchedKeyCount")
        maximumRiskScore = try f[2].wireInt32("maximumRiskScore")
        summationRiskScore = try f[3].wireInt32("summationRiskScore")
        var minutes: [Int32] = []
        for m in f[4].arrayValue ?? [] { minutes.append(try m.wireInt32("attenuationDurationsInMinutes")) }
        attenuationDurationsInMinutes = minutes
    }
}

/// `(xayayn)`: one raw sighting (Research1.ScanFinished); `(xayayns)` with the advertiser's
/// address (Research1.ScanRecorded).
public struct GaendSighting: GaendWireValue {
    public var time: Int64
    public var rpi: Data
    public var aem: Data
    public var rssi: Int16
    /// The advertiser's random address as btmon prints it; nil when not known (ScanFinished
    /// does not carry it, and scans stored before it was kept have none).
    public var address: String?

    public init(time: Int64, rpi: Data, aem: Data, rssi: Int16, address: String? = nil) {
        self.time = time
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
        self.address = address
    }

    /// ScanRecorded's element: the sighting and its address (empty: not known).
    public static let addressedType = DBusType.structure([.int64, .array(.byte), .array(.byte), .int16, .string])
    public var addressedValue: DBusValue {
        .structure([.int64(time), .bytes(rpi), .bytes(aem), .int16(rssi), .string(address ?? "")])
    }
    public init(addressed value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("sighting", Self.addressedType)
        self.init(time: try f[0].wireInt64("time"), rpi: try f[1].wireBytes("rpi", count: 16),
                  aem: try f[2].wireBytes("aem", count: 4), rssi: try f[3].wireInt16("rssi"))
        let a = try f[4].wireString("address")
        address = a.isEmpty ? nil : a
    }

    public static let type = DBusType.structure([.int64, .array(.byte), .array(.byte), .int16])
    public var dbusValue: DBusValue { .structure([.int64(time), .bytes(rpi), .bytes(aem), .int16(rssi)]) }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("sighting", Self.type)
        time = try f[0].wireInt64("time")
        rpi = try f[1].wireBytes("rpi", count: 16)
        aem = try f[2].wireBytes("aem", count: 4)
        rssi = try f[3].wireInt16("rssi")
    }
}

/// `(txsds)`: a ground-truth marker (Research1.GetMarkers).
public struct GaendMarker: GaendWireValue, Codable {
    public var id: UInt64
    public var time: Int64
    public var label: String
    public var distance: Double
    public var note: String

    public init(id: UInt64, time: Int64, label: String, distance: Double, note: String) {
        self.id = id
        self.time = time
        self.label = label
        self.distance = distance
        self.note = note
    }

    public static let type = DBusType.structure([.uint64, .int64, .string, .double, .string])
    public var dbusValue: DBusValue {
        .structure([.uint64(id), .int64(time), .string(label), .double(distance), .string(note)])
    }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        let f = try value.wireStruct("marker", Self.type)
        id = try f[0].wireUInt64("id")
        time = try f[1].wireInt64("time")
        label = try f[2].wireString("label")
        distance = try f[3].wireDouble("distance")
        note = try f[4].wireString("note")
    }
}

/// ExposureNotification1.ExposureStateUpdated (token, matched_keys, windows, error).
public struct GaendExposureStateUpdate: GaendSignal, Equatable {
    public static let interface = GaendBus.exposureNotificationInterface, member = "ExposureStateUpdated"
    public static let arguments = [DBusArgument("token", "s"), DBusArgument("matched_keys", "u"),
                                   DBusArgument("windows", "u"), DBusArgument("error", "s")]
    public var token: String
    public var matchedKeys: UInt32
    public var windows: UInt32
    /// Empty on success, else the D-Bus error name of the failure.
    public var error: String

    public init(token: String, matchedKeys: UInt32, windows: UInt32, error: String) {
        self.token = token
        self.matchedKeys = matchedKeys
        self.windows = windows
        self.error = error
    }

    public var args: [DBusValue] { [.string(token), .uint32(matchedKeys), .uint32(windows), .string(error)] }
    public init(args: [DBusValue]) throws(GaendWireError) {
        try Self.check(args)
        token = try args[0].wireString("token")
        matchedKeys = try args[1].wireUInt32("matched_keys")
        windows = try args[2].wireUInt32("windows")
        error = try args[3].wireString("error")
    }
}

/// Research1.ScanFinished (start, end, sightings).
public struct GaendScanFinished: GaendSignal, Equatable {
    public static let interface = GaendBus.researchInterface, member = "ScanFinished"
    public static let arguments = [DBusArgument("start", "x"), DBusArgument("end", "x"),
                                   DBusArgument("sightings", "a" + GaendSighting.signature)]
    public var start: Int64
    public var end: Int64
    public var sightings: [GaendSighting]

    public init(start: Int64, end: Int64, sightings: [GaendSighting]) {
        self.start = start
        self.end = end
        self.sightings = sightings
    }

    /// The sightings' addresses are not in this signal (ScanRecorded carries them).
    public var args: [DBusValue] { [.int64(start), .int64(end), GaendSighting.array(sightings)] }
    public init(args: [DBusValue]) throws(GaendWireError) {
        try Self.check(args)
        start = try args[0].wireInt64("start")
        end = try args[1].wireInt64("end")
        sightings = try GaendSighting.decodeArray(args[2], what: "sightings")
    }
}

/// Research1.ScanRecorded (start, end, sightings with addresses): the scan of the ScanFinished
/// that follows it, each sighting with its advertiser's address.
public struct GaendScanRecorded: GaendSignal, Equatable {
    public static let interface = GaendBus.researchInterface, member = "ScanRecorded"
    public static let arguments = [DBusArgument("start", "x"), DBusArgument("end", "x"),
                                   DBusArgument("sightings", "a" + GaendSighting.addressedType.signature)]
    public var scan: GaendScanFinished

    public init(_ scan: GaendScanFinished) { self.scan = scan }

    public var args: [DBusValue] {
        [.int64(scan.start), .int64(scan.end), .array(GaendSighting.addressedType, scan.sightings.map(\.addressedValue))]
    }
    public init(args: [DBusValue]) throws(GaendWireError) {
        try Self.check(args)
        guard case .array(_, let items) = args[2] else {
            throw .wrongType(what: "sightings", expected: Self.arguments[2].signature, actual: args[2].type.signature)
        }
        var sightings: [GaendSighting] = []
        sightings.reserveCapacity(items.count)
        for item in items { sightings.append(try GaendSighting(addressed: item)) }
        scan = GaendScanFinished(start: try args[0].wireInt64("start"), end: try args[1].wireInt64("end"), sightings: sightings)
    }
}

/// The controller as ExposureNotification1's `Controller` property (`a{sv}`) carries it:
/// `name` always; the rest once the controller has answered its bring-up (absent while it is
/// missing). Versions are the HCI/LMP version numbers of Read Local Version Information
/// (Core Vol 4 Part E 7.4.1), `manufacturer` its Bluetooth SIG company identifier.
public struct GaendController: Sendable, Equatable, Codable {
    /// The controller as configured: `hci0`, `tcp:HOST:PORT`, `serial:/dev/ttyX`, `unix:PATH`.
    public var name: String
    /// The public address, as btmon and hciconfig print it (`00:1A:7D:DA:71:13`).
    public var address: String?
    public var manufacturer: UInt16?
    /// The company identifier's name (Bluetooth SIG Assigned Numbers).
    public var manufacturerName: String?
    public var hciVersion: UInt8?
    public var hciSubversion: UInt16?
    public var lmpVersion: UInt8?
    public var lmpSubversion: UInt16?
    /// Why the controller is not answering (the last bring-up failure or loss), while it is not.
    public var problem: String?

    public init(name: String, address: String? = nil, manufacturer: UInt16? = nil, manufacturerName: String? = nil,
                hciVersion: UInt8? = nil, hciSubversion: UInt16? = nil, lmpVersion: UInt8? = nil, lmpSubversion: UInt16? = nil,
                problem: String? = nil) {
        self.name = name; self.address = address; self.problem = problem
        self.manufacturer = manufacturer; self.manufacturerName = manufacturerName
        self.hciVersion = hciVersion; self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion; self.lmpSubversion = lmpSubversion
    }

    public static let signature = "a{sv}"

    public var dbusValue: DBusValue {
        var d: [String: DBusValue] = ["name": .string(name)]
        if let address { d["address"] = .string(address) }
        if let manufacturer { d["manufacturer"] = .uint16(manufacturer) }
        if let manufacturerName { d["manufacturer_name"] = .string(manufacturerName) }
        if let hciVersion { d["hci_version"] = .byte(hciVersion) }
        if let hciSubversion { d["hci_subversion"] = .uint16(hciSubversion) }
        if let lmpVersion { d["lmp_version"] = .byte(lmpVersion) }
        if let lmpSubversion { d["lmp_subversion"] = .uint16(lmpSubversion) }
        if let problem { d["problem"] = .string(problem) }
        return .vardict(d)
    }

    /// Unknown keys are ignored (a newer daemon may add some); a known key of the wrong type
    /// is an error naming it.
    public init(dbus value: DBusValue) throws(GaendWireError) {
        guard value.type.signature == Self.signature, let d = value.vardictValue else {
            throw .wrongType(what: "Controller", expected: Self.signature, actual: value.type.signature)
        }
        func field<T>(_ key: String, _ expected: String, _ get: (DBusValue) -> T?) throws(GaendWireError) -> T? {
            guard let v = d[key] else { return nil }
            guard let t = get(v) else { throw .wrongType(what: "Controller.\(key)", expected: expected, actual: v.type.signature) }
            return t
        }
        guard let name = try field("name", "s", \.stringValue) else {
            throw .wrongType(what: "Controller.name", expected: "s", actual: "nothing")
        }
        self.name = name
        address = try field("address", "s", \.stringValue)
        manufacturer = try field("manufacturer", "q") { if case .uint16(let n) = $0 { n } else { nil } }
        manufacturerName = try field("manufacturer_name", "s", \.stringValue)
        hciVersion = try field("hci_version", "y") { if case .byte(let n) = $0 { n } else { nil } }
        hciSubversion = try field("hci_subversion", "q") { if case .uint16(let n) = $0 { n } else { nil } }
        lmpVersion = try field("lmp_version", "y") { if case .byte(let n) = $0 { n } else { nil } }
        lmpSubversion = try field("lmp_subversion", "q") { if case .uint16(let n) = $0 { n } else { nil } }
        problem = try field("problem", "s", \.stringValue)
    }
}
