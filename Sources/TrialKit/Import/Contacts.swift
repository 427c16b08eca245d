import ENProtocol
import RiskEngines
import Foundation

/// A contacts file: contacts with ground truth, each with the exposure windows a phone would
/// have had of it. What `trial import histogram` writes and `trial replay` reads:
///
/// ```json
/// {"contacts": [{"label": "pair A/B 1.5 m", "distance": 1.5, "cluster": "A/B",
///                "windows": [{"dateMillisSinceEpoch": ..., "reportType": 1, "infectiousness": 1,
///                             "calibrationConfidence": 0, "transmissionRiskLevel": 8,
///                             "scanInstances": [{"typicalAttenuationDb": 41, "minAttenuationDb": 41,
///                                                "secondsSinceLastScan": 300}]}]}]}
/// ```
/// Windows have the windows file's shape (docs/risk.md) and are read by its reader.
public struct Contact: Sendable, Equatable {
    public var label: String
    /// True distance, metres.
    public var distance: Double
    public var windows: [WindowsFileEntry]
    /// What the contact's readings are correlated with (its pair, its scenario): the unit the
    /// bootstrap resamples. nil: the contact stands alone.
    public var cluster: String?
    /// The true distance over time, when the contact came from a time series (ReadingContacts):
    /// criteria such as "15 minutes within 1.5 m" are judged on it.
    public var distanceOverTime: [DistanceSpan]?

    public init(label: String, distance: Double, windows: [WindowsFileEntry], cluster: String? = nil, distanceOverTime: [DistanceSpan]? = nil) {
        self.label = label; self.distance = distance; self.windows = windows; self.cluster = cluster; self.distanceOverTime = distanceOverTime
    }
}

public enum ContactsFile {
    public struct Invalid: Error, CustomStringConvertible {
        public let file: String
        public let reason: String
        public var description: String { "\(file): \(reason)" }
    }

    /// `#` comment lines are blanked first, as in configuration files (ConfigurationText).
    public static func read(_ url: URL) throws -> [Contact] {
        try parse(ConfigurationText.strippingCommentLines(Data(contentsOf: url)), file: url.path)
    }

    public static func parse(_ data: Data, file: String) throws -> [Contact] {
        guard let doc = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = doc["contacts"] as? [Any] else {
            throw Invalid(file: file, reason: "expected {\"contacts\": [{\"label\", \"distance\", \"windows\"}, ...]}")
        }
        return try list.enumerated().map { i, v in
            guard let o = v as? [String: Any] else { throw Invalid(file: file, reason: "contacts[\(i)]: expected a JSON object") }
            guard let d = o["distance"] as? NSNumber, !(o["distance"] is String), d.doubleValue.isFinite, d.doubleValue >= 0 else {
                throw Invalid(file: file, reason: "contacts[\(i)].distance: expected metres >= 0, got \(o["distance"].map { "\($0)" } ?? "nothing")")
            }
            guard let w = o["windows"] as? [Any] else { throw Invalid(file: file, reason: "contacts[\(i)].windows: expected a JSON array") }
            let entries: [WindowsFileEntry]
            do { entries = try WindowsFile.parse(JSONSerialization.data(withJSONObject: w)) } catch {
                throw Invalid(file: file, reason: "contacts[\(i)].windows: \(error)")
            }
            if let c = o["cluster"], !(c is String) { throw Invalid(file: file, reason: "contacts[\(i)].cluster: expected a string (the pair or scenario)") }
            var spans: [DistanceSpan]?
            if let t = o["distanceOverTime"] {
                guard let list = t as? [Any] else { throw Invalid(file: file, reason: "contacts[\(i)].distanceOverTime: expected [[from, to, metres], ...]") }
                spans = try list.enumerated().map { k, v in
                    guard let triple = v as? [NSNumber], triple.count == 3, triple.allSatisfy({ $0.doubleValue.isFinite }),
                          triple[0].doubleValue <= triple[1].doubleValue, triple[2].doubleValue >= 0 else {
                        throw Invalid(file: file, reason: "contacts[\(i)].distanceOverTime[\(k)]: expected [from, to, metres] (Unix seconds, from <= to, metres >= 0)")
                    }
                    return DistanceSpan(from: triple[0].doubleValue, to: triple[1].doubleValue, distance: triple[2].doubleValue)
                }
            }
            return Contact(label: o["label"] as? String ?? "", distance: d.doubleValue, windows: entries, cluster: o["cluster"] as? String,
                           distanceOverTime: spans)
        }
    }

    public static func encode(_ contacts: [Contact]) throws -> Data {
        func number(_ v: Double) -> Any { v == v.rounded() && abs(v) < 1e15 ? Int64(v) as Any : v as Any }
        let list: [[String: Any]] = contacts.map { c in
            var contact: [String: Any] = ["label": c.label, "distance": number(c.distance),
             "windows": c.windows.map { w -> [String: Any] in
                 var o: [String: Any] = ["dateMillisSinceEpoch": w.dateMillisSinceEpoch, "reportType": w.reportType,
                                         "infectiousness": w.infectiousness, "calibrationConfidence": w.calibrationConfidence,
                                         "scanInstances": w.scanInstances.map {
                                             ["typicalAttenuationDb": number($0.typicalAttenuationDb), "minAttenuationDb": number($0.minAttenuationDb),
                                              "secondsSinceLastScan": number($0.secondsSinceLastScan)]
                                         }]
                 if let t = w.transmissionRiskLevel { o["transmissionRiskLevel"] = t }
                 return o
             }]
            if let cluster = c.cluster { contact["cluster"] = cluster }
            if let spans = c.distanceOverTime { contact["distanceOverTime"] = spans.map { [number($0.from), number($0.to), number($0.distance)] } }
            return contact
        }
        return try JSONSerialization.data(withJSONObject: ["contacts": list], options: [.prettyPrinted, .sortedKeys])
    }
}

/// What an importer read, wrote and left out (and why), printed by every `trial import`.
public struct ImportCounts: Sendable, Equatable {
    public var read = 0
    public var written = 0
    public private(set) var dropped: [String: Int] = [:]
    public private(set) var notes: [String: Int] = [:]

    public init() {}

    public mutating func drop(_ reason: String) { dropped[reason, default: 0] += 1 }
    public mutating func note(_ what: String) { notes[what, default: 0] += 1 }

    /// Adds another file's counts: an import of several files reports their sum.
    public mutating func add(_ other: ImportCounts) {
        read += other.read; written += other.written
        dropped.merge(other.dropped, uniquingKeysWith: +)
        notes.merge(other.notes, uniquingKeysWith: +)
    }

    public var summary: String {
        var s = "\(read) rows read, \(written) written"
        let d = dropped.values.reduce(0, +)
        if d > 0 { s += ", \(d) dropped (" + dropped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; ") + ")" }
        if !notes.isEmpty { s += "; " + notes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; ") }
        return s
    }
}
