import ENProtocol
import RiskEngines
import Foundation

/// Notification rules replayed per contact against ground truth (`gaenctl trial replay`): each
/// rule decides for each contact, from that contact's windows alone and on the contact's own
/// day (its latest window's), whether the app would have notified; the verdicts are joined to
/// the true distance (close = distance <= the close-contact distance).
public struct ReplayRule: Sendable {
    /// The rule as given (`NAME`, `NAME@DATE` or `NAME=CONFIG`), used as its name in the results.
    public let spec: String
    /// The engine's name in the registry (RiskEngineRegistry).
    public let engine: String
    /// With `NAME@DATE`, or chosen by the contacts' own day: the published configuration used
    /// (its dates and source commit).
    public private(set) var published: PublishedRiskConfigurations.Dated?
    /// What people should know about the rule as built, for stderr: the configuration chosen
    /// and why; those starting "warning: " (unknown fields left out with --allow-unknown-fields,
    /// a configuration that can notify no one) also go into the results' warnings.
    public internal(set) var notes: [String] = []
    let rule: any RiskRule

    init(spec: String, engine: String, rule: any RiskRule) {
        self.spec = spec; self.engine = engine; self.rule = rule
    }

    /// Parses `NAME[@DATE][=CONFIG]`, NAME one of the registry's engines. Without CONFIG: the
    /// engine's published configuration (the current one for cwa and nhs, the CWA server's
    /// launch values (2020-06-15) for cwa-v1, SwissCovid's and Immuni's published values);
    /// gaen-v1 has no app and needs one. `@DATE` (engines with a dated history: cwa, cwa-v1):
    /// the configuration published in force on that day (PublishedRiskConfigurations.dated),
    /// with the calculation of the apps that read it. CONFIG files may start with `#` comment lines.
    public static func parse(_ spec: String, options: ReplayOptions = ReplayOptions(), read: (String) throws -> Data) throws -> ReplayRule {
        let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
        let nameAndDate = parts[0].split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let name = nameAndDate[0]
        guard let engine = RiskEngineRegistry.named(name) else {
            throw ReplayError.badRule("'\(spec)': unknown rule '\(name)' (one of \(RiskEngineRegistry.names.joined(separator: ", ")))")
        }
        let file = parts.count == 2 ? parts[1] : nil
        var dated: PublishedRiskConfigurations.Dated?
        if nameAndDate.count == 2 {
            let date = nameAndDate[1]
            guard file == nil else { throw ReplayError.badRule("'\(spec)': give either \(name)@DATE or \(name)=CONFIG, not both") }
            guard let history = engine.datedRule else {
                let datedNames = RiskEngineRegistry.engines.filter { $0.datedRule != nil }.map(\.name)
                throw ReplayError.badRule("'\(spec)': only \(datedNames.joined(separator: " and ")) have published configurations by date")
            }
            guard let day = UTCDay(isoDate: date) else { throw ReplayError.badRule("'\(spec)': '\(date)' is not a date such as 2020-07-01") }
            do { dated = try PublishedRiskConfigurations.published(history, on: day) } catch let e as PublishedRiskConfigurations.DateError {
                throw ReplayError.badRule("'\(spec)': \(e)")
            }
        }
        var notes: [String] = []
        if dated == nil, file == nil, let day = options.dataDay, let history = engine.datedRule {
            // Without a date or a file, the configuration in force on the data's own day: a
            // replay of June 2020 contacts under the 2022 values answers another question.
            do {
                dated = try PublishedRiskConfigurations.published(history, on: day)
                notes.append("the contacts' latest day is \(day.isoDate): using the configuration published in force that day (give \(name)@DATE or \(name)=CONFIG to choose another)")
            } catch let e as PublishedRiskConfigurations.DateError {
                if history == .cwa {
                    // The exposure-window method did not exist yet: its 2022 values judge 2020 contacts by rules no app then ran.
                    notes.append("warning: the contacts' latest day is \(day.isoDate), but \(e): using the CWA app's current built-in configuration (v3.2.1, 2022) instead; CWA apps of that time ran the v1 method (--rule cwa-v1)")
                } else {
                    // Before the launch the launch values are the nearest published: said, not warned.
                    notes.append("the contacts' latest day is \(day.isoDate), before the first published configuration (2020-06-15): using those launch values")
                }
            }
        }
        let parameters: Data, source: String
        if let file {
            (parameters, source) = (try read(file), file)
        } else if let dated {
            (parameters, source) = (Data(dated.json.utf8), "published \(name) configuration of \(dated.from)")
        } else if let published = engine.publishedParameters {
            (parameters, source) = (published, "published \(name) configuration")
        } else {
            throw ReplayError.badRule("'\(spec)': \(name) has no published configuration; give \(name)=CONFIG")
        }
        let options = RiskRuleOptions(allowUnknownFields: options.allowUnknownFields, durationRounding: options.durationRounding[name] ?? .nearest)
        let built = try engine.rule(parameters: parameters, source: source, dated: dated, options: options)
        var rule = ReplayRule(spec: spec, engine: name, rule: built.rule)
        rule.published = dated
        rule.notes = notes + built.warnings.map { "warning: \($0)" }
        return rule
    }

