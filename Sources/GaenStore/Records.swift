import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import HCIProtocol

/// A ground-truth marker (time, label, distance, note): holds until the next marker.
package struct Marker: Hashable, Sendable, Codable {
    package var time: Double
    package var label: String
    package var distanceMeters: Double?
    package var note: String

    package init(time: Double, label: String, distanceMeters: Double? = nil, note: String = "") {
        self.time = time
        self.label = label
        self.distanceMeters = distanceMeters
        self.note = note
    }
}

/// An exposure result (windows, summaries...) as an opaque payload the matching layer encodes.
package struct StoredExposureResult: Hashable, Sendable {
    package var id: Int64
    package var kind: String
    package var createdAt: Double
    package var day: UTCDay?
    package var payload: Data
}

/// A provided key file as stored: its export.bin (the signature was checked when it was
/// provided), when, and the end of its newest key's validity (Unix seconds).
package struct StoredKeyFile: Hashable, Sendable {
    package var id: Int64
    package var providedAt: Double
    package var validUntil: Double
    package var exportBin: Data
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
    static func encode(_ sightings: [Sighting], rssiCorrection: Int?, version: UInt8 = currentVersion) -> Data {
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
            appendLE(s.rpiLow, to: &out)
            appendLE(s.rpiHigh, to: &out)
            appendLE(s.aemBits, to: &out)
            out.append(UInt8(bitPattern: s.rssi))
            if version >= 3 {
                let address = s.address ?? 0
                for i in 0..<6 { out.append(UInt8(truncatingIfNeeded: address >> (8 * UInt64(i)))) }
            }
        }
        return Data(out)
    }

    static func decode(_ data: Data) throws -> (sightings: [Sighting], rssiCorrection: Int?) {
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
        var out = [Sighting]()
        out.reserveCapacity(count)
        // Each sighting carries its scan's correction (0 where the blob has none: the one
        // conversion to rows gives those the current one).
        let sightingCorrection = Int8(clamping: correction ?? 0)
        var o = headerSize
        for _ in 0..<count {
            var address: UInt64?
            if version >= 3 {
                // All zero (a sighting copied from an older scan) reads back as none.
                let raw = UInt64(readLE32(b, o + 29)) | UInt64(b[o + 33]) << 32 | UInt64(b[o + 34]) << 40
                if raw != 0 { address = raw }
            }
            out.append(Sighting(time: Double(bitPattern: readLE64(b, o)), rpiLow: readLE64(b, o + 8), rpiHigh: readLE64(b, o + 16),
                                aemBits: readLE32(b, o + 24), rssi: Int8(bitPattern: b[o + 28]), rssiCorrection: sightingCorrection,
                                address: address))
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

    static func readLE64(_ b: [UInt8], _ o: Int) -> UInt64 {
        UInt64(readLE32(b, o)) | UInt64(readLE32(b, o + 4)) << 32
    }
}
