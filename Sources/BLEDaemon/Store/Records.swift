import ENProtocol
import Foundation

/// One advertising report with 0xFD6F service data, as the scanner keeps it.
public struct RecordedSighting: Hashable, Sendable {
    /// UTC Unix seconds of the report (derived from the scan's start and monotonic time).
    public var time: Double
    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// RSSI in dBm as the controller reported it, before any correction.
    public var rssi: Int8

    public init(time: Double, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8) {
        self.time = time
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
    }
}

/// One scan: its start and end (UTC Unix seconds) and every report it kept, possibly none.
public struct RecordedScan: Hashable, Sendable {
    public var start: Double
    public var end: Double
    public var sightings: [RecordedSighting]
    /// The node's RSSI correction (dB) when the scan ran; nil in scans stored before it was
    /// recorded (blob version 1). Kept per scan so that a calibration changed mid-trial does
    /// not rewrite the attenuation of earlier sightings.
    public var rssiCorrection: Int?

    public init(start: Double, end: Double, sightings: [RecordedSighting], rssiCorrection: Int? = nil) {
        self.start = start
        self.end = end
        self.sightings = sightings
        self.rssiCorrection = rssiCorrection
    }
}

/// A scan as read back, with its row id.
public struct StoredScan: Hashable, Sendable {
    public var id: Int64
    public var record: RecordedScan
}

/// A ground-truth marker (time, label, distance, note): holds until the next marker.
public struct Marker: Hashable, Sendable, Codable {
    public var time: Double
    public var label: String
    public var distanceMeters: Double?
    public var note: String

    public init(time: Double, label: String, distanceMeters: Double? = nil, note: String = "") {
        self.time = time
        self.label = label
        self.distanceMeters = distanceMeters
        self.note = note
    }
}

/// An exposure result (windows, summaries...) as an opaque payload the matching layer encodes.
public struct StoredExposureResult: Hashable, Sendable {
    public var id: Int64
    public var kind: String
    public var createdAt: Double
    public var day: UTCDay?
    public var payload: Data
}

/// A provided key file as stored: its export.bin (the signature was checked when it was
/// provided), when, and the end of its newest key's validity (Unix seconds).
public struct StoredKeyFile: Hashable, Sendable {
    public var id: Int64
    public var providedAt: Double
    public var validUntil: Double
    public var exportBin: Data
}

/// The plaintext layout of a scan's sealed blob. A hand-written fixed layout rather than
/// JSON or protobuf: it is the ingestion hot path and has exactly one shape.
///
///     version u8 = 1 | count u32 LE | count x (time f64 LE bits | RPI 16 | AEM 4 | RSSI i8)
enum ScanBlob {
    /// Version 1: version, report count (UInt32 LE), reports. Version 2 adds the scan's RSSI
    /// correction (Int8) after the count. Both are read; a scan with a known correction is
    /// written as version 2, one without (nil) as version 1, so the record round-trips.
    static let reportSize = 8 + 16 + 4 + 1
    static func headerSize(version: UInt8) -> Int { version == 1 ? 5 : 6 }

    static func encode(_ sightings: [RecordedSighting], rssiCorrection: Int?) -> Data {
        var out = [UInt8]()
        let version: UInt8 = rssiCorrection == nil ? 1 : 2
        out.reserveCapacity(headerSize(version: version) + sightings.count * reportSize)
        out.append(version)
        appendLE(UInt32(sightings.count), to: &out)
        if let c = rssiCorrection { out.append(UInt8(bitPattern: Int8(clamping: c))) }
        for s in sightings {
            appendLE(s.time.bitPattern, to: &out)
            out.append(contentsOf: s.rpi.bytes)
            out.append(contentsOf: s.aem.bytes)
            out.append(UInt8(bitPattern: s.rssi))
        }
        return Data(out)
    }

    static func decode(_ data: Data) throws -> (sightings: [RecordedSighting], rssiCorrection: Int?) {
        let b = [UInt8](data)
        guard b.count >= 5 else { throw Reason("blob of \(b.count) bytes is shorter than its 5-byte header") }
        guard b[0] == 1 || b[0] == 2 else { throw Reason("blob version \(b[0]), expected 1 or 2") }
        let headerSize = headerSize(version: b[0])
        guard b.count >= headerSize else { throw Reason("blob of \(b.count) bytes is shorter than its \(headerSize)-byte header") }
        let count = Int(readLE32(b, 1))
        let correction: Int? = b[0] == 1 ? nil : Int(Int8(bitPattern: b[5]))
        guard b.count == headerSize + count * reportSize else {
            throw Reason("blob declares \(count) reports (\(headerSize + count * reportSize) bytes) but has \(b.count) bytes")
        }
        var out = [RecordedSighting]()
        out.reserveCapacity(count)
        var o = headerSize
        for _ in 0..<count {
            let time = Double(bitPattern: UInt64(readLE32(b, o)) | UInt64(readLE32(b, o + 4)) << 32)
            let rpi = try RollingProximityIdentifier(bytes: Data(b[(o + 8)..<(o + 24)]))
            let aem = try AssociatedEncryptedMetadata(bytes: Data(b[(o + 24)..<(o + 28)]))
            out.append(RecordedSighting(time: time, rpi: rpi, aem: aem, rssi: Int8(bitPattern: b[o + 28])))
            o += reportSize
        }
        return (out, correction)
    }

    struct Reason: Error { let text: String; init(_ t: String) { text = t } }

    static func appendLE<T: FixedWidthInteger>(_ v: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    static func readLE32(_ b: [UInt8], _ o: Int) -> UInt32 {
        UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
    }
}

extension RecordedScan {
    /// What the store keeps of a scan from the radio: its times and, of each report with
    /// 0xFD6F service data, time, RPI, AEM and RSSI (not the advertiser's address, which
    /// changes with every rotation and is of no use to matching).
    public init(_ scan: ScanRecord, rssiCorrection: Int? = nil) {
        self.init(start: scan.start, end: scan.end, sightings: scan.sightings.map {
            RecordedSighting(time: $0.time, rpi: $0.rpi, aem: $0.aem, rssi: Int8(clamping: $0.rssi))
        }, rssiCorrection: rssiCorrection)
    }
}
