import DBusCore

/// The `a{sv}` configurations of gaend's API (docs/dbus.md), each a typed value whose key
/// table gives its one encoder (`dbusValue`) and one throwing decoder (`init(dbus:)`). The
/// decoder refuses an unknown key and a value of the wrong type, naming the key and the type it
/// expects; ranges, counts and required keys are the node's to check (they are the domain's rules).
///
/// Integer keys accept any D-Bus integer type that fits in `i` (clients in dynamic languages
/// cannot always choose), doubles only `d`; dict values may come wrapped in variants.
public protocol GaendConfig: GaendWireValue {
    /// Every key unset.
    init()
    /// What an error calls the value ("config", "mapping").
    static var what: String { get }
    /// The key table, in documentation order: each key's name, type and field, once. The
    /// decoder, the encoder and the list of known keys all come from it.
    static var fields: [GaendConfigField<Self>] { get }
}

extension GaendConfig {
    public static var type: DBusType { .dict(key: .string, value: .variant) }

    /// The keys, in documentation order.
    public static var keys: [String] { fields.map(\.key) }

    public init(dbus value: DBusValue) throws(GaendWireError) {
        let d = try GaendVardict(value, what: Self.what, keys: Self.keys)
        self.init()
        for field in Self.fields { try field.read(d, &self) }
    }

    public var dbusValue: DBusValue {
        var w = GaendVardictWriter()
        for field in Self.fields { field.write(self, &w) }
        return w.value
    }
}

/// One key of a configuration's table: its name and the optional field it fills, typed by the
/// constructor used (`i`, `d`, `ai`, `ad`, `a{id}`, `a{ii}`).
public struct GaendConfigField<Config> {
    public let key: String
    let read: (GaendVardict, inout Config) throws(GaendWireError) -> Void
    let write: (Config, inout GaendVardictWriter) -> Void

