#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The node's sightings and scans: one type each from the radio (which records them) through
/// the store (which keeps them) to matching and the research export (docs/sightings-format.md).
/// Only the file and D-Bus edges convert, to rows of the format and to wire values.

/// One scan of the receiving node, from its start to its end (Unix seconds), with the
/// advertisements it kept. Scans that saw nothing count too: exposure windows take
/// `secondsSinceLastScan` from them.
///
/// A recorded scan (the radio's, the store's) holds its sightings; in a `SightingsLog` the
/// sightings are kept flat for the matching index (each with its scan's index) and the log's
/// scans hold none.
public struct Scan: Hashable, Sendable, Comparable {
    public var start: Double
    public var end: Double
    /// The receiving node, when the export names it (multi-node files keep scans apart).
    public var node: String?
    /// The receiving node's RSSI correction (dB) when the scan ran, set once as the radio
    /// records it; nil where none was known (scans stored before it was kept, files). Kept per
    /// scan so that a calibration changed mid-trial does not rewrite earlier attenuations.
    public var rssiCorrection: Int?
    public var sightings: [Sighting]

    public init(start: Double, end: Double, node: String? = nil, rssiCorrection: Int? = nil, sightings: [Sighting] = []) {
        self.start = start
        self.end = end
        self.node = node
        self.rssiCorrection = rssiCorrection
        self.sightings = sightings
    }

    public static func < (a: Scan, b: Scan) -> Bool {
        (a.node ?? "", a.start, a.end) < (b.node ?? "", b.start, b.end)
    }
}

/// One received GAEN advertisement (an advertising report with 0xFD6F service data). Kept
/// compactly (RPI as two words, AEM as one, the address in 48 bits: 40 bytes) because a busy
/// site yields millions of them and the matcher keeps them all in memory.
public struct Sighting: Hashable, Sendable {
    /// Unix seconds of the report (UTC, may be fractional).
    public var time: Double
    /// RPI bytes 0..7 and 8..15, each read little-endian (the index hashes the first word).
    public var rpiLow: UInt64
    public var rpiHigh: UInt64
    /// AEM bytes, little-endian.
    public var aemBits: UInt32
    /// `scanIndex`, or -1 for none (an optional would cost 8 more bytes a sighting).
    var scanSlot: Int32
    /// The advertiser's address as on the wire (least significant byte first): bytes 0..3 and
    /// 4..5; all zero for none (no advertiser uses 00:00:00:00:00:00).
    var addressLow: UInt32
    var addressHigh: UInt16
    /// RSSI in dBm as the controller reported it (HCI's -127...20), before correction.
    public var rssi: Int8
    /// The receiving node's RSSI correction in dB at the time (attenuation uses rssi +
    /// correction): its scan's, set as the scan is recorded.
    public var rssiCorrection: Int8

    /// `address` is the advertiser's 48-bit address (`addressBits`), nil where unknown.
    public init(time: Double, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata,
                rssi: Int, rssiCorrection: Int = 0, scanIndex: Int? = nil, address: UInt64? = nil) {
        let r = [UInt8](rpi.bytes), a = [UInt8](aem.bytes)
        self.init(time: time, rpiLow: Self.word(r, 0), rpiHigh: Self.word(r, 8),
                  aemBits: UInt32(a[0]) | UInt32(a[1]) << 8 | UInt32(a[2]) << 16 | UInt32(a[3]) << 24,
                  rssi: Int8(clamping: rssi), rssiCorrection: Int8(clamping: rssiCorrection),
                  scanIndex: scanIndex.map { Int32($0) }, address: address)
    }

    /// From the stored words directly (the export reader and the store decode straight into them).
    public init(time: Double, rpiLow: UInt64, rpiHigh: UInt64, aemBits: UInt32, rssi: Int8, rssiCorrection: Int8,
                scanIndex: Int32? = nil, address: UInt64? = nil) {
        self.time = time
        self.rpiLow = rpiLow
        self.rpiHigh = rpiHigh
        self.aemBits = aemBits
        scanSlot = scanIndex ?? -1
        addressLow = 0
        addressHigh = 0
        self.rssi = rssi
        self.rssiCorrection = rssiCorrection
        self.address = address
    }

    /// Index into `SightingsLog.scans` of the scan that saw it, when the log knows its scans.
    public var scanIndex: Int32? {
        get { scanSlot < 0 ? nil : scanSlot }
        set { scanSlot = newValue ?? -1 }
    }

    /// The advertiser's address as a 48-bit number (its bytes as on the wire, least significant
    /// first, so it prints as the address does); nil when unknown (scans stored before it was kept).
    public var address: UInt64? {
        get {
            let v = UInt64(addressLow) | UInt64(addressHigh) << 32
            return v == 0 ? nil : v
        }
        set {
            let v = (newValue ?? 0) & 0xFFFF_FFFF_FFFF
            addressLow = UInt32(truncatingIfNeeded: v)
            addressHigh = UInt16(truncatingIfNeeded: v >> 32)
        }
    }

    /// The address as the export and D-Bus show it: `AA:BB:CC:DD:EE:FF`, most significant byte
    /// first (as btmon prints it).
    public var addressText: String? {
        address.map { Self.addressText($0) }
    }

    static func addressText(_ v: UInt64) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(17)
        for i in (0..<6).reversed() {
            let b = Int(truncatingIfNeeded: v >> (8 * UInt64(i))) & 0xFF
            out.append(digits[b >> 4]); out.append(digits[b & 15])
            if i > 0 { out.append(UInt8(ascii: ":")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func word(_ b: [UInt8], _ offset: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<min(8, b.count - offset) { v |= UInt64(b[offset + i]) << (8 * UInt64(i)) }
        return v
    }

    static func bytes(_ w: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * UInt64($0))) } }

