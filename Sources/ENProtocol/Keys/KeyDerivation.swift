import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

    /// The key schedule's hot path (matching derives an RPIK per diagnosis key, a million a
    /// second) runs HKDF on single SHA-256 compressions: the zero salt's HMAC pad states are
    /// absorbed once here, and every message (TEK, info || 0x01, inner digests) fits one padded
    /// block built in `block`, so a derivation is exactly six compressions with no allocation
    /// and no SHA256_Update/Final bookkeeping. Checked against HKDF.sha256 and the vectors.
    private let zeroSaltInner: SHA256_CTX
    private let zeroSaltOuter: SHA256_CTX
    /// Scratch for the compressions (`block`), the RPIK of the key being expanded, and the
    /// PaddedData of 144 intervals. Raw memory owned by this instance (no copy-on-write or
    /// exclusivity checks on the hot path); key-derived bytes in it are wiped in deinit. The
    /// diagnosis keys matching feeds through here are published keys anyway.
    private let scratch: UnsafeMutableRawPointer
    private var block: UnsafeMutablePointer<UInt8> { scratch.assumingMemoryBound(to: UInt8.self) }
    private var rpikScratch: UnsafeMutablePointer<UInt8> { (scratch + Self.rpikOffset).assumingMemoryBound(to: UInt8.self) }
    /// PaddedData blocks for one whole key; only the ENIN bytes change, and only when the first
    /// interval differs from the previous call's (the ENIN of block 0 says which it is).
    private var paddedData: UnsafeMutableRawPointer { scratch + Self.paddedOffset }
    private static let rpikOffset = SHA256.blockLength
    private static let paddedOffset = SHA256.blockLength + 64
    private static let scratchSize = paddedOffset + 16 * Int(ENIntervalNumber.perDay)
    private let aes: AES128ECB

    public init() throws {
        aes = try AES128ECB()
        scratch = UnsafeMutableRawPointer.allocate(byteCount: Self.scratchSize, alignment: 64)
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: Self.scratchSize)
        for b in 0..<Int(ENIntervalNumber.perDay) {
            (scratch + Self.paddedOffset + b * 16).copyMemory(from: Self.paddedDataPrefix, byteCount: Self.paddedDataPrefix.count)
            (scratch + Self.paddedOffset + b * 16 + 12).storeBytes(of: UInt32(b).littleEndian, as: UInt32.self)
        }
        // HKDF-Extract with "no salt" = HMAC keyed with HashLen zero bytes (RFC 5869 §2.2):
        // the pads are 0x36 and 0x5c repeated.
        let pad = scratch.assumingMemoryBound(to: UInt8.self)
        var inner = SHA256_CTX(), outer = SHA256_CTX()
        SHA256_Init(&inner)
        pad.update(repeating: 0x36, count: SHA256.blockLength)
        SHA256_Transform(&inner, pad)
        SHA256_Init(&outer)
        pad.update(repeating: 0x5c, count: SHA256.blockLength)
        SHA256_Transform(&outer, pad)
        zeroSaltInner = inner
        zeroSaltOuter = outer
    }

    deinit {
        OPENSSL_cleanse(scratch, Self.scratchSize)
        scratch.deallocate()
    }

    /// Pads a message of `length` bytes already in `block[0..<length]` as the last block of a
    /// hash whose first 64 bytes (the HMAC pad) were absorbed already: 0x80, zeros, bit length.
    @inline(__always)
    private func padBlock(messageLength length: Int) {
        block[length] = 0x80
        (block + length + 1).update(repeating: 0, count: SHA256.blockLength - 8 - length - 1)
        let bits = UInt64(SHA256.blockLength + length) * 8
        for i in 0..<8 { block[SHA256.blockLength - 1 - i] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i))) }
    }

    /// Writes the state of `ctx` (a finished SHA-256) big-endian into `block[0..<32]`.
    @inline(__always)
    private func digest(of ctx: inout SHA256_CTX) {
        withUnsafeBytes(of: &ctx.h) { h in
            for i in 0..<8 {
                let w = h.load(fromByteOffset: i * 4, as: UInt32.self)
                (UnsafeMutableRawPointer(block) + i * 4).storeBytes(of: w.bigEndian, as: UInt32.self)
            }
        }
    }

    /// HKDF-SHA256(IKM = tek, salt = none, info, L = 16) into `out` (16 bytes). One
    /// HKDF-Expand block suffices for L = 16: T(1) = HMAC(PRK, info || 0x01).
    private func derive(tek: UnsafeRawBufferPointer, info: [UInt8], into out: UnsafeMutablePointer<UInt8>) {
        // PRK = HMAC(zeros, TEK): inner then outer hash, one block each.
        var ctx = zeroSaltInner
        UnsafeMutableRawPointer(block).copyMemory(from: tek.baseAddress!, byteCount: tek.count)
        padBlock(messageLength: tek.count)
        SHA256_Transform(&ctx, block)
        digest(of: &ctx)
        ctx = zeroSaltOuter
        padBlock(messageLength: SHA256.digestLength)
        SHA256_Transform(&ctx, block)
        digest(of: &ctx) // block[0..<32] = PRK
        // HMAC keyed with PRK (32 bytes, zero-padded to a block): its two pad states.
        var inner = SHA256_CTX(), outer = SHA256_CTX()
        SHA256_Init(&inner); SHA256_Init(&outer)
        for i in 0..<SHA256.digestLength { block[i] ^= 0x36 }
        (block + SHA256.digestLength).update(repeating: 0x36, count: SHA256.blockLength - SHA256.digestLength)
        SHA256_Transform(&inner, block)
        for i in 0..<SHA256.blockLength { block[i] ^= 0x36 ^ 0x5c }
        SHA256_Transform(&outer, block)
        // T(1) = HMAC(PRK, info || 0x01).
        for (i, b) in info.enumerated() { block[i] = b }
        block[info.count] = 1
        padBlock(messageLength: info.count + 1)
        SHA256_Transform(&inner, block)
        digest(of: &inner)
        padBlock(messageLength: SHA256.digestLength)
        SHA256_Transform(&outer, block)
        digest(of: &outer)
        out.update(from: block, count: 16)
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
        derive(tek: tek, info: Self.rpikInfo, into: rpikScratch)
        if count > 0 { try encryptRPIs(rpik: rpikScratch, first: first.rawValue, count: count, into: output.baseAddress!) }
    }

    /// The RPIK of one TEK (16 bytes at `tek`) into `out`: OpenSSL's SHA-256, one key at a
    /// time (the matcher's portable path; the lockstep path is CGaenCrypto's gaen_hkdf16).
    func deriveRPIK(tek: UnsafeRawPointer, into out: UnsafeMutablePointer<UInt8>) {
        derive(tek: UnsafeRawBufferPointer(start: tek, count: TemporaryExposureKey.length), info: Self.rpikInfo, into: out)
    }

    /// RPIs of `count` (0...144) intervals from `first` under an RPIK already derived, through
    /// OpenSSL EVP (the matcher's portable AES path).
    func encryptRPIs(rpik: UnsafePointer<UInt8>, first: UInt32, count: Int, into output: UnsafeMutableRawPointer) throws {
        if paddedData.loadUnaligned(fromByteOffset: 12, as: UInt32.self) != first.littleEndian {
            for j in 0..<Int(ENIntervalNumber.perDay) {
                paddedData.storeBytes(of: (first &+ UInt32(j)).littleEndian, toByteOffset: j * 16 + 12, as: UInt32.self)
            }
        }
        try aes.encrypt(key: UnsafeRawBufferPointer(start: rpik, count: 16),
                        input: UnsafeRawBufferPointer(start: paddedData, count: count * 16),
                        output: UnsafeMutableRawBufferPointer(start: output, count: count * 16))
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
