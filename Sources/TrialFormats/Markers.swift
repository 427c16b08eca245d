#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A ground-truth marker (docs/sightings-format.md): from `time` until the next marker of the
/// same scope, the true distance is `distance` metres (nil: unknown, e.g. a break or a node
/// out of range; sightings then carry no ground truth).
public struct Marker: Sendable, Equatable {
    public var time: Double
    public var label: String
    public var distance: Double?
    public var note: String
    /// The pair the marker holds for, from the markers file's `receiver` and `transmitter`
    /// columns; nil (both empty) for a marker of every pair, unless its label is a `pair:` label.
    public var receiver: String?
    public var transmitter: String?

    public init(time: Double, label: String, distance: Double?, note: String = "", receiver: String? = nil, transmitter: String? = nil) {
        self.time = time; self.label = label; self.distance = distance; self.note = note
        self.receiver = receiver; self.transmitter = transmitter
    }

    /// Multi-node trials (and `gaenctl simulate`) scope a marker to one receiver/transmitter
    /// pair with the label `pair:<receiver>/<transmitter>`; any other label applies to all pairs.
    public static let pairPrefix = "pair:"

    public static func pairLabel(receiver: String, transmitter: String) -> String {
        "\(pairPrefix)\(receiver)/\(transmitter)"
    }

    /// The pair the marker holds for: its receiver/transmitter columns, else a `pair:` label.
    public var pair: NodePair? {
        if let receiver, let transmitter, !receiver.isEmpty, !transmitter.isEmpty {
            return NodePair(receiver: receiver, transmitter: transmitter)
        }
        guard label.hasPrefix(Self.pairPrefix) else { return nil }
        let rest = label.dropFirst(Self.pairPrefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let rx = String(rest[..<slash]), tx = String(rest[rest.index(after: slash)...])
        guard !rx.isEmpty, !tx.isEmpty else { return nil }
        return NodePair(receiver: rx, transmitter: tx)
    }
}

/// An ordered receiver/transmitter pair.
public struct NodePair: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var receiver: String
    public var transmitter: String
    public init(receiver: String, transmitter: String) { self.receiver = receiver; self.transmitter = transmitter }
    /// Receivers, then transmitters, in natural order: board-2 before board-10.
    public static func < (a: Self, b: Self) -> Bool {
        a.receiver != b.receiver ? NaturalOrder.less(a.receiver, b.receiver) : NaturalOrder.less(a.transmitter, b.transmitter)
    }
    public var description: String { "\(receiver)/\(transmitter)" }
}

/// Ground truth by time: one timeline per pair-scoped label, one for unscoped markers.
public struct GroundTruth: Sendable {
    private var global: [Marker] = []
    private var perPair: [NodePair: [Marker]] = [:]

    public init(markers: [Marker]) {
        for m in markers {
            if let p = m.pair { perPair[p, default: []].append(m) } else { global.append(m) }
        }
        global.sort { $0.time < $1.time }
        for k in perPair.keys { perPair[k]!.sort { $0.time < $1.time } }
    }

    public var isEmpty: Bool { global.isEmpty && perPair.isEmpty }
    public var pairs: [NodePair] { perPair.keys.sorted() }

    /// The marker in force at `time` for the pair: the pair's own timeline if it has one,
    /// else the unscoped one. Nil before the first marker.
    public func marker(at time: Double, pair: NodePair) -> Marker? {
        timeline(for: pair).marker(at: time)
    }

    public func distance(at time: Double, pair: NodePair) -> Double? {
        marker(at: time, pair: pair)?.distance
    }

    /// The timeline that holds for the pair, for a caller that asks about one pair many times
    /// (it hashes the pair's two names once, not per row).
    public func timeline(for pair: NodePair) -> Timeline { Timeline(markers: perPair[pair] ?? global) }

    /// One pair's markers in time order.
    public struct Timeline: Sendable {
        let markers: [Marker]

        /// The last marker with marker.time <= time (binary search); nil before the first.
        public func marker(at time: Double) -> Marker? {
            var lo = 0, hi = markers.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if markers[mid].time <= time { lo = mid + 1 } else { hi = mid }
            }
            return lo == 0 ? nil : markers[lo - 1]
        }

        public func distance(at time: Double) -> Double? { marker(at: time)?.distance }
    }
}

/// The markers CSV: header `time,label,distance,note`; exports add `node,site` (the labels of
/// the node that recorded them and of the site, empty when unknown), which readers ignore, and
/// `receiver,transmitter` (the pair a marker holds for; both empty: every pair).
public enum MarkersFile {
    public static let header = ["time", "label", "distance", "note"]
    public static let exportHeader = header + ["node", "site", "receiver", "transmitter"]

    public static func read(_ url: URL) throws -> [Marker] {
        let r = try CSVReader(contentsOf: url)
        let cTime = try r.requireColumn("time"), cLabel = try r.requireColumn("label")
        let cDist = try r.requireColumn("distance"), cNote = r.column("note")
        let cRx = r.column("receiver"), cTx = r.column("transmitter")
        var out: [Marker] = []
        try r.forEachRow { row in
            let d = try row.double(cDist, column: "distance")
            if let d, d < 0 {
                throw CSVError.badValue(file: r.file, line: row.line, column: "distance",
                                        expected: "metres >= 0 or empty", actual: row.string(cDist))
            }
            let rx = cRx.map { row.string($0) } ?? "", tx = cTx.map { row.string($0) } ?? ""
            if rx.isEmpty != tx.isEmpty {
                throw CSVError.badValue(file: r.file, line: row.line, column: rx.isEmpty ? "receiver" : "transmitter",
                                        expected: "a name, as the other of receiver/transmitter is given (or both empty)", actual: "")
            }
            out.append(Marker(time: try row.requireDouble(cTime, column: "time"), label: row.string(cLabel),
                              distance: d, note: cNote.map { row.string($0) } ?? "",
                              receiver: rx.isEmpty ? nil : rx, transmitter: tx.isEmpty ? nil : tx))
        }
        return out
    }

    public static func csv(_ markers: [Marker], node: String? = nil, site: String? = nil) -> CSVWriter {
        var w = CSVWriter(header: exportHeader)
        for m in markers {
            let p = m.pair
            w.appendRow([Format.time(m.time), m.label, m.distance.map(Format.exact) ?? "", m.note, node ?? "", site ?? "",
                         p?.receiver ?? "", p?.transmitter ?? ""])
        }
        return w
    }
}
