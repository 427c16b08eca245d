import ENProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TrialFormats

/// The keys' RPIs derived once (one AES block per key and interval) into a table shared
/// read-only by the workers of `addSightingsFiles`, by the rule of ProjectMatcher
/// (ENProtocol's ExposureMatcher): a sighting in interval i matches RPI_j of a key when
/// |i - j| <= the clock tolerance (12 intervals); revoked keys, keys with a rolling period
/// outside 1...144 and a TEK already given by an earlier key are left out; a match whose
/// decrypted TX power is implausible is counted, not used. `trial rpis` writes the same table.
public struct RPITable: Sendable {
    struct Key: Hashable, Sendable {
        var low: UInt64, high: UInt64
        init(low: UInt64, high: UInt64) { self.low = low; self.high = high }
        init(_ d: Data) {
            (low, high) = d.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                                               $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        }
    }

    public struct Entry: Sendable {
        public var transmitter: Int
        /// Index into `keys` (the key's AEMK and its own fields).
        public var key: Int
        public var interval: UInt32
    }

    public struct KeyInfo: Sendable {
        public var transmitter: Int
        public var key: DiagnosisKey
        public var aemk: AssociatedEncryptedMetadataKey
    }

    let table: [Key: Entry]
    public let keys: [KeyInfo]
    public let tolerance: Int
    /// Every RPI in derivation order (transmitter, key, interval), for `trial rpis`.
    public let ordered: [(rpi: RollingProximityIdentifier, entry: Entry)]

    public init(_ transmitters: [TransmitterKeys], tolerance: Int = SightingIndex.defaultTolerance) throws {
        let schedule = try GAENKeySchedule()
        var table: [Key: Entry] = [:]
        var keys: [KeyInfo] = []
        var ordered: [(RollingProximityIdentifier, Entry)] = []
        var seen: Set<TemporaryExposureKey> = []
        for (t, tx) in transmitters.enumerated() {
            for k in tx.keys where !seen.contains(k.key) && k.reportType != .revoked {
                seen.insert(k.key)
                // ExposureMatcher counts such keys as invalid and derives nothing for them.
                guard (1...Int(ENIntervalNumber.perDay)).contains(Int(k.rollingPeriod)), k.key.bytes.count == 16 else { continue }
                let index = keys.count
                keys.append(KeyInfo(transmitter: t, key: k, aemk: schedule.associatedEncryptedMetadataKey(for: k.key)))
                let rpis = try schedule.rollingProximityIdentifiers(for: k.key, from: k.rollingStartIntervalNumber, count: Int(k.rollingPeriod))
                for (j, rpi) in rpis.enumerated() {
                    let e = Entry(transmitter: t, key: index, interval: k.rollingStartIntervalNumber.rawValue + UInt32(j))
                    ordered.append((rpi, e))
                    let rk = Key(rpi.bytes)
                    if table[rk] == nil { table[rk] = e }
                }
            }
        }
        self.table = table; self.keys = keys; self.tolerance = tolerance; self.ordered = ordered
    }

    func entry(_ rpi: RollingProximityIdentifier) -> Entry? { table[Key(rpi.bytes)] }

    /// The AES-CTR keystream byte over the AEM's TX power byte (byte 1): TX power =
    /// Int8(bitPattern: AEM byte 1 XOR this). DuckDB gets this instead of the AEMK.
    public func txPowerMask(_ rpi: RollingProximityIdentifier, key: Int) throws -> UInt8 {
        // Decrypting a zero AEM gives the keystream itself.
        let zero = try AssociatedEncryptedMetadata(bytes: Data(count: 4))
        return UInt8(bitPattern: try GAENKeySchedule.decryptMetadata(zero, rpi: rpi, aemk: keys[key].aemk).txPower)
    }
}

/// `trial report --sightings` over many files on every core (the design of
/// addAttenuationFiles): each file is read in pieces cut at row ends; a worker thread parses a
/// piece, matches it against the shared RPITable, joins ground truth, counts it and renders its
/// attenuation rows; the pieces are merged on the calling thread in input order, so the report,
/// the rows and the first error (file and line) are those of addSightings piece by piece
/// (Tests/TrialKitTests/SightingsFilesTests.swift compares the two). At most `threads + 1`
/// pieces are in flight: memory does not grow with rows.
extension TrialStream {
    public struct SightingsInput: Sendable {
        public var url: URL
        /// The name a row without a `node` takes (TrialInputs.receiverName).
        public var receiver: String?
        public init(url: URL, receiver: String?) { self.url = url; self.receiver = receiver }
    }

