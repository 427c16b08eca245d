#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBusCore

/// One D-Bus property of a typed properties value: its name, revision and emits-changed rule
/// written once, its signature taken from the Swift type of the field it reads, and the field's
/// one encoder and one decoder. The interface tables are built from these lists, so a property's
/// signature is never written a second time.
public struct GaendProperty<Root>: Sendable {
    public let name: String
    public let signature: String
    public let since: Int
    public let emitsChanged: DBusEmitsChanged
    let encode: @Sendable (Root) -> DBusValue
    let decode: @Sendable (inout Root, DBusValue?) throws(GaendWireError) -> Void

    /// The property's line in an interface table.
    public var declaration: DBusPropertyDecl {
        DBusPropertyDecl(name, signature, .read, emitsChanged: emitsChanged, since: since)
    }

    /// A property every revision has: missing from a reply is an error.
    public static func required<V: GaendWireValue>(_ name: String, _ field: WritableKeyPath<Root, V> & Sendable, since: Int = 1,
                                                   emitsChanged: DBusEmitsChanged = .true) -> Self {
        Self(name: name, signature: V.signature, since: since, emitsChanged: emitsChanged,
             encode: { $0[keyPath: field].dbusValue },
             decode: { (root: inout Root, value: DBusValue?) throws(GaendWireError) in
                 guard let value else { throw .wrongType(what: name, expected: V.signature, actual: "nothing") }
                 root[keyPath: field] = try V.decodeProperty(value, name)
             })
    }

    /// A property added in a later revision: nil from an older gaend that lacks it. With
    /// `emptyIsNil`, the empty value means "none" both ways (an address or RPI with nothing on
    /// air); otherwise the daemon always fills the field.
    public static func optional<V: GaendWireValue & GaendEmptyValue>(_ name: String, _ field: WritableKeyPath<Root, V?> & Sendable,
                                                                     since: Int, emitsChanged: DBusEmitsChanged = .true,
                                                                     emptyIsNil: Bool = false) -> Self {
        Self(name: name, signature: V.signature, since: since, emitsChanged: emitsChanged,
             encode: { ($0[keyPath: field] ?? V.empty).dbusValue },
             decode: { (root: inout Root, value: DBusValue?) throws(GaendWireError) in
                 guard let value else { root[keyPath: field] = nil; return }
                 let v = try V.decodeProperty(value, name)
                 root[keyPath: field] = emptyIsNil && v == V.empty ? nil : v
             })
    }
}

/// A typed value holding an interface's properties: one list of properties, hence one encoder
/// (the daemon's getters, over one snapshot) and one decoder (the client's, from GetAll).
public protocol GaendProperties: Sendable, Equatable {
    static var interface: String { get }
    static var properties: [GaendProperty<Self>] { get }
    /// The value before decoding fills it (every field is then set or refused).
    init()
}

extension GaendProperties {
    public static var names: [String] { properties.map(\.name) }
    /// The interface table's properties, in order.
    public static var declarations: [DBusPropertyDecl] { properties.map(\.declaration) }
    /// The properties whose changes PropertiesChanged carries.
    public static var changing: [String] { properties.filter { $0.emitsChanged == .true }.map(\.name) }

    /// Every property's value.
    public var values: [String: DBusValue] {
        Dictionary(uniqueKeysWithValues: Self.properties.map { ($0.name, $0.encode(self)) })
    }

    /// One property's value (a name of `names`).
    public func value(_ name: String) throws(GaendWireError) -> DBusValue {
        guard let p = Self.properties.first(where: { $0.name == name }) else {
            throw .wrongType(what: name, expected: "a property of \(Self.interface)", actual: "nothing")
        }
        return p.encode(self)
    }

    /// The decoder: GetAll's reply. A property this client does not know is ignored (a newer
    /// gaend may add some); a known one of the wrong type is an error naming it.
    public init(properties p: [String: DBusValue]) throws(GaendWireError) {
        self.init()
        for property in Self.properties { try property.decode(&self, p[property.name]) }
    }
}

/// A value meaning "none" (encoded for a field a daemon leaves unset).
public protocol GaendEmptyValue: Equatable {
    static var empty: Self { get }
}

extension GaendWireValue {
    static func decodeProperty(_ value: DBusValue, _ name: String) throws(GaendWireError) -> Self {
        guard value.type == Self.type else { throw .wrongType(what: name, expected: Self.signature, actual: value.type.signature) }
        return try Self(dbus: value)
    }
}