    /// Each rule decides for a contact from that contact's windows alone, on the contact's own
    /// day (its latest window's).
    func judge(_ c: Contact) throws -> ReplayJudgement {
        let a = try rule.assess(c.windows, today: c.windows.map(\.day).max() ?? UTCDay(0), withDetail: false)
        return ReplayJudgement(notified: a.notified, numbers: a.numbers, unjudged: a.unjudged)
    }

    public func notifies(_ contact: Contact, index: Int) throws -> Bool { try judgement(contact, index: index).notified }

    /// The verdict with the numbers the rule used.
    public func judgement(_ contact: Contact, index: Int) throws -> ReplayJudgement {
        do { return try judge(contact) } catch {
            throw ReplayError.contact(index: index, label: contact.label, rule: spec, reason: "\(error)")
        }
    }
}

/// One rule's verdict on one contact: notified or not, the numbers it decided on (in the
/// rule's own terms: the value and the threshold it was held against), and why the verdict may
/// not be the app's when the input lacks something the rule weighs.
public struct ReplayJudgement: Sendable, Equatable {
    public var notified: Bool
    public var numbers: [(name: String, value: Double)]
    public var unjudged: String?

    public init(notified: Bool, numbers: [(name: String, value: Double)], unjudged: String? = nil) {
        self.notified = notified; self.numbers = numbers; self.unjudged = unjudged
    }

    public static func == (a: ReplayJudgement, b: ReplayJudgement) -> Bool {
        a.notified == b.notified && a.unjudged == b.unjudged && a.numbers.map(\.name) == b.numbers.map(\.name)
            // NaN (a number that does not exist, e.g. a never-heard contact's attenuation) equals NaN here.
            && a.numbers.map(\.value.bitPattern) == b.numbers.map(\.value.bitPattern)
    }
}

/// How `trial replay` builds its rules beyond their specs.
public struct ReplayOptions: Sendable {
    /// Unknown fields in a configuration file are warnings (ReplayRule.notes) instead of errors.
    public var allowUnknownFields = false
    /// Per v1-scoring rule by engine name (gaen-v1, immuni): how exposure durations are rounded.
    public var durationRounding: [String: GAENv1DurationRounding] = [:]
    /// The contacts' latest day: engines with a dated history (cwa, cwa-v1) without a date or a
    /// file use the configuration published in force on it.
    public var dataDay: UTCDay?

    public init(allowUnknownFields: Bool = false, durationRounding: [String: GAENv1DurationRounding] = [:], dataDay: UTCDay? = nil) {
        self.allowUnknownFields = allowUnknownFields; self.durationRounding = durationRounding; self.dataDay = dataDay
    }

    /// The latest window day of the contacts (nil when none has a window).
    public static func latestDay(_ contacts: [Contact]) -> UTCDay? { contacts.flatMap { $0.windows.map(\.day) }.max() }
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
    /// Per contact, the verdict with the numbers the rule used (--per-contact).
    public var judgements: [ReplayJudgement] = []
    /// Inputs the rule cannot judge as the app would, each with the number of contacts.
    public var warnings: [String] = []
    /// The ground truth's close-contact distance these counts are for, metres.
    public var closeContact: Double = 0
    /// With a time criterion: the minutes within `closeContact` that make a contact close.
    public var closeForMinutes: Double?
    /// Intervals, AUC and average precision (ReplayAccuracy).
    public var accuracy: ReplayAccuracy.Summary?