    /// Reads sightings files (CSV or JSON lines) and writes their analysed rows to `rows` (not
    /// through `onObservation`).
    public func addSightingsFiles(_ inputs: [SightingsInput], rows: AttenuationRowsWriter?, pieceSize: Int = 4 << 20,
                                  threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        let table = try RPITable(transmitters)
        let output: SightingsPieceParser.Output = rows == nil ? .none : (rows!.jsonLines ? .jsonLines : .csv)
        let settings = SightingsPieceParser.Settings(table: table, names: transmitters.map(\.name), nameID: nameID, groundTruth: groundTruth,
                                                     siteFilter: siteFilter, output: output, daily: rows?.daily != nil)
        let results = PieceResults<SightingsPieceParser.Result>()
        var pending: [(piece: SightingsPiece, index: Int, guess: String?)] = []
        var submitted = 0
        var fileLines = 0

        func merge() throws {
            let (piece, index, guess) = pending.removeFirst()
            // As forEachPiece numbers them: a later piece carries the header again.
            let shift = piece.first ? 0 : fileLines - (piece.headerLines)
            var out: SightingsPieceParser.Result
            do {
                out = try results.take(index).get()
                // The worker guessed the site in force; the rows are rendered again if it was wrong.
                if out.rendered > 0, (site ?? out.firstSite) != (guess ?? out.firstSite) {
                    out = try SightingsPieceParser.parse(piece, settings: settings, siteBefore: site)
                }
            } catch let e as SightingsFormatError {
                throw SightingsFileError(file: piece.file, reason: SightingsExport.shifted(e, by: shift).description)
            }
            fileLines = (piece.first ? 0 : fileLines) + out.lines
            if site == nil, let s = out.firstSite { site = s }
            sites.formUnion(out.sites)
            counts.rows += out.rows; counts.emptyScans += out.emptyScans; counts.reports += out.reports
            counts.matched += out.matched; counts.implausibleMetadata += out.implausible
            counts.withoutGroundTruth += out.withoutGroundTruth; counts.withGroundTruth += out.withGroundTruth
            weakest = max(weakest, out.weakest)
            if !out.wholeDecibels { wholeDecibels = false }
            // A scan already seen (it began in an earlier piece) takes this piece's hearings one
            // by one, in order, so its sums are those of the rows one by one.
            var replay: Set<Int32> = []
            for (i, k) in out.scanKeys.enumerated() {
                if scans[k] == nil { scans[k] = out.heard[i] } else { replay.insert(Int32(i)) }
            }
            if !replay.isEmpty {
                for h in out.hearings where replay.contains(h.scan) {
                    let k = out.scanKeys[Int(h.scan)]
                    if let i = scans[k]!.firstIndex(where: { $0.id == h.id }) {
                        scans[k]![i].sum += h.attenuation; scans[k]![i].count += 1
                    } else {
                        scans[k]!.append(Heard(id: h.id, sum: h.attenuation, count: 1))
                    }
                }
            }
            tally.merge(out.tally)
            try rows?.append(piece: out.text, daily: out.daily)
        }

        do {
            for input in inputs {
                let reader = try SightingsPieceReader(url: input.url, pieceSize: pieceSize)
                var first = true
                while let bytes = try reader.next() {
                    let piece = SightingsPiece(bytes: bytes, header: first ? [] : reader.header, file: input.url.path,
                                               receiver: input.receiver, first: first, jsonLines: reader.jsonLines)
                    first = false
                    while pending.count > max(1, threads) { try merge() }
                    let index = submitted, guess = site
                    submitted += 1
                    pending.append((piece, index, guess))
                    DispatchQueue.global().async {
                        results.put(index, Result { try SightingsPieceParser.parse(piece, settings: settings, siteBefore: guess) })
                    }
                }
            }
            while !pending.isEmpty { try merge() }
        } catch {
            // Let the workers finish with what they hold before the error is reported.
            for p in pending { _ = results.take(p.index) }
            throw error
        }
    }
}

