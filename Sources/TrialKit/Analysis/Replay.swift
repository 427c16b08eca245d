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

    /// The rule as given (`NAME`, `NAME@DATE` or `NAME=CONFIG`), used as its name in the results.
    public let spec: String
    public let kind: Kind
    /// With `NAME@DATE`, or chosen by the contacts' own day: the published configuration used
    /// (its dates and source commit).
    public private(set) var published: PublishedRiskConfigurations.Dated?
    /// What people should know about the rule as built, for stderr: the configuration chosen
    /// and why, unknown fields left out (with --allow-unknown-fields), a configuration that can
    /// notify no one.
    public internal(set) var notes: [String] = []
    let judge: @Sendable (Contact) throws -> ReplayJudgement

    init(spec: String, kind: Kind, notes: [String] = [], judge: @escaping @Sendable (Contact) throws -> ReplayJudgement) {
        self.spec = spec; self.kind = kind; self.notes = notes; self.judge = judge
    }

    /// Parses `NAME[@DATE][=CONFIG]`. Without CONFIG: the app's published configuration (the
    /// current one for cwa and nhs, the CWA server's launch values (2020-06-15) for cwa-v1,
    /// SwissCovid's and Immuni's published values); gaen-v1 has no app and needs one. `@DATE`
    /// (cwa, cwa-v1): the configuration the CWA server published in force on that day
    /// (PublishedRiskConfigurations.dated), with the calculation of the apps that read it.
    /// CONFIG files may start with `#` comment lines.
    public static func parse(_ spec: String, options: ReplayOptions = ReplayOptions(), read: (String) throws -> Data) throws -> ReplayRule {
        let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
        let nameAndDate = parts[0].split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let kind = Kind(rawValue: nameAndDate[0]) else {
            throw ReplayError.badRule("'\(spec)': unknown rule '\(nameAndDate[0])' (one of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let file = parts.count == 2 ? parts[1] : nil
        var dated: PublishedRiskConfigurations.Dated?
        if nameAndDate.count == 2 {
            let date = nameAndDate[1]
            guard file == nil else { throw ReplayError.badRule("'\(spec)': give either \(kind.rawValue)@DATE or \(kind.rawValue)=CONFIG, not both") }
            let rule: PublishedRiskConfigurations.DatedRule
            switch kind {
            case .cwa: rule = .cwa
            case .cwaV1: rule = .cwaV1
            default: throw ReplayError.badRule("'\(spec)': only cwa and cwa-v1 have published configurations by date")
            }
            guard let day = UTCDay(isoDate: date) else { throw ReplayError.badRule("'\(spec)': '\(date)' is not a date such as 2020-07-01") }
            do { dated = try PublishedRiskConfigurations.published(rule, on: day) } catch let e as PublishedRiskConfigurations.DateError {
                throw ReplayError.badRule("'\(spec)': \(e)")
            }
        }
        var notes: [String] = []
        if dated == nil, file == nil, let day = options.dataDay, let datedRule = PublishedRiskConfigurations.DatedRule(rawValue: kind.rawValue) {
            // Without a date or a file, the configuration in force on the data's own day: a
            // replay of June 2020 contacts under the 2022 values answers another question.
            do {
                dated = try PublishedRiskConfigurations.published(datedRule, on: day)
                notes.append("the contacts' latest day is \(day.isoDate): using the configuration published in force that day (give \(kind.rawValue)@DATE or \(kind.rawValue)=CONFIG to choose another)")
            } catch let e as PublishedRiskConfigurations.DateError {
                if kind == .cwa {
                    // The exposure-window method did not exist yet: its 2022 values judge 2020 contacts by rules no app then ran.
                    notes.append("warning: the contacts' latest day is \(day.isoDate), but \(e): using the CWA app's current built-in configuration (v3.2.1, 2022) instead; CWA apps of that time ran the v1 method (--rule cwa-v1)")
                } else {
                    // Before the launch the launch values are the nearest published: said, not warned.
                    notes.append("the contacts' latest day is \(day.isoDate), before the first published configuration (2020-06-15): using those launch values")
                }
            }
        }
        var rule = try make(spec: spec, kind: kind, file: file, dated: dated, options: options, read: read)
        rule.published = dated
        rule.notes = notes + rule.notes
        return rule
    }

    static func make(spec: String, kind: Kind, file: String?, dated: PublishedRiskConfigurations.Dated?,
                     options: ReplayOptions = ReplayOptions(), read: (String) throws -> Data) throws -> ReplayRule {
        func data(_ published: String?) throws -> (Data, String) {
            if let file { return (ReplayConfigText.strippingCommentLines(try read(file)), file) }
            if let dated { return (Data(dated.json.utf8), "published \(kind.rawValue) configuration of \(dated.from)") }
            guard let published else { throw ReplayError.badRule("'\(spec)': \(kind.rawValue) has no published configuration; give \(kind.rawValue)=CONFIG") }
            return (Data(published.utf8), "published \(kind.rawValue) configuration")
        }
        @Sendable func windows(_ c: Contact) throws -> [ExposureWindow] { try c.windows.map { try $0.exposureWindow() } }
        @Sendable func today(_ c: Contact) -> UTCDay { c.windows.map(\.day).max() ?? UTCDay(0) }
        /// Windows without a transmission risk level: rules that weigh it cannot judge them as the app would.
        /// The v1 score multiplies by the level's value; a window without a level (and no
        /// defaultTransmissionRiskLevel) scores as level 0, a value of 1 (the framework's INVALID),
        /// which is not what the app saw unless every level's value is 1.
        @Sendable func unjudged(_ c: Contact, _ v1: GAENv1Configuration) -> String? {
            guard v1.defaultTransmissionRiskLevel == nil, c.windows.contains(where: { $0.transmissionRiskLevel == nil }),
                  !v1.transmissionRiskLevelValues.allSatisfy({ $0 == 1 }) else { return nil }
            return "windows without a transmission risk level (scored as level 0, a value of 1)"
        }
        switch kind {
        case .cwa:
            let (d, name) = try data(PublishedRiskConfigurations.cwa)
            let p = try CWAParameters.decode(from: d, file: name)
            // A dated entry is judged with the calculation of the apps that read it.
            let generation = dated?.generation
            return ReplayRule(spec: spec, kind: kind, notes: ConfigurationReach.warnings(cwa: p).map { "warning: \($0)" }) { c in
                let e = try CWARiskCalculation.evaluate(windows(c), parameters: p, today: today(c), generation: generation)
                let day = e.days.max { $0.normalizedTime < $1.normalizedTime }
                return ReplayJudgement(notified: e.result.totalRiskLevel == CWARiskCalculation.high,
                                       numbers: [("normalizedTimePerDay", day?.normalizedTime ?? 0), ("totalRiskLevel", Double(e.result.totalRiskLevel)),
                                                 ("droppedWindows", Double(e.windows.filter { $0.dropped != nil }.count))])
            }
        case .cwaV1:
            let (d, name) = try data(PublishedRiskConfigurations.cwaV1)
            var policy = UnknownFieldPolicy(allow: options.allowUnknownFields)
            let p = try ReplayConfigText.cwaV1(d, file: name, policy: &policy)
            try p.validate()
            return ReplayRule(spec: spec, kind: kind, notes: policy.warnings.map { "warning: \($0)" } + ConfigurationReach.warnings(cwaV1: p).map { "warning: \($0)" }) { c in
                let r = try CWAv1RiskCalculation.calculate(windows(c), configuration: p, today: today(c))
                return ReplayJudgement(notified: r.increasedRisk,
                                       numbers: [("weightedMinutes", r.weightedMinutes), ("increasedRiskMinutes", p.increasedRiskMinutes),
                                                 ("maximumRiskScore", Double(r.maximumRiskScore)), ("minimumRiskScore", Double(p.v1.minimumRiskScore)),
                                                 ("riskEncounters", Double(r.riskEncounters))],
                                       unjudged: unjudged(c, p.v1))
            }
        case .nhs:
            let (d, name) = try data(PublishedRiskConfigurations.nhs)
            let p = try RiskJSON.decodeParameters(NHSExposureConfiguration.self, from: d, file: name)
            try p.validate()
            return ReplayRule(spec: spec, kind: kind) { c in
                let r = try NHSRiskCalculation.calculate(c.windows, configuration: p)
                return ReplayJudgement(notified: r.crossesThreshold,
                                       numbers: [("maximumRiskScore", r.maximumRiskScore), ("riskThreshold", r.riskThreshold)])
            }
        case .gaenV1:
            let (d, name) = try data(nil)
            var policy = UnknownFieldPolicy(allow: options.allowUnknownFields)
            try ReplayConfigText.checkKeys(d, known: ReplayConfigText.gaenV1Keys, file: name, policy: &policy)
            let p = try RiskJSON.decodeParameters(GAENv1Configuration.self, from: d, file: name)
            try p.validate()
            let keyWarnings = policy.warnings.map { "warning: \($0)" }
            let rounding = options.durationRounding[kind] ?? .nearest
            return ReplayRule(spec: spec, kind: kind, notes: keyWarnings + ConfigurationReach.warnings(v1: p, threshold: max(p.minimumRiskScore, 1), thresholdName: "minimumRiskScore").map { "warning: \($0)" }) { c in
                let scored = try windows(c).enumerated().map { i, w in try GAENv1.score(w, index: i, configuration: p, today: today(c), durationRounding: rounding) }
                let best = scored.max { $0.riskScore < $1.riskScore }
                return ReplayJudgement(notified: scored.contains { $0.counted && $0.riskScore > 0 },
                                       // A contact never heard has no attenuation: NaN, printed as NA (not 0 dB, the closest there is).
                                       numbers: [("maximumRiskScore", Double(best?.riskScore ?? 0)), ("minimumRiskScore", Double(p.minimumRiskScore)),
                                                 ("attenuationDb", best.map { Double($0.attenuationDb) } ?? .nan), ("durationMinutes", best?.durationMinutes ?? 0)],
                                       unjudged: unjudged(c, p))
            }
        case .swisscovid:
            var policy = UnknownFieldPolicy(allow: options.allowUnknownFields)
            let p = try file.map { f in
                let d = ReplayConfigText.strippingCommentLines(try read(f))
                try ReplayConfigText.checkKeys(d, known: ReplayConfigText.swissCovidKeys, file: f, policy: &policy)
                return try RiskJSON.decodeParameters(SwissCovidConfiguration.self, from: d, file: f)
            } ?? .published
            try p.validate()
            return ReplayRule(spec: spec, kind: kind, notes: policy.warnings.map { "warning: \($0)" }) { c in
                let r = try SwissCovidRisk.calculate(windows(c), configuration: p)
                let day = r.days.max { $0.weightedMinutes < $1.weightedMinutes }
                return ReplayJudgement(notified: r.exposed,
                                       numbers: [("weightedMinutes", day?.weightedMinutes ?? 0), ("minDurationForExposure", p.minDurationForExposure),
                                                 ("minutesLow", Double(day?.minutesLow ?? 0)), ("minutesMedium", Double(day?.minutesMedium ?? 0))])
            }
        case .immuni:
            var configured = try file.map { try ImmuniConfiguration.decode(from: ReplayConfigText.strippingCommentLines(read($0)), file: $0) } ?? .published
            try configured.v1.validate()
            configured.durationRounding = options.durationRounding[kind] ?? .nearest
            let p = configured
            let threshold = p.exposureInfoMinimumRiskScore != nil ? "the notification threshold (exposure_info_minimum_risk_score)" : "minimum_risk_score"
            return ReplayRule(spec: spec, kind: kind, notes: ConfigurationReach.warnings(v1: p.v1, threshold: p.notificationThreshold, thresholdName: threshold).map { "warning: \($0)" }) { c in
                let r = try ImmuniRisk.calculate(windows(c), configuration: p, today: today(c))
                let best = r.exposures.max { $0.riskScore < $1.riskScore }
                return ReplayJudgement(notified: r.notified,
                                       numbers: [("maximumRiskScore", Double(best?.riskScore ?? 0)), ("minimumRiskScore", Double(p.minimumRiskScore)),
                                                 ("notificationThreshold", Double(p.notificationThreshold)),
                                                 ("attenuationDb", best.map { Double($0.attenuationDb) } ?? .nan), ("bucketizedMinutes", best?.durationMinutes ?? 0)],
                                       unjudged: unjudged(c, p.v1))
            }
        }
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

/// Configuration files as datasets ship them.
public enum ReplayConfigText {
    /// `#` comment lines (a line whose first non-blank character is `#`) blanked out, so JSON
    /// parsers take files that start with a comment header; line numbers stay as they were.
    public static func strippingCommentLines(_ data: Data) -> Data {
        guard data.contains(UInt8(ascii: "#")) else { return data }
        var out = [UInt8]()
        out.reserveCapacity(data.count)
        var atLineStart = true, inComment = false
        for b in data {
            if b == 0x0A { inComment = false; atLineStart = true; out.append(b); continue }
            if inComment { continue }
            if atLineStart {
                if b == 0x20 || b == 0x09 || b == 0x0D { out.append(b); continue }
                atLineStart = false
                if b == UInt8(ascii: "#") { inComment = true; continue }
            }
            out.append(b)
        }
        return Data(out)
    }

    /// Checks that every top-level key of a JSON configuration is one the engine reads: a key
    /// the decoder does not know would otherwise be left out without a word (a misspelt
    /// `minimumRiskScore` read as absent). Each unknown key is named with its line.
    public static func checkKeys(_ data: Data, known: [String], file: String, policy: inout UnknownFieldPolicy) throws {
        guard case let .object(o)? = try? JSONValue.parse(data) else { return }  // the decoder reports syntax and shape
        let text = String(decoding: data, as: UTF8.self)
        for key in o.keys.sorted() where !known.contains(key) {
            var line = 0
            if let r = text.range(of: "\"\(key)\"") { line = text[..<r.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 } }
            let near = known.first { $0.lowercased() == key.lowercased() || EditDistanceHint.close(key, $0) }
            try policy.record("\(line > 0 ? "line \(line): " : "")unknown key '\(key)'\(near.map { " (did you mean \($0)?)" } ?? "") (known: \(known.joined(separator: ", ")))", file: file)
        }
    }

    static let gaenV1Keys = ["minimumRiskScore", "attenuationLevelValues", "daysSinceLastExposureLevelValues", "durationLevelValues",
                             "transmissionRiskLevelValues", "attenuationDurationThresholds", "defaultTransmissionRiskLevel"]
    static let cwaV1Keys = gaenV1Keys + ["attenuationDurationWeights", "defaultBucketOffset", "riskScoreNormalizationDivisor", "increasedRiskMinutes",
                                         "minimumExposureMinutes", "maximumAverageAttenuationDb", "maximumAgeDays"]
    static let swissCovidKeys = ["attenuationThresholdLow", "attenuationThresholdMedium", "attenuationFactorLow", "attenuationFactorMedium",
                                 "minDurationForExposure"]

    /// The CWA v1 configuration: JSON (framework v1 names plus the CWA ones) or the app
    /// configuration in protobuf text format (CWAv1Configuration.decode(textFormat:)).
    public static func cwaV1(_ data: Data, file: String) throws -> CWAv1Configuration {
        var policy = UnknownFieldPolicy()
        return try cwaV1(data, file: file, policy: &policy)
    }

    public static func cwaV1(_ data: Data, file: String, policy: inout UnknownFieldPolicy) throws -> CWAv1Configuration {
        let clean = strippingCommentLines(data)
        if TextProto.looksLikeTextFormat(clean) { return try CWAv1Configuration.decode(textFormat: data, file: file, policy: &policy) }
        try checkKeys(clean, known: cwaV1Keys, file: file, policy: &policy)
        return try RiskJSON.decodeParameters(CWAv1Configuration.self, from: clean, file: file)
    }
}

/// Whether a key is a likely misspelling of another (a letter or two off).
enum EditDistanceHint {
    static func close(_ a: String, _ b: String) -> Bool {
        let x = Array(a.lowercased().utf8), y = Array(b.lowercased().utf8)
        guard abs(x.count - y.count) <= 2, !x.isEmpty, !y.isEmpty else { return false }
        var row = Array(0...y.count)
        for i in 1...x.count {
            var prev = row[0]
            row[0] = i
            for j in 1...y.count {
                let cur = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (x[i - 1] == y[j - 1] ? 0 : 1))
                prev = cur
            }
        }
        return row[y.count] <= 2
    }
}

/// How `trial replay` builds its rules beyond their specs.
public struct ReplayOptions: Sendable {
    /// Unknown fields in a configuration file are warnings (ReplayRule.notes) instead of errors.
    public var allowUnknownFields = false
    /// Per v1-scoring rule (gaen-v1, immuni): how exposure durations are rounded.
    public var durationRounding: [ReplayRule.Kind: GAENv1DurationRounding] = [:]
    /// The contacts' latest day: cwa and cwa-v1 without a date or a file use the configuration
    /// published in force on it.
    public var dataDay: UTCDay?

    public init(allowUnknownFields: Bool = false, durationRounding: [ReplayRule.Kind: GAENv1DurationRounding] = [:], dataDay: UTCDay? = nil) {
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

    enum CodingKeys: String, CodingKey { case rule, notified, close, far, truePositives, falsePositives, tpr, fpr, precision, warnings }

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
    }
}

public enum Replay {
    public static func run(_ contacts: [Contact], rules: [ReplayRule], closeContact: Double) throws -> [ReplayResult] {
        let isClose = contacts.map { $0.distance <= closeContact }
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
            return ReplayResult(rule: rule.spec, notified: notified, close: close, far: far, truePositives: tp, falsePositives: fp,
                                tpr: ratio(tp, close), fpr: ratio(fp, far), precision: ratio(tp, notified), verdicts: verdicts,
                                judgements: judgements, warnings: warnings)
        }
    }
}