    enum CodingKeys: String, CodingKey { case rule, notified, close, far, truePositives, falsePositives, tpr, fpr, precision, warnings, closeContact, closeForMinutes, accuracy }

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
        try c.encode(warnings, forKey: .warnings)
        try c.encode(closeContact, forKey: .closeContact)
        try c.encodeIfPresent(closeForMinutes, forKey: .closeForMinutes)
        try c.encodeIfPresent(accuracy, forKey: .accuracy)
    }
}

public enum Replay {
    /// The ground truth of one contact: at most `metres` apart, or with `seconds`, at most
    /// `metres` apart for at least that long in all (its distance over time).
    public static func isCloseContact(_ c: Contact, within metres: Double, for seconds: Double?) -> Bool {
        guard let seconds else { return c.distance <= metres }
        return (c.secondsWithin(metres) ?? 0) >= seconds
    }

    /// `closeFor` (seconds): a contact is close when it spent at least that long within
    /// `closeContact` metres (cumulative, from its distance over time); nil: when its distance is.
    public static func run(_ contacts: [Contact], rules: [ReplayRule], closeContact: Double, closeFor: Double? = nil) throws -> [ReplayResult] {
        let isClose: [Bool]
        if closeFor != nil {
            if let i = contacts.firstIndex(where: { $0.distanceOverTime == nil }) {
                throw ReplayError.badRule("a time criterion needs each contact's distance over time; contact \(i) (\(contacts[i].label)) has one distance only (trial contacts makes them from readings)")
            }
        }
        isClose = contacts.map { isCloseContact($0, within: closeContact, for: closeFor) }
        let close = isClose.filter { $0 }.count, far = contacts.count - close
        return try rules.map { rule in
            let judgements = try contacts.enumerated().map { i, c in try rule.judgement(c, index: i) }
            let verdicts = judgements.map(\.notified)
            let tp = zip(verdicts, isClose).filter { $0 && $1 }.count
            let fp = zip(verdicts, isClose).filter { $0 && !$1 }.count
            let notified = tp + fp
            func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? .nan : Double(a) / Double(b) }
            // The configuration's own warnings (it can notify no one, fields left out) first.
            var warnings: [String] = rule.notes.filter { $0.hasPrefix("warning: ") }.map { String($0.dropFirst("warning: ".count)) }
            var reasons: [String: Int] = [:]
            for j in judgements { if let u = j.unjudged { reasons[u, default: 0] += 1 } }
            for (reason, n) in reasons.sorted(by: { $0.key < $1.key }) {
                warnings.append("\(n) of \(contacts.count) contacts have \(reason): the verdict may not be the app's (give the level, e.g. trial import --transmission-risk-level N)")
            }
            let silent = contacts.filter { $0.windows.isEmpty }.count
            if silent > 0 { warnings.append("\(silent) of \(contacts.count) contacts have no windows (never heard): no rule can notify them") }
            // The score a threshold sweep moves over: the first number the rule decided on.
            let outcomes = zip(contacts.indices, judgements).map { i, j in
                ReplayAccuracy.Outcome(cluster: contacts[i].cluster ?? "#\(i)", close: isClose[i], notified: j.notified,
                                       score: j.numbers.first?.value ?? (j.notified ? 1 : 0))
            }
            var result = ReplayResult(rule: rule.spec, notified: notified, close: close, far: far, truePositives: tp, falsePositives: fp,
                                      tpr: ratio(tp, close), fpr: ratio(fp, far), precision: ratio(tp, notified), verdicts: verdicts,
                                      judgements: judgements, warnings: warnings)
            result.closeContact = closeContact
            result.closeForMinutes = closeFor.map { $0 / 60 }
            result.accuracy = ReplayAccuracy.summary(outcomes)
            return result
        }
    }
}
