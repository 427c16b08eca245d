import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIProtocol

/// A received GAEN advertisement (an advertising report with 0xFD6F service data): the one
/// sighting type of the radio (RadioOwner keeps them per scan), the store (scan records) and
/// the research signal. ENProtocol's `Sighting` is the matching index's compact record, built
/// from these when a sightings log is read for matching.
public struct RecordedSighting: Hashable, Sendable {
    /// UTC Unix seconds of the report (derived from the scan's start and monotonic time).
    public var time: Double
    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// RSSI in dBm as the controller reported it, before any correction.
    public var rssi: Int8
    /// The advertiser's address; nil in scans stored before it was kept (blob versions 1-2).
    /// It tells apart two senders that happen to share an RPI-less moment and lets a trial
    /// check that address and RPI changed together.
    public var address: BDAddress?

    public init(time: Double, rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8, address: BDAddress? = nil) {
        self.time = time
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
        self.address = address
    }
}

/// One scan: its start and end (UTC Unix seconds) and every report it kept, possibly none
/// (exposure windows need every scan for secondsSinceLastScan). The radio owner makes it (no
/// correction yet), the node adds the RSSI correction in use and the store keeps it.
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
/// JSON or protobuf: it is the ingestion hot path and has exactly one shape per version.
///
///     v1: version u8 = 1 | count u32 LE | count x (time f64 LE bits | RPI 16 | AEM 4 | RSSI i8)
///     v2: version u8 = 2 | count u32 LE | correction i8 | count x (as v1)
///     v3: version u8 = 3 | count u32 LE | flags u8 (bit 0: correction present) | correction i8
///         | count x (as v1 | address 6, little-endian as on the wire)
///
/// Every version is read; scans are written as version 3 (the advertiser's address per
/// sighting). A v3 sighting without an address (copied from an older scan) keeps 00:00:00:00:00:00,
/// which no advertiser uses, and reads back as nil.
enum ScanBlob {
    static let currentVersion: UInt8 = 3
    static func reportSize(version: UInt8) -> Int { version >= 3 ? 8 + 16 + 4 + 1 + 6 : 8 + 16 + 4 + 1 }
    static func headerSize(version: UInt8) -> Int {
        switch version {
        case 1: return 5
        case 2: return 6
        default: return 7
        }
    }

    /// Writes `version` (older versions only for tests of the reader: v1 drops the
    /// correction, v1 and v2 drop the addresses).
    static func encode(_ sightings: [RecordedSighting], rssiCorrection: Int?, version: UInt8 = currentVersion) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(headerSize(version: version) + sightings.count * reportSize(version: version))
        out.append(version)
        appendLE(UInt32(sightings.count), to: &out)
        if version == 2 { out.append(UInt8(bitPattern: Int8(clamping: rssiCorrection ?? 0))) }
        if version >= 3 {
            out.append(rssiCorrection == nil ? 0 : 1)
            out.append(UInt8(bitPattern: Int8(clamping: rssiCorrection ?? 0)))
        }
        for s in sightings {
            appendLE(s.time.bitPattern, to: &out)
            out.append(contentsOf: s.rpi.bytes)
            out.append(contentsOf: s.aem.bytes)
            out.append(UInt8(bitPattern: s.rssi))
            if version >= 3 { out.append(contentsOf: s.address?.littleEndianBytes ?? [UInt8](repeating: 0, count: 6)) }
        }
        return Data(out)
    }

    static func decode(_ data: Data) throws -> (sightings: [RecordedSighting], rssiCorrection: Int?) {
        let b = [UInt8](data)
        guard b.count >= 5 else { throw Reason("blob of \(b.count) bytes is shorter than its 5-byte header") }
        let version = b[0]
        guard (1...3).contains(version) else { throw Reason("blob version \(version), expected 1, 2 or 3") }
        let headerSize = headerSize(version: version), reportSize = reportSize(version: version)
        guard b.count >= headerSize else { throw Reason("blob of \(b.count) bytes is shorter than its \(headerSize)-byte header") }
        let count = Int(readLE32(b, 1))
        let correction: Int?
        switch version {
        case 1: correction = nil
        case 2: correction = Int(Int8(bitPattern: b[5]))
        default:
            guard b[5] <= 1 else { throw Reason("blob flags 0x\(String(b[5], radix: 16)) has unknown bits") }
            correction = b[5] == 1 ? Int(Int8(bitPattern: b[6])) : nil
        }
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
            var address: BDAddress?
            if version >= 3 {
                let raw = Array(b[(o + 29)..<(o + 35)])
                if raw != [0, 0, 0, 0, 0, 0] { address = BDAddress(littleEndian: raw) }
            }
            out.append(RecordedSighting(time: time, rpi: rpi, aem: aem, rssi: Int8(bitPattern: b[o + 28]), address: address))
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

extension RecordedSighting {
    /// The sighting in `report` (what the radio owner keeps of it), or nil for a report
    /// without GAEN service data or RSSI.
    public init?(report: LEAdvertisingReport, time: Double) {
        guard let rssi = report.rssi, Self.mayCarryGAEN(report.data),
              let ad = try? ExposureNotificationAdvertisement(advertisingData: Data(report.data)) else { return nil }
        self.init(time: time, rpi: ad.rpi, aem: ad.aem, rssi: rssi, address: report.address)
    }

    /// A cheap look for the 0xFD6F service-data header (AD type 0x16, UUID 6F FD) before the
    /// full parse: in a crowd most reports are not GAEN and are dismissed here.
    static func mayCarryGAEN(_ data: [UInt8]) -> Bool {
        var i = 0
        while i + 3 < data.count {
            let length = Int(data[i])
            if length >= 3, data[i + 1] == 0x16, data[i + 2] == 0x6F, data[i + 3] == 0xFD { return true }
            i += 1 + length
        }
        return false
    }
}
