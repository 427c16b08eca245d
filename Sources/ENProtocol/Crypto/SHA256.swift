import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SHA-256 and HMAC-SHA256 through OpenSSL's allocation-free low-level API.
public enum SHA256 {
    public static let digestLength = 32
    public static let blockLength = 64

    public static func hash<D: DataProtocol>(_ data: D) -> Data {
        var ctx = SHA256_CTX()
        SHA256_Init(&ctx)
        for region in data.regions {
            region.withUnsafeBytes { _ = SHA256_Update(&ctx, $0.baseAddress, $0.count) }
        }
        var out = Data(count: digestLength)
        out.withUnsafeMutableBytes { _ = SHA256_Final($0.bindMemory(to: UInt8.self).baseAddress, &ctx) }
        return out
    }

    /// A digest of bytes that arrive in pieces (a download checked as it streams).
    public struct Hasher: Sendable {
        private var ctx = SHA256_CTX()
        public init() { SHA256_Init(&ctx) }
        public mutating func update(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            _ = SHA256_Update(&ctx, bytes.baseAddress, bytes.count)
        }
        public mutating func finalize() -> Data {
            var out = Data(count: SHA256.digestLength)
            out.withUnsafeMutableBytes { _ = SHA256_Final($0.bindMemory(to: UInt8.self).baseAddress, &ctx) }
            return out
        }
    }
}

/// HMAC-SHA256 with the key's inner and outer pad blocks absorbed once, so each message costs
/// only the compressions of the message itself plus one for the outer hash. Value semantics:
/// copies share nothing mutable.
struct HMACSHA256 {
    private var inner = SHA256_CTX()
    private var outer = SHA256_CTX()

    init(key: UnsafeRawBufferPointer) {
        var block = [UInt8](repeating: 0, count: SHA256.blockLength)
        if key.count > SHA256.blockLength {
            var ctx = SHA256_CTX(); SHA256_Init(&ctx)
            SHA256_Update(&ctx, key.baseAddress, key.count)
            block.withUnsafeMutableBufferPointer { _ = SHA256_Final($0.baseAddress, &ctx) }
        } else if key.count > 0 {
            for i in 0..<key.count { block[i] = key[i] }
        }
        var ipad = block.map { $0 ^ 0x36 }
        var opad = block.map { $0 ^ 0x5c }
        SHA256_Init(&inner); SHA256_Update(&inner, &ipad, ipad.count)
        SHA256_Init(&outer); SHA256_Update(&outer, &opad, opad.count)
        // Key-derived pads are secret: wipe the temporaries.
        OPENSSL_cleanse(&block, block.count); OPENSSL_cleanse(&ipad, ipad.count); OPENSSL_cleanse(&opad, opad.count)
    }

    /// MAC of the concatenation of `parts`, written to `out` (32 bytes).
    func mac(_ parts: [UnsafeRawBufferPointer], into out: UnsafeMutablePointer<UInt8>) {
        var i = inner
        for p in parts { SHA256_Update(&i, p.baseAddress, p.count) }
        var innerDigest = [UInt8](repeating: 0, count: SHA256.digestLength)
        SHA256_Final(&innerDigest, &i)
        var o = outer
        SHA256_Update(&o, innerDigest, innerDigest.count)
        SHA256_Final(out, &o)
    }
}