    public static func int32(_ key: String, _ field: WritableKeyPath<Config, Int32?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.int32(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
    public static func double(_ key: String, _ field: WritableKeyPath<Config, Double?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.double(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
    public static func int32s(_ key: String, _ field: WritableKeyPath<Config, [Int32]?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.int32s(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
    public static func doubles(_ key: String, _ field: WritableKeyPath<Config, [Double]?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.doubles(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
    public static func int32ToDouble(_ key: String, _ field: WritableKeyPath<Config, [Int32: Double]?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.int32ToDouble(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
    public static func int32ToInt32(_ key: String, _ field: WritableKeyPath<Config, [Int32: Int32]?>) -> Self {
        Self(key: key, read: { (d, c) throws(GaendWireError) in c[keyPath: field] = try d.int32ToInt32(key) }, write: { c, w in w.set(key, c[keyPath: field]) })
    }
}

/// The reader of one `a{sv}`: each key read once with its type.
struct GaendVardict {
    let what: String
    let entries: [String: DBusValue]

    init(_ value: DBusValue, what: String, keys: [String]) throws(GaendWireError) {
        guard let entries = value.vardictValue, value.type == .dict(key: .string, value: .variant) else {
            throw .wrongType(what: what, expected: "a{sv}", actual: value.type.signature)
        }
        if let bad = entries.keys.sorted().first(where: { !keys.contains($0) }) {
            throw .unknownKey(what: what, key: bad, known: keys)
        }
        self.what = what
        self.entries = entries
    }

    private func wrong(_ key: String, _ expected: String, _ v: DBusValue) -> GaendWireError {
        .wrongType(what: "\(what) key '\(key)'", expected: expected, actual: v.type.signature)
    }

    private static func int32(_ v: DBusValue) -> Int32? { v.integerValue.flatMap { Int32(exactly: $0) } }

    func int32(_ key: String) throws(GaendWireError) -> Int32? {
        guard let v = entries[key] else { return nil }
        guard let i = Self.int32(v) else { throw wrong(key, "i", v) }
        return i
    }

    func double(_ key: String) throws(GaendWireError) -> Double? {
        guard let v = entries[key] else { return nil }
        guard let d = v.doubleValue else { throw wrong(key, "d", v) }
        return d
    }

    func int32s(_ key: String) throws(GaendWireError) -> [Int32]? {
        guard let v = entries[key] else { return nil }
        guard let a = v.arrayValue else { throw wrong(key, "ai", v) }
        var out: [Int32] = []
        for e in a {
            guard let i = Self.int32(e) else { throw wrong(key, "ai", v) }
            out.append(i)
        }
        return out
    }

    func doubles(_ key: String) throws(GaendWireError) -> [Double]? {
        guard let v = entries[key] else { return nil }
        guard let a = v.arrayValue else { throw wrong(key, "ad", v) }
        var out: [Double] = []
        for e in a {
            guard let d = e.doubleValue else { throw wrong(key, "ad", v) }
            out.append(d)
        }
        return out
    }

    /// `a{i<value>}`, values possibly in variants.
    private func table<T>(_ key: String, _ expected: String, _ value: (DBusValue) -> T?) throws(GaendWireError) -> [Int32: T]? {
        guard let v = entries[key] else { return nil }
        guard case .dict(_, _, let items) = v else { throw wrong(key, expected, v) }
        var out: [Int32: T] = [:]
        for e in items {
            guard let k = Self.int32(e.key), let x = value(e.value.variantValue ?? e.value) else { throw wrong(key, expected, v) }
            out[k] = x
        }
        return out
    }

    func int32ToDouble(_ key: String) throws(GaendWireError) -> [Int32: Double]? { try table(key, "a{id}", \.doubleValue) }
    func int32ToInt32(_ key: String) throws(GaendWireError) -> [Int32: Int32]? { try table(key, "a{ii}", Self.int32) }
}

/// The encoder's side: only the keys that are set.
struct GaendVardictWriter {
    var entries: [String: DBusValue] = [:]
    mutating func set(_ key: String, _ v: Int32?) { if let v { entries[key] = .int32(v) } }
    mutating func set(_ key: String, _ v: Double?) { if let v { entries[key] = .double(v) } }
    mutating func set(_ key: String, _ v: [Int32]?) { if let v { entries[key] = .array(.int32, v.map { .int32($0) }) } }
    mutating func set(_ key: String, _ v: [Double]?) { if let v { entries[key] = .array(.double, v.map { .double($0) }) } }
    mutating func set(_ key: String, _ v: [Int32: Double]?) {
        if let v { entries[key] = .dict(key: .int32, value: .double, v.sorted { $0.key < $1.key }.map { DBusDictEntry(key: .int32($0.key), value: .double($0.value)) }) }
    }
    mutating func set(_ key: String, _ v: [Int32: Int32]?) {
        if let v { entries[key] = .dict(key: .int32, value: .int32, v.sorted { $0.key < $1.key }.map { DBusDictEntry(key: .int32($0.key), value: .int32($0.value)) }) }
    }
    var value: DBusValue { .vardict(entries) }
}

/// The summary configuration of `GetDailySummaries` (Android's DailySummariesConfig).
public struct GaendDailySummariesConfig: GaendConfig {
    public static let what = "config"
    public static var fields: [GaendConfigField<Self>] {
        [
            .int32s("attenuation_bucket_thresholds_db", \.attenuationBucketThresholdsDb),
            .doubles("attenuation_bucket_weights", \.attenuationBucketWeights),
            .int32ToDouble("infectiousness_weights", \.infectiousnessWeights),
            .int32ToDouble("report_type_weights", \.reportTypeWeights),
            .int32("days_since_exposure_threshold", \.daysSinceExposureThreshold),
            .double("minimum_window_score", \.minimumWindowScore),
        ]
    }

    /// Required: 3 ascending thresholds (dB).
    public var attenuationBucketThresholdsDb: [Int32]?
    /// Required: 4 weights.
    public var attenuationBucketWeights: [Double]?
    /// Weight per infectiousness (1 standard, 2 high).
    public var infectiousnessWeights: [Int32: Double]?
    /// Weight per report type (1...4).
    public var reportTypeWeights: [Int32: Double]?
    public var daysSinceExposureThreshold: Int32?
    public var minimumWindowScore: Double?

    public init() {}

    public init(attenuationBucketThresholdsDb: [Int32]? = nil, attenuationBucketWeights: [Double]? = nil,
                infectiousnessWeights: [Int32: Double]? = nil, reportTypeWeights: [Int32: Double]? = nil,
                daysSinceExposureThreshold: Int32? = nil, minimumWindowScore: Double? = nil) {
        self.attenuationBucketThresholdsDb = attenuationBucketThresholdsDb
        self.attenuationBucketWeights = attenuationBucketWeights
        self.infectiousnessWeights = infectiousnessWeights
        self.reportTypeWeights = reportTypeWeights
        self.daysSinceExposureThreshold = daysSinceExposureThreshold
        self.minimumWindowScore = minimumWindowScore
    }
}

/// The v1 configuration of `GetExposureSummary` (Android's ExposureConfiguration).
public struct GaendExposureConfigurationV1: GaendConfig {
    public static let what = "config"
    public static var fields: [GaendConfigField<Self>] {
        [
            .int32s("attenuation_duration_thresholds", \.attenuationDurationThresholds),
            .int32("minimum_risk_score", \.minimumRiskScore),
            .int32s("attenuation_scores", \.attenuationScores),
            .int32s("days_since_last_exposure_scores", \.daysSinceLastExposureScores),
            .int32s("duration_scores", \.durationScores),
            .int32s("transmission_risk_scores", \.transmissionRiskScores),
        ]
    }

    public var attenuationDurationThresholds: [Int32]?
    public var minimumRiskScore: Int32?
    public var attenuationScores: [Int32]?
    public var daysSinceLastExposureScores: [Int32]?
    public var durationScores: [Int32]?
    public var transmissionRiskScores: [Int32]?

    public init() {}

    public init(attenuationDurationThresholds: [Int32]? = nil, minimumRiskScore: Int32? = nil, attenuationScores: [Int32]? = nil,
                daysSinceLastExposureScores: [Int32]? = nil, durationScores: [Int32]? = nil, transmissionRiskScores: [Int32]? = nil) {
        self.attenuationDurationThresholds = attenuationDurationThresholds
        self.minimumRiskScore = minimumRiskScore
        self.attenuationScores = attenuationScores
        self.daysSinceLastExposureScores = daysSinceLastExposureScores
        self.durationScores = durationScores
        self.transmissionRiskScores = transmissionRiskScores
    }
}

/// The diagnosis keys data mapping (Android's DiagnosisKeysDataMapping), as
/// `SetDiagnosisKeysDataMapping` takes it and `GetDiagnosisKeysDataMapping` returns it.
public struct GaendDataMapping: GaendConfig {
    public static let what = "mapping"
    public static var fields: [GaendConfigField<Self>] {
        [
            .int32ToInt32("days_since_onset_to_infectiousness", \.daysSinceOnsetToInfectiousness),
            .int32("report_type_when_missing", \.reportTypeWhenMissing),
            .int32("infectiousness_when_days_since_onset_missing", \.infectiousnessWhenDaysSinceOnsetMissing),
        ]
    }

    /// Days since onset (-14...14) to infectiousness (0...2).
    public var daysSinceOnsetToInfectiousness: [Int32: Int32]?
    public var reportTypeWhenMissing: Int32?
    public var infectiousnessWhenDaysSinceOnsetMissing: Int32?

    public init() {}

    public init(daysSinceOnsetToInfectiousness: [Int32: Int32]? = nil, reportTypeWhenMissing: Int32? = nil,
                infectiousnessWhenDaysSinceOnsetMissing: Int32? = nil) {
        self.daysSinceOnsetToInfectiousness = daysSinceOnsetToInfectiousness
        self.reportTypeWhenMissing = reportTypeWhenMissing
        self.infectiousnessWhenDaysSinceOnsetMissing = infectiousnessWhenDaysSinceOnsetMissing
    }
}