// The property types' one encoding each.
extension Bool: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .boolean }
    public static var empty: Bool { false }
    public var dbusValue: DBusValue { .boolean(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        guard let b = value.boolValue else { throw .wrongType(what: "value", expected: "b", actual: value.type.signature) }
        self = b
    }
}

extension String: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .string }
    public static var empty: String { "" }
    public var dbusValue: DBusValue { .string(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireString("value") }
}

extension Int16: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .int16 }
    public static var empty: Int16 { 0 }
    public var dbusValue: DBusValue { .int16(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireInt16("value") }
}

extension Int32: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .int32 }
    public static var empty: Int32 { 0 }
    public var dbusValue: DBusValue { .int32(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireInt32("value") }
}

extension UInt32: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .uint32 }
    public static var empty: UInt32 { 0 }
    public var dbusValue: DBusValue { .uint32(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireUInt32("value") }
}

extension Int64: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .int64 }
    public static var empty: Int64 { 0 }
    public var dbusValue: DBusValue { .int64(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireInt64("value") }
}

extension UInt64: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .uint64 }
    public static var empty: UInt64 { 0 }
    public var dbusValue: DBusValue { .uint64(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireUInt64("value") }
}

extension Data: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .array(.byte) }
    public static var empty: Data { Data() }
    public var dbusValue: DBusValue { .bytes(self) }
    public init(dbus value: DBusValue) throws(GaendWireError) { self = try value.wireBytes("value") }
}

extension Array: GaendWireValue where Element == String {
    public static var type: DBusType { .array(.string) }
    public var dbusValue: DBusValue { .array(.string, map { .string($0) }) }
    public init(dbus value: DBusValue) throws(GaendWireError) {
        guard case .array(.string, let items) = value else { throw .wrongType(what: "value", expected: "as", actual: value.type.signature) }
        self = items.compactMap(\.stringValue)
    }
}

extension GaendController: GaendWireValue, GaendEmptyValue {
    public static var type: DBusType { .dict(key: .string, value: .variant) }
    public static var empty: GaendController { GaendController(name: "") }
}

/// `org.gaend.ExposureNotification1`'s properties as one typed value (docs/dbus.md): the
/// daemon's getters read one of these per Get, GetAll or PropertiesChanged, the client's
/// `status()` decodes one (JSON keys as the property names in camelCase, for
/// `gaenctl status --json`). Fields of later revisions are nil from an older gaend.
public struct GaendExposureProperties: GaendProperties, Codable {
    public static let interface = GaendBus.exposureNotificationInterface

    public var version = ""
    public var enabled = false
    public var status: [String] = []
    public var trialMode = false
    public var advertisementCount: UInt64 = 0
    public var scanCount: UInt64 = 0
    public var sightingCount: UInt64 = 0
    /// Unix ms of the last scan's end; 0 before the first scan.
    public var lastScanTime: Int64 = 0
    public var provideDiagnosisKeysRemaining: UInt32 = 0
    /// What the store dropped or set aside (revision 2).
    public var quarantinedRecords: UInt32?
    public var droppedScans: UInt64?
    public var droppedSightings: UInt64?
    public var clockSync: String?
    /// Whether the controller confirmed advertising and scanning on air (separate facts;
    /// scanning is off between scans in the periodic modes).
    public var advertisingOnAir: Bool?
    public var scanningOnAir: Bool?
    /// Radio operations (rotations, scan starts) that failed and were retried.
    public var radioFailures: UInt64?
    /// Advertising reports without 0xFD6F service data (not kept), and reports lost to full
    /// buffers.
    public var reportsIgnored: UInt64?
    public var reportsDropped: UInt64?
    /// Field checks (revision 3): the controller, the random address on air (nil: nothing on
    /// air), in trial mode the RPI on air, the calibration in use and the export labels.
    public var controller: GaendController?
    public var advertisingAddress: String?
    public var currentRPI: Data?
    public var txPower: Int16?
    public var rssiCorrection: Int16?
    public var calibrationConfidence: Int32?
    public var node: String?
    public var site: String?
    /// The exposure service is matching provided key files (a ProvideDiagnosisKeys now is Busy).
    public var matching: Bool?
    /// Fleet counters (revision 4): beacons put on air and failed rotations; seconds the
    /// beacon was on air, and wanted but off air; watchdog feeds; matching runs, their total
    /// time (ms), the last run's key files and windows; the store's bytes on disk.
    public var rotationCount: UInt64?
    public var failedRotations: UInt64?
    public var secondsOnAir: UInt64?
    public var secondsOffAir: UInt64?
    public var watchdogFeeds: UInt64?
    public var matchingRuns: UInt64?
    public var matchingTime: UInt64?
    public var keyFiles: UInt32?
    public var exposureWindows: UInt32?
    public var storeBytes: UInt64?

