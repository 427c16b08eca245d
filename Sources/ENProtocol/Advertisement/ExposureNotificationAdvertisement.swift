#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why advertising data is not a GAEN advertisement.
public enum AdvertisementParseError: Error, Equatable, CustomStringConvertible {
    case empty
    case tooLong(length: Int, maximum: Int)
    case truncatedStructure(offset: Int, declaredLength: Int, available: Int)
    case noExposureNotificationServiceData
    case wrongServiceDataLength(expected: Int, actual: Int)
    case duplicateServiceData(offset: Int)

    public var description: String {
        switch self {
        case .empty: return "advertising data is empty"
        case .tooLong(let l, let m): return "advertising data of \(l) bytes exceeds the \(m)-byte maximum"
        case .truncatedStructure(let o, let d, let a):
            return "AD structure at offset \(o) declares \(d) bytes but only \(a) remain"
        case .noExposureNotificationServiceData: return "no service data for UUID 0xFD6F (not an exposure notification advertisement)"
        case .wrongServiceDataLength(let e, let a): return "0xFD6F service data carries \(a) bytes, expected \(e) (RPI 16 + AEM 4)"
        case .duplicateServiceData(let o): return "second 0xFD6F service data structure at offset \(o)"
        }
    }
}

/// The GAEN advertisement payload (Bluetooth spec v1.2): flags, the complete list of 16-bit
/// service UUIDs with 0xFD6F, and 0xFD6F service data carrying RPI (16) and AEM (4).
public struct ExposureNotificationAdvertisement: Hashable, Sendable {
    public static let serviceUUID: UInt16 = 0xFD6F
    /// Legacy advertising data is at most 31 bytes; extended reports carry up to 1650.
    public static let maximumDataLength = 1650

    // AD types (Bluetooth Assigned Numbers, "Common Data Types").
    static let adFlags: UInt8 = 0x01
    static let adCompleteServiceUUIDs16: UInt8 = 0x03
    static let adServiceData16: UInt8 = 0x16
    /// 0x1A = LE General Discoverable (bit 1) and the simultaneous LE/BR-EDR bits 3 and 4: the
    /// flags value the GAEN Bluetooth spec prescribes.
    static let flagsValue: UInt8 = 0x1A

    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata

    public init(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata) {
        self.rpi = rpi
        self.aem = aem
    }

    /// The 31-byte advertising data: `02 01 1A | 03 03 6F FD | 17 16 6F FD RPI AEM`.
    public var advertisingData: Data {
        var d = Data([0x02, Self.adFlags, Self.flagsValue,
                      0x03, Self.adCompleteServiceUUIDs16, 0x6F, 0xFD,
                      0x17, Self.adServiceData16, 0x6F, 0xFD])
        d.append(rpi.bytes)
        d.append(aem.bytes)
        return d
    }

    /// Parses received advertising data: AD structures in any order, other structures
    /// tolerated, every length checked. A zero length byte ends the significant part (Core
    /// spec Vol 3 Part C §11); what follows is ignored.
    public init(advertisingData data: Data) throws {
        let bytes = [UInt8](data)
        guard !bytes.isEmpty else { throw AdvertisementParseError.empty }
        guard bytes.count <= Self.maximumDataLength else {
            throw AdvertisementParseError.tooLong(length: bytes.count, maximum: Self.maximumDataLength)
        }
        var found: (RollingProximityIdentifier, AssociatedEncryptedMetadata)? = nil
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            if length == 0 { break }
            let available = bytes.count - offset - 1
            guard length <= available else {
                throw AdvertisementParseError.truncatedStructure(offset: offset, declaredLength: length, available: available)
            }
            let type = bytes[offset + 1]
            let value = bytes[(offset + 2)..<(offset + 1 + length)]
            if type == Self.adServiceData16, value.count >= 2,
               UInt16(value[value.startIndex]) | UInt16(value[value.startIndex + 1]) << 8 == Self.serviceUUID {
                guard found == nil else { throw AdvertisementParseError.duplicateServiceData(offset: offset) }
                let payload = value.dropFirst(2)
                guard payload.count == 20 else {
                    throw AdvertisementParseError.wrongServiceDataLength(expected: 20, actual: payload.count)
                }
                found = (try RollingProximityIdentifier(bytes: Data(payload.prefix(16))),
                         try AssociatedEncryptedMetadata(bytes: Data(payload.suffix(4))))
            }
            offset += 1 + length
        }
        guard let (rpi, aem) = found else { throw AdvertisementParseError.noExposureNotificationServiceData }
        self.init(rpi: rpi, aem: aem)
    }
}
