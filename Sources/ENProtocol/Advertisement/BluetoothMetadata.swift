#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The 4 metadata bytes carried encrypted in the AEM (GAEN Bluetooth spec v1.2):
/// byte 0 version (bits 7..6 major, 5..4 minor; v1.1 adds calibration confidence in bits 3..2),
/// byte 1 transmit power in dBm (signed), bytes 2..3 reserved (zero).
public struct BluetoothMetadata: Hashable, Sendable, CustomStringConvertible {
    public var majorVersion: UInt8
    public var minorVersion: UInt8
    /// Calibrated TX power a receiver uses for attenuation = txPower - (RSSI + correction).
    public var txPower: Int8
    /// Present from v1.1 on.
    public var calibrationConfidence: CalibrationConfidence?
    /// Reserved bytes as received (non-zero values are kept, not trusted).
    public var reserved: UInt16

    /// The reference implementation's plausibility bounds for the decrypted TX power: the AEM
    /// is not authenticated, so values outside them are flagged rather than used.
    public static let plausibleTxPower: ClosedRange<Int> = -50...20

    public init(majorVersion: UInt8 = 1, minorVersion: UInt8 = 0, txPower: Int8,
                calibrationConfidence: CalibrationConfidence? = nil, reserved: UInt16 = 0) {
        self.majorVersion = majorVersion & 0x03
        self.minorVersion = minorVersion & 0x03
        self.txPower = txPower
        self.calibrationConfidence = calibrationConfidence
        self.reserved = reserved
    }

    /// Version 1.0 (0x40): TX power only.
    public static func v1_0(txPower: Int8) -> BluetoothMetadata { BluetoothMetadata(txPower: txPower) }

    /// Version 1.1 (0x50): TX power and calibration confidence.
    public static func v1_1(txPower: Int8, calibrationConfidence: CalibrationConfidence) -> BluetoothMetadata {
        BluetoothMetadata(minorVersion: 1, txPower: txPower, calibrationConfidence: calibrationConfidence)
    }

    public init(bytes: Data) throws {
        guard bytes.count == 4 else { throw KeyMaterialError.wrongLength(what: "Bluetooth metadata", expected: 4, actual: bytes.count) }
        let b = [UInt8](bytes)
        majorVersion = b[0] >> 6
        minorVersion = (b[0] >> 4) & 0x03
        calibrationConfidence = (majorVersion == 1 && minorVersion >= 1) ? CalibrationConfidence(rawValue: Int((b[0] >> 2) & 0x03)) : nil
        txPower = Int8(bitPattern: b[1])
        reserved = UInt16(b[2]) << 8 | UInt16(b[3])
    }

    public var bytes: Data {
        var v = majorVersion << 6 | minorVersion << 4
        if let c = calibrationConfidence { v |= UInt8(c.rawValue) << 2 }
        return Data([v, UInt8(bitPattern: txPower), UInt8(reserved >> 8), UInt8(reserved & 0xff)])
    }

    public var versionByte: UInt8 { bytes[0] }
    /// "1.0", "1.1", ...
    public var versionString: String { "\(majorVersion).\(minorVersion)" }

    /// True when the version is 1.x and the TX power is inside the plausible range.
    public var isPlausible: Bool { majorVersion == 1 && Self.plausibleTxPower.contains(Int(txPower)) }

    public var description: String { "BluetoothMetadata(v\(versionString), txPower: \(txPower) dBm)" }
}
