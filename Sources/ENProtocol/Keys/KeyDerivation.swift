import COpenSSL
import Foundation

/// Rolling Proximity Identifier Key (RPIK) = HKDF(TEK, none, "EN-RPIK", 16). Secret: redacted.
public struct RollingProximityIdentifierKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: Data
    init(bytes: Data) { self.bytes = bytes }
    public var hexString: String { bytes.hexString }
    public var description: String { "RollingProximityIdentifierKey(<redacted>)" }
}

/// Associated Encrypted Metadata Key (AEMK) = HKDF(TEK, none, "EN-AEMK", 16). Secret: redacted.
public struct AssociatedEncryptedMetadataKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: Data
    init(bytes: Data) { self.bytes = bytes }
    public var hexString: String { bytes.hexString }
    public var description: String { "AssociatedEncryptedMetadataKey(<redacted>)" }
}

/// GAEN Cryptography Specification v1.2 key schedule: RPIK/AEMK from a TEK, RPIs per
/// interval, AEM encryption.
///
/// Holds reusable OpenSSL state (the zero salt's HMAC pads, an AES context), so bulk work
/// (matching a million keys) allocates nothing per key. Not Sendable: one per task.
public final class GAENKeySchedule {
    static let rpikInfo = Array("EN-RPIK".utf8)
    static let aemkInfo = Array("EN-AEMK".utf8)
    static let paddedDataPrefix = Array("EN-RPI".utf8) // then 6 zero bytes, then ENIN LE

    /// HKDF-Extract with "no salt" = HMAC keyed with HashLen zero bytes (RFC 5869 §2.2).
    private let zeroSaltExtractor: HMACSHA256
    private let aes: AES128ECB
    /// PaddedData blocks for one whole key, rewritten per call (only the ENIN bytes change).
    private var paddedData: [UInt8]

    public init() throws {
        zeroSaltExtractor = [UInt8](repeating: 0, count: SHA256.digestLength).withUnsafeBytes { HMACSHA256(key: $0) }
        aes = try AES128ECB()
        paddedData = [UInt8](repeating: 0, count: 16 * Int(ENIntervalNumber.perDay))
        for block in 0..<Int(ENIntervalNumber.perDay) {
            for (i, b) in Self.paddedDataPrefix.enumerated() { paddedData[block * 16 + i] = b }
        }
    }

    /// Derives a 16-byte HKDF output of the TEK for `info` into `out` (must hold 16 bytes).
    private func derive(tek: UnsafeRawBufferPointer, info: [UInt8], into out: UnsafeMutablePointer<UInt8>) {
        var prk = [UInt8](repeating: 0, count: SHA256.digestLength)
        zeroSaltExtractor.mac([tek], into: &prk)
        // One HKDF-Expand block suffices for L = 16: T(1) = HMAC(PRK, info || 0x01).
        let expander = prk.withUnsafeBytes { HMACSHA256(key: $0) }
        var t1 = [UInt8](repeating: 0, count: SHA256.digestLength)
        info.withUnsafeBytes { inf in
            withUnsafeBytes(of: UInt8(1)) { ctr in expander.mac([inf, ctr], into: &t1) }
        }
        out.update(from: t1, count: 16)
        OPENSSL_cleanse(&prk, prk.count)
        OPENSSL_cleanse(&t1, t1.count)
    }

    public func rollingProximityIdentifierKey(for tek: TemporaryExposureKey) -> RollingProximityIdentifierKey {
        var out = [UInt8](repeating: 0, count: 16)
        tek.bytes.withUnsafeBytes { derive(tek: $0, info: Self.rpikInfo, into: &out) }
        return RollingProximityIdentifierKey(bytes: Data(out))
    }

    public func associatedEncryptedMetadataKey(for tek: TemporaryExposureKey) -> AssociatedEncryptedMetadataKey {
        var out = [UInt8](repeating: 0, count: 16)
        tek.bytes.withUnsafeBytes { derive(tek: $0, info: Self.aemkInfo, into: &out) }
        return AssociatedEncryptedMetadataKey(bytes: Data(out))
    }

