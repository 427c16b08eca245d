import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// HKDF-SHA256 (RFC 5869), on OpenSSL's SHA-256.
///
/// Written over our HMAC rather than OpenSSL's EVP_PKEY HKDF because the EVP path allocates
/// and configures a context per call; matching derives RPIKs for a million keys a second and
/// needs the salt's pad states computed once. Tests check it against OpenSSL's EVP HKDF.
public enum HKDF {
    public static func sha256(ikm: Data, salt: Data = Data(), info: Data, length: Int) throws -> Data {
        guard length > 0, length <= 255 * SHA256.digestLength else {
            throw CryptoError.invalidInput(operation: "HKDF-SHA256", reason: "output length \(length) outside 1...\(255 * SHA256.digestLength)")
        }
        let extractor = salt.withUnsafeBytes { HMACSHA256(key: $0) }
        var prk = [UInt8](repeating: 0, count: SHA256.digestLength)
        ikm.withUnsafeBytes { extractor.mac([$0], into: &prk) }
        defer { OPENSSL_cleanse(&prk, prk.count) }
        return expand(prk: prk, info: info, length: length)
    }

    static func expand(prk: [UInt8], info: Data, length: Int) -> Data {
        let expander = prk.withUnsafeBytes { HMACSHA256(key: $0) }
        var okm = Data(capacity: length + SHA256.digestLength)
        var previous = [UInt8]()
        var block = [UInt8](repeating: 0, count: SHA256.digestLength)
        var counter: UInt8 = 1
        while okm.count < length {
            previous.withUnsafeBytes { prev in
                info.withUnsafeBytes { inf in
                    withUnsafeBytes(of: counter) { ctr in expander.mac([prev, inf, ctr], into: &block) }
                }
            }
            okm.append(contentsOf: block)
            previous = block
            counter &+= 1
        }
        OPENSSL_cleanse(&block, block.count)
        return okm.prefix(length)
    }

    /// OpenSSL's own EVP HKDF, kept as the reference our fast path is tested against.
    static func sha256ViaEVP(ikm: Data, salt: Data, info: Data, length: Int) throws -> Data {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw CryptoError.fromOpenSSL("HKDF context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOpenSSL(EVP_PKEY_derive_init(ctx), "HKDF init")
        try checkOpenSSL(EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()), "HKDF digest")
        if !salt.isEmpty {
            try salt.withUnsafeBytes { try checkOpenSSL(EVP_PKEY_CTX_set1_hkdf_salt(ctx, $0.bindMemory(to: UInt8.self).baseAddress, Int32($0.count)), "HKDF salt") }
        }
        try ikm.withUnsafeBytes { try checkOpenSSL(EVP_PKEY_CTX_set1_hkdf_key(ctx, $0.bindMemory(to: UInt8.self).baseAddress, Int32($0.count)), "HKDF key") }
        try info.withUnsafeBytes { try checkOpenSSL(EVP_PKEY_CTX_add1_hkdf_info(ctx, $0.bindMemory(to: UInt8.self).baseAddress, Int32($0.count)), "HKDF info") }
        var out = Data(count: length)
        var outLength = length
        try out.withUnsafeMutableBytes { try checkOpenSSL(EVP_PKEY_derive(ctx, $0.bindMemory(to: UInt8.self).baseAddress, &outLength), "HKDF derive") }
        return out
    }
}
