#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sightings as the research export records them (docs/sightings-format.md): one advertising
/// report with 0xFD6F service data, plus the scans of the receiving node.

/// One scan of the receiving node, from its start to its end (Unix seconds). Scans that saw
/// nothing count too: exposure windows take `secondsSinceLastScan` from them.
public struct Scan: Hashable, Sendable, Comparable {
    public var start: Double
    public var end: Double
    /// The receiving node, when the export names it (multi-node files keep scans apart).
    public var node: String?

    public init(start: Double, end: Double, node: String? = nil) {
        self.start = start
        self.end = end
        self.node = node
    }

    public static func < (a: Scan, b: Scan) -> Bool {
        (a.node ?? "", a.start, a.end) < (b.node ?? "", b.start, b.end)
    }
}

/// One received advertisement as the matching index keeps it: compactly (RPI as two words, AEM
/// as one) because a busy site yields millions of them and the matcher keeps them all in
/// memory. The node's own sighting (radio, store, signals) is BLEDaemon's `RecordedSighting`;
/// this record is built from a sightings log when matching reads it.
public struct Sighting: Hashable, Sendable {
    /// Unix seconds of the report (UTC, may be fractional).
    public var time: Double
    /// RPI bytes 0..7 and 8..15, each read little-endian (the index hashes the first word).
    public var rpiLow: UInt64
    public var rpiHigh: UInt64
    /// AEM bytes, little-endian.
    public var aemBits: UInt32
    /// RSSI in dBm as the controller reported it, before correction.
    public var rssi: Int16
    /// The receiving node's RSSI correction in dB at the time (attenuation uses rssi + correction).
    public var rssiCorrection: Int16
    /// Index into `SightingsLog.scans` of the scan that saw it, when the export has scan columns.
    public var scanIndex: Int32?

    public init(time: Double, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata,
                rssi: Int, rssiCorrection: Int = 0, scanIndex: Int? = nil) {
        self.time = time
        let r = [UInt8](rpi.bytes)
        rpiLow = Self.word(r, 0)
        rpiHigh = Self.word(r, 8)
        let a = [UInt8](aem.bytes)
        aemBits = UInt32(a[0]) | UInt32(a[1]) << 8 | UInt32(a[2]) << 16 | UInt32(a[3]) << 24
        self.rssi = Int16(clamping: rssi)
        self.rssiCorrection = Int16(clamping: rssiCorrection)
        self.scanIndex = scanIndex.map { Int32($0) }
    }

    /// From the stored words directly (the export reader decodes hex straight into them).
    init(time: Double, rpiLow: UInt64, rpiHigh: UInt64, aemBits: UInt32, rssi: Int16, rssiCorrection: Int16, scanIndex: Int32?) {
        self.time = time
        self.rpiLow = rpiLow
        self.rpiHigh = rpiHigh
        self.aemBits = aemBits
        self.rssi = rssi
        self.rssiCorrection = rssiCorrection
        self.scanIndex = scanIndex
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

/// Everything an export holds for matching and windows: the sightings in file order and every
/// scan (sorted by node, then start), including scans that saw nothing.
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