/// A run of whole rows of one sightings file; a piece after the first has the file's header
/// put back in front (as SightingsExport.forEachPiece does).
struct SightingsPiece: Sendable {
    var bytes: [UInt8]
    var header: [UInt8]
    var file: String
    var receiver: String?
    var first: Bool
    var jsonLines: Bool
    var headerLines: Int { header.isEmpty ? 0 : 1 }
}

/// A sightings file read in pieces of about `pieceSize` bytes cut where forEachPiece cuts:
/// after the last newline outside quotes (JSON lines: the last newline).
final class SightingsPieceReader {
    let url: URL
    let pieceSize: Int
    private let handle: FileHandle
    private var pending: [UInt8] = []
    private var atEnd = false
    private var started = false
    private(set) var jsonLines = false
    /// The header row of a CSV file, with its newline (empty for JSON lines).
    private(set) var header: [UInt8] = []

    init(url: URL, pieceSize: Int) throws {
        self.url = url
        self.pieceSize = max(1, pieceSize)
        do { handle = try FileHandle(forReadingFrom: url) } catch {
            throw SightingsFileError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
    }

    deinit { try? handle.close() }

    private func read() throws {
        do {
            let more = try handle.read(upToCount: pieceSize) ?? Data()
            if more.count < pieceSize { atEnd = true }
            pending += more
        } catch {
            throw SightingsFileError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
    }

    /// The next piece; nil after the last. The first piece is returned even when empty (the
    /// parser's error for an empty file is the one-thread path's).
    func next() throws -> [UInt8]? {
        if !started {
            try read()
            jsonLines = pending.first(where: { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }) == UInt8(ascii: "{")
        }
        while pending.count < pieceSize, !atEnd { try read() }
        if started, pending.isEmpty { return nil }
        while true {
            if atEnd {
                defer { pending = [] }
                return finish(pending)
            }
            if let cut = lastRowEnd() {
                let piece = Array(pending[..<cut])
                pending.removeSubrange(..<cut)
                return finish(piece)
            }
            try read() // one row longer than what is pending
        }
    }

    private func finish(_ piece: [UInt8]) -> [UInt8] {
        if !started {
            started = true
            if !jsonLines, let nl = piece.firstIndex(of: 0x0A) { header = Array(piece[...nl]) }
        }
        return piece
    }

    /// After the last newline outside quotes (quotes toggle, as forEachPiece counts them).
    private func lastRowEnd() -> Int? {
        pending.withUnsafeBufferPointer { b -> Int? in
            guard let base = b.baseAddress, b.count > 0 else { return nil }
            if jsonLines || memchr(base, 0x22, b.count) == nil {
                var i = b.count - 1
                while i >= 0 { if b[i] == 0x0A { return i + 1 }; i -= 1 }
                return nil
            }
            var quoted = false, last: Int?
            for i in 0..<b.count {
                if b[i] == 0x22 { quoted.toggle() } else if b[i] == 0x0A, !quoted { last = i + 1 }
            }
            return last
        }
    }
}

extension RPITable {
    public static let csvHeader = ["rpi", "transmitter", "interval", "match_from", "match_to", "tx_power_mask",
                                   "key_rolling_start", "key_rolling_period"]

    /// The table as CSV, one row per RPI the matcher uses (`trial rpis`, the DuckDB recipe
    /// from sightings joins it): a sighting matches a row when its RPI is `rpi` and
    /// floor(time / 600) is within match_from...match_to (the interval +- the tolerance); its
    /// TX power is Int8(AEM byte 1 XOR tx_power_mask).
    public func writeCSV(to file: AtomicOutputFile, names: [String]) throws {
        var text = Self.csvHeader.joined(separator: ",") + "\n"
        for (rpi, e) in ordered {
            // A second key deriving the same RPI is not the one the matcher uses.
            guard let used = table[Key(rpi.bytes)], used.key == e.key, used.interval == e.interval else { continue }
            let k = keys[e.key].key
            text += "\(rpi.hexString),\(CSVWriter.escape(names[e.transmitter])),\(e.interval),\(Int(e.interval) - tolerance),"
            text += "\(Int(e.interval) + tolerance),\(try txPowerMask(rpi, key: e.key)),\(k.rollingStartIntervalNumber.rawValue),\(k.rollingPeriod)\n"
            if text.utf8.count >= 1 << 16 { try file.write(Data(text.utf8)); text = "" }
        }
        try file.write(Data(text.utf8))
    }
}