    /// Writes the RPIs of `count` consecutive intervals from `first` (at most 144, the spec's
    /// one AES call per key) into `output` (16 x count bytes), deriving the RPIK on the way.
    /// This is the matcher's hot path: no allocation beyond two small stack-like arrays.
    public func deriveRPIs(tek: UnsafeRawBufferPointer, first: ENIntervalNumber, count: Int,
                           into output: UnsafeMutableRawBufferPointer) throws {
        guard tek.count == TemporaryExposureKey.length else {
            throw KeyMaterialError.wrongLength(what: "temporary exposure key", expected: 16, actual: tek.count)
        }
        guard count >= 0, count <= Int(ENIntervalNumber.perDay), output.count >= count * 16 else {
            throw CryptoError.invalidInput(operation: "RPI derivation", reason: "count \(count) must be 0...144 and fit the output")
        }
        var rpik = [UInt8](repeating: 0, count: 16)
        derive(tek: tek, info: Self.rpikInfo, into: &rpik)
        defer { OPENSSL_cleanse(&rpik, rpik.count) }
        for j in 0..<count {
            let enin = first.rawValue &+ UInt32(j)
            let o = j * 16 + 12
            paddedData[o] = UInt8(truncatingIfNeeded: enin)
            paddedData[o + 1] = UInt8(truncatingIfNeeded: enin >> 8)
            paddedData[o + 2] = UInt8(truncatingIfNeeded: enin >> 16)
            paddedData[o + 3] = UInt8(truncatingIfNeeded: enin >> 24)
        }
        try rpik.withUnsafeBytes { key in
            try paddedData.withUnsafeBytes { input in
                try aes.encrypt(key: key, input: UnsafeRawBufferPointer(rebasing: input[0..<(count * 16)]), output: output)
            }
        }
    }

    /// RPIs of a key's whole validity (or any run of up to 144 intervals).
    public func rollingProximityIdentifiers(for tek: TemporaryExposureKey, from first: ENIntervalNumber,
                                            count: Int = Int(ENIntervalNumber.perDay)) throws -> [RollingProximityIdentifier] {
        var buffer = [UInt8](repeating: 0, count: count * 16)
        try tek.bytes.withUnsafeBytes { t in
            try buffer.withUnsafeMutableBytes { try deriveRPIs(tek: t, first: first, count: count, into: $0) }
        }
        return try (0..<count).map { try RollingProximityIdentifier(bytes: Data(buffer[($0 * 16)..<($0 * 16 + 16)])) }
    }

    /// The RPI of one interval.
    public func rollingProximityIdentifier(for tek: TemporaryExposureKey, interval: ENIntervalNumber) throws -> RollingProximityIdentifier {
        try rollingProximityIdentifiers(for: tek, from: interval, count: 1)[0]
    }

    /// AEM = AES-128-CTR(AEMK, IV = RPI, metadata). The same call decrypts.
    public static func associatedEncryptedMetadata(_ metadata: BluetoothMetadata, rpi: RollingProximityIdentifier,
                                                   aemk: AssociatedEncryptedMetadataKey) throws -> AssociatedEncryptedMetadata {
        try AssociatedEncryptedMetadata(bytes: AES128CTR.apply(key: aemk.bytes, iv: rpi.bytes, to: metadata.bytes))
    }

    /// Decrypts an AEM into metadata. The AEM is not authenticated: any 4 bytes decrypt, so
    /// callers must check plausibility (see `BluetoothMetadata.isPlausible`).
    public static func decryptMetadata(_ aem: AssociatedEncryptedMetadata, rpi: RollingProximityIdentifier,
                                       aemk: AssociatedEncryptedMetadataKey) throws -> BluetoothMetadata {
        try BluetoothMetadata(bytes: AES128CTR.apply(key: aemk.bytes, iv: rpi.bytes, to: aem.bytes))
    }
}

extension TemporaryExposureKey {
    /// A fresh TEK: 16 bytes from `random` (the CSPRNG in production).
    public static func generate(using random: inout some RandomBytesGenerator) throws -> TemporaryExposureKey {
        try TemporaryExposureKey(bytes: random.bytes(length))
    }
}
