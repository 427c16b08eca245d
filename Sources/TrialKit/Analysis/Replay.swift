import ENProtocol
import RiskEngines
import Foundation

/// Notification rules replayed per contact against ground truth (`gaenctl trial replay`): each
/// rule decides for each contact, from that contact's windows alone and on the contact's own
/// day (its latest window's), whether the app would have notified; the verdicts are joined to
/// the true distance (close = distance <= the close-contact distance).
public struct ReplayRule: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case cwa, cwaV1 = "cwa-v1", nhs, gaenV1 = "gaen-v1", swisscovid, immuni
    }

    /// The rule as given (`NAME` or `NAME=CONFIG`), used as its name in the results.
    public let spec: String
    public let kind: Kind
    let decide: @Sendable (Contact, Int) throws -> Bool

    /// Parses `NAME[=CONFIG]`. Without CONFIG: the app's published configuration (the current
    /// one for cwa and nhs, mid-2020's for cwa-v1, SwissCovid's and Immuni's published values);
    /// gaen-v1 has no app and needs one.
    public static func parse(_ spec: String, read: (String) throws -> Data) throws -> ReplayRule {
        let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
        guard let kind = Kind(rawValue: parts[0]) else {
            throw ReplayError.badRule("'\(spec)': unknown rule '\(parts[0])' (one of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let file = parts.count == 2 ? parts[1] : nil
        func data(_ published: String?) throws -> (Data, String) {
            if let file { return (try read(file), file) }
            guard let published else { throw ReplayError.badRule("'\(spec)': \(kind.rawValue) has no published configuration; give \(kind.rawValue)=CONFIG") }
            return (Data(published.utf8), "published \(kind.rawValue) configuration")
        }
        @Sendable func windows(_ c: Contact) throws -> [ExposureWindow] { try c.windows.map { try $0.exposureWindow() } }
        @Sendable func today(_ c: Contact) -> UTCDay { c.windows.map(\.day).max() ?? UTCDay(0) }
        switch kind {
        case .cwa:
            let (d, name) = try data(PublishedRiskConfigurations.cwa)
            let p = try CWAParameters.decode(from: d, file: name)
            return ReplayRule(spec: spec, kind: kind) { c, _ in
                try CWARiskCalculation.aggregate(windows(c), parameters: p, today: today(c)).totalRiskLevel == CWARiskCalculation.high
            }
        case .cwaV1:
            let (d, name) = try data(PublishedRiskConfigurations.cwaV1)
            let p = try RiskJSON.decodeParameters(CWAv1Configuration.self, from: d, file: name)
            try p.validate()
            return ReplayRule(spec: spec, kind: kind) { c, _ in try CWAv1RiskCalculation.calculate(windows(c), configuration: p, today: today(c)).increasedRisk }
        case .nhs:
            let (d, name) = try data(PublishedRiskConfigurations.nhs)
            let p = try RiskJSON.decodeParameters(NHSExposureConfiguration.self, from: d, file: name)
            try p.validate()
            return ReplayRule(spec: spec, kind: kind) { c, _ in try NHSRiskCalculation.calculate(c.windows, configuration: p).crossesThreshold }
        case .gaenV1:
            let (d, name) = try data(nil)
            let p = try RiskJSON.decodeParameters(GAENv1Configuration.self, from: d, file: name)
            try p.validate()
            return ReplayRule(spec: spec, kind: kind) { c, _ in
                try windows(c).enumerated().contains { i, w in
                    let e = try GAENv1.score(w, index: i, configuration: p, today: today(c))
                    return e.counted && e.riskScore > 0
                }
            }
        case .swisscovid:
            let p = try file.map { try RiskJSON.decodeParameters(SwissCovidConfiguration.self, from: read($0), file: $0) } ?? .published
            try p.validate()
            return ReplayRule(spec: spec, kind: kind) { c, _ in try SwissCovidRisk.calculate(windows(c), configuration: p).exposed }
        case .immuni:
            let p = try file.map { try ImmuniConfiguration.decode(from: read($0), file: $0) } ?? .published
            try p.v1.validate()
            return ReplayRule(spec: spec, kind: kind) { c, _ in try ImmuniRisk.calculate(windows(c), configuration: p, today: today(c)).notified }
        }
    }

    public func notifies(_ contact: Contact, index: Int) throws -> Bool {
        do { return try decide(contact, index) } catch {
            throw ReplayError.contact(index: index, label: contact.label, rule: spec, reason: "\(error)")
        }
    }
}

public enum ReplayError: Error, CustomStringConvertible {
    case badRule(String)
    case contact(index: Int, label: String, rule: String, reason: String)
    public var description: String {
        switch self {
        case .badRule(let s): return "--rule \(s)"
        case let .contact(i, label, rule, reason): return "contact \(i) (\(label)): \(rule): \(reason)"
        }
    }
}

/// One rule's verdicts against ground truth.
public struct ReplayResult: Sendable, Equatable, Encodable {
    public var rule: String
    public var notified: Int
    public var close: Int
    public var far: Int
    public var truePositives: Int
    public var falsePositives: Int
    public var tpr: Double
    public var fpr: Double
    public var precision: Double
    /// Per contact, in the file's order (not in --json's contract; the table prints it with --verbose).
    public var verdicts: [Bool]

    enum CodingKeys: String, CodingKey { case rule, notified, close, far, truePositives, falsePositives, tpr, fpr, precision }

    /// Rates with nothing to divide by are null.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rule, forKey: .rule)
        try c.encode(notified, forKey: .notified)
        try c.encode(close, forKey: .close)
        try c.encode(far, forKey: .far)
        try c.encode(truePositives, forKey: .truePositives)
        try c.encode(falsePositives, forKey: .falsePositives)
        for (k, v) in [(CodingKeys.tpr, tpr), (.fpr, fpr), (.precision, precision)] {
            if v.isNaN { try c.encodeNil(forKey: k) } else { try c.encode(v, forKey: k) }
        }
    }
}

public enum Replay {
    public static func run(_ contacts: [Contact], rules: [ReplayRule], closeContact: Double) throws -> [ReplayResult] {
        let isClose = contacts.map { $0.distance <= closeContact }
        let close = isClose.filter { $0 }.count, far = contacts.count - close
        return try rules.map { rule in
            let verdicts = try contacts.enumerated().map { i, c in try rule.notifies(c, index: i) }
            let tp = zip(verdicts, isClose).filter { $0 && $1 }.count
            let fp = zip(verdicts, isClose).filter { $0 && !$1 }.count
            let notified = tp + fp
            func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? .nan : Double(a) / Double(b) }
            return ReplayResult(rule: rule.spec, notified: notified, close: close, far: far, truePositives: tp, falsePositives: fp,
                                tpr: ratio(tp, close), fpr: ratio(fp, far), precision: ratio(tp, notified), verdicts: verdicts)
        }
    }
}