    public init() {}

    /// In the order of the interface table (and of dbus/org.gaend.ExposureNotification1.xml).
    public static let properties: [GaendProperty<Self>] = [
        .required("Version", \.version, emitsChanged: .const),
        .required("Enabled", \.enabled),
        .required("Status", \.status),
        .required("TrialMode", \.trialMode, emitsChanged: .const),
        .required("AdvertisementCount", \.advertisementCount),
        .required("ScanCount", \.scanCount),
        .required("SightingCount", \.sightingCount),
        .required("LastScanTime", \.lastScanTime),
        .required("ProvideDiagnosisKeysRemaining", \.provideDiagnosisKeysRemaining),
        .optional("QuarantinedRecords", \.quarantinedRecords, since: 2),
        .optional("DroppedScans", \.droppedScans, since: 2),
        .optional("DroppedSightings", \.droppedSightings, since: 2),
        .optional("ClockSync", \.clockSync, since: 2),
        .optional("AdvertisingOnAir", \.advertisingOnAir, since: 2),
        .optional("ScanningOnAir", \.scanningOnAir, since: 2),
        .optional("RadioFailures", \.radioFailures, since: 2),
        .optional("ReportsIgnored", \.reportsIgnored, since: 2),
        .optional("ReportsDropped", \.reportsDropped, since: 2),
        // Field checks: what a technician compares with a scanner and the board's records.
        .optional("Controller", \.controller, since: 3),
        .optional("AdvertisingAddress", \.advertisingAddress, since: 3, emptyIsNil: true),
        .optional("CurrentRpi", \.currentRPI, since: 3, emptyIsNil: true),
        .optional("TxPower", \.txPower, since: 3),
        .optional("RssiCorrection", \.rssiCorrection, since: 3),
        .optional("CalibrationConfidence", \.calibrationConfidence, since: 3),
        .optional("Node", \.node, since: 3, emitsChanged: .const),
        .optional("Site", \.site, since: 3, emitsChanged: .const),
        // The exposure service's busy state.
        .optional("Matching", \.matching, since: 3),
        // Fleet counters, for metrics.
        .optional("RotationCount", \.rotationCount, since: 4),
        .optional("FailedRotations", \.failedRotations, since: 4),
        .optional("SecondsOnAir", \.secondsOnAir, since: 4),
        .optional("SecondsOffAir", \.secondsOffAir, since: 4),
        .optional("WatchdogFeeds", \.watchdogFeeds, since: 4),
        .optional("MatchingRuns", \.matchingRuns, since: 4),
        .optional("MatchingTime", \.matchingTime, since: 4),
        .optional("KeyFiles", \.keyFiles, since: 4),
        .optional("ExposureWindows", \.exposureWindows, since: 4),
        .optional("StoreBytes", \.storeBytes, since: 4),
    ]
}

/// `org.gaend.Research1`'s properties as one typed value: the daemon's getters over one
/// snapshot, the client's `calibration()`/`labels()` from its decoder.
public struct GaendResearchProperties: GaendProperties {
    public static let interface = GaendBus.researchInterface

    /// The calibration in use: TX power (dBm) in the AEM, RSSI correction (dB), confidence.
    public var txPower: Int16 = 0
    public var rssiCorrection: Int16 = 0
    public var calibrationConfidence: Int32 = 0
    /// The labels every export carries (`research.node`, `research.site`).
    public var node = ""
    public var site = ""

    public init() {}

    public init(txPower: Int16, rssiCorrection: Int16, calibrationConfidence: Int32, node: String, site: String) {
        self.txPower = txPower
        self.rssiCorrection = rssiCorrection
        self.calibrationConfidence = calibrationConfidence
        self.node = node
        self.site = site
    }

    public static let properties: [GaendProperty<Self>] = [
        .required("TxPower", \.txPower),
        .required("RssiCorrection", \.rssiCorrection),
        .required("CalibrationConfidence", \.calibrationConfidence),
        .required("Node", \.node, emitsChanged: .const),
        .required("Site", \.site, emitsChanged: .const),
    ]
}