    public var rpi: RollingProximityIdentifier {
        // Always 16 bytes, so the throwing initialiser cannot fail here.
        try! RollingProximityIdentifier(bytes: Data(Self.bytes(rpiLow) + Self.bytes(rpiHigh)))
    }

    public var aem: AssociatedEncryptedMetadata {
        try! AssociatedEncryptedMetadata(bytes: Data((0..<4).map { UInt8(truncatingIfNeeded: aemBits >> (8 * UInt32($0))) }))
    }

    /// The ENIN of the report time.
    public var interval: ENIntervalNumber { ENIntervalNumber(unixSeconds: time) }
}

/// Everything matching and windows read: the sightings in order and every scan (a file's sorted
/// by node, then start; the node's oldest first), including scans that saw nothing.
public struct SightingsLog: Sendable {
    public var sightings: [Sighting]
    public var scans: [Scan]
    /// True when the file carried `scan_start`/`scan_end` (exposure windows need them).
    public var hasScanColumns: Bool

    public init(sightings: [Sighting], scans: [Scan] = [], hasScanColumns: Bool = false) {
        self.sightings = sightings
        self.scans = scans
        self.hasScanColumns = hasScanColumns
    }

    /// The node's recorded scans (oldest first) as matching and the export read them: the one
    /// conversion, so that `gaenctl windows` on an export gives the node's own windows. Times in
    /// whole milliseconds (the format's precision); each sighting gets its scan's RSSI
    /// correction, or `currentCorrection` for scans recorded before it was kept; only the
    /// sightings in `from..<to` are kept, and the scans with one of them or that saw nothing
    /// and started in it. The scans are consumed as they are flattened.
    public init(recorded scans: consuming [Scan], currentCorrection: Int, from: Double = -.infinity, to: Double = .infinity) {
        var flat: [Sighting] = []
        flat.reserveCapacity(scans.reduce(0) { $0 + $1.sightings.count })
        var kept: [Scan] = []
        kept.reserveCapacity(scans.count)
        for i in scans.indices {
            let recorded = scans[i].sightings
            scans[i].sightings = []
            let correction = scans[i].rssiCorrection ?? currentCorrection
            var scan = scans[i]
            scan.start = Self.milliseconds(scan.start)
            scan.end = Self.milliseconds(scan.end)
            scan.rssiCorrection = correction
            let index = Int32(kept.count)
            if recorded.isEmpty {
                guard scans[i].start >= from, scans[i].start < to else { continue }
                kept.append(scan)
                continue
            }
            var any = false
            for var s in recorded where s.time >= from && s.time < to {
                s.time = Self.milliseconds(s.time)
                s.rssiCorrection = Int8(clamping: correction)
                s.scanIndex = index
                flat.append(s)
                any = true
            }
            if any { kept.append(scan) }
        }
        self.init(sightings: flat, scans: kept, hasScanColumns: true)
    }

    static func milliseconds(_ t: Double) -> Double { (t * 1000).rounded() / 1000 }

    /// A log of recorded scans (`init(recorded:)`) as rows of the sightings format
    /// (docs/sightings-format.md), oldest first: one per sighting and one per scan that saw
    /// nothing. `node` and `site` label every row.
    public func forEachRecord(node: String? = nil, site: String? = nil, _ body: (SightingsRecord) throws -> Void) rethrows {
        var next = 0
        for (index, scan) in scans.enumerated() {
            var any = false
            while next < sightings.count, sightings[next].scanIndex == Int32(index) {
                let s = sightings[next]
                try body(SightingsRecord(time: s.time, rpi: s.rpi, aem: s.aem, rssi: Int(s.rssi), scanStart: scan.start, scanEnd: scan.end,
                                         rssiCorrection: Int(s.rssiCorrection), node: node, site: site, address: s.addressText))
                next += 1
                any = true
            }
            if !any {
                try body(SightingsRecord(time: scan.start, rpi: nil, aem: nil, rssi: nil, scanStart: scan.start, scanEnd: scan.end,
                                         rssiCorrection: scan.rssiCorrection ?? 0, node: node, site: site))
            }
        }
    }
}

/// One row of a sightings export as written (docs/sightings-format.md): a received
/// advertisement, or an empty-scan row (rpi, aem and rssi nil) that only records a scan.
public struct SightingsRecord: Sendable, Equatable {
    public var time: Double
    public var rpi: RollingProximityIdentifier?
    public var aem: AssociatedEncryptedMetadata?
    /// RSSI in dBm as the controller reported it, before correction.
    public var rssi: Int?
    public var scanStart: Double?
    public var scanEnd: Double?
    /// The receiving node's RSSI correction in whole dB (0 when the column is absent).
    public var rssiCorrection: Int
    public var node: String?
    public var site: String?
    /// The advertiser's Bluetooth address, `AA:BB:CC:DD:EE:FF` (most significant byte first, as
    /// btmon prints it); nil on empty-scan rows and in exports made before it was kept.
    public var address: String?

    public init(time: Double, rpi: RollingProximityIdentifier?, aem: AssociatedEncryptedMetadata?, rssi: Int?,
                scanStart: Double? = nil, scanEnd: Double? = nil, rssiCorrection: Int = 0,
                node: String? = nil, site: String? = nil, address: String? = nil) {
        self.time = time; self.rpi = rpi; self.aem = aem; self.rssi = rssi
        self.scanStart = scanStart; self.scanEnd = scanEnd; self.rssiCorrection = rssiCorrection
        self.node = node; self.site = site; self.address = address
    }

    public var isEmptyScan: Bool { rpi == nil }
}
