import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// AES-128 in ECB mode over many blocks with one reusable OpenSSL context.
///
/// ECB is only safe for what GAEN uses it for (one block per distinct PaddedData); it is
/// internal to ENProtocol for that reason. Not Sendable: give each task its own instance.
final class AES128ECB {
    private let ctx: OpaquePointer

    init() throws {
        guard let c = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("AES-128-ECB context") }
        ctx = c
        try checkOpenSSL(EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nil, nil, nil), "AES-128-ECB init")
        EVP_CIPHER_CTX_set_padding(ctx, 0)
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// Encrypts `input` (a multiple of 16 bytes) under `key` (16 bytes) into `output`.
    func encrypt(key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws {
        guard key.count == 16 else { throw CryptoError.invalidKeyLength(operation: "AES-128-ECB", expected: 16, actual: key.count) }
        guard input.count % 16 == 0, output.count >= input.count, input.count <= Int(Int32.max) else {
            throw CryptoError.invalidInput(operation: "AES-128-ECB", reason: "input must be whole blocks and fit the output")
        }
        try checkOpenSSL(EVP_EncryptInit_ex(ctx, nil, nil, key.bindMemory(to: UInt8.self).baseAddress, nil), "AES-128-ECB key")
        var written: Int32 = 0
        try checkOpenSSL(EVP_EncryptUpdate(ctx, output.bindMemory(to: UInt8.self).baseAddress, &written,
                                           input.bindMemory(to: UInt8.self).baseAddress, Int32(input.count)), "AES-128-ECB encrypt")
    }
}

/// AES-128-CTR, the AEM cipher (IV = the RPI). Encryption and decryption are the same operation.
enum AES128CTR {
    static func apply(key: Data, iv: Data, to input: Data) throws -> Data {
        guard key.count == 16 else { throw CryptoError.invalidKeyLength(operation: "AES-128-CTR", expected: 16, actual: key.count) }
        guard iv.count == 16 else { throw CryptoError.invalidInput(operation: "AES-128-CTR", reason: "IV must be 16 bytes, got \(iv.count)") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("AES-128-CTR context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        try key.withUnsafeBytes { k in
            try iv.withUnsafeBytes { v in
                try checkOpenSSL(EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nil, k.bindMemory(to: UInt8.self).baseAddress,
                                                    v.bindMemory(to: UInt8.self).baseAddress), "AES-128-CTR init")
            }
        }
        var out = Data(count: input.count)
        var written: Int32 = 0
        if !input.isEmpty {
            try input.withUnsafeBytes { i in
                try out.withUnsafeMutableBytes { o in
                    try checkOpenSSL(EVP_EncryptUpdate(ctx, o.bindMemory(to: UInt8.self).baseAddress, &written,
                                                       i.bindMemory(to: UInt8.self).baseAddress, Int32(i.count)), "AES-128-CTR")
                }
            }
        }
        return out
    }
}

/// AES-256-GCM authenticated encryption, used by the store for every sensitive value.
public enum AES256GCM {
    public static let keyLength = 32
    public static let nonceLength = 12
    public static let tagLength = 16

    /// Seals `plaintext` under `key` with a fresh random nonce. Output: nonce || ciphertext || tag.
    public static func seal(_ plaintext: Data, key: Data, associatedData: Data, random: some RandomBytesGenerator) throws -> Data {
        var rng = random
        let nonce = try rng.bytes(nonceLength)
        return try seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
    }

    /// Seals with a caller-chosen nonce (tests and vectors); a nonce must never repeat under a key.
    public static func seal(_ plaintext: Data, key: Data, nonce: Data, associatedData: Data) throws -> Data {
        guard key.count == keyLength else { throw CryptoError.invalidKeyLength(operation: "AES-256-GCM", expected: keyLength, actual: key.count) }
        guard nonce.count == nonceLength else { throw CryptoError.invalidInput(operation: "AES-256-GCM", reason: "nonce must be 12 bytes") }
        guard plaintext.count < Int(Int32.max) - 64, associatedData.count < Int(Int32.max) else {
            throw CryptoError.invalidInput(operation: "AES-256-GCM", reason: "input too large")
        }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("AES-256-GCM context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        try checkOpenSSL(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil), "AES-256-GCM init")
        try key.withUnsafeBytes { k in
            try nonce.withUnsafeBytes { n in
                try checkOpenSSL(EVP_EncryptInit_ex(ctx, nil, nil, k.bindMemory(to: UInt8.self).baseAddress, n.bindMemory(to: UInt8.self).baseAddress), "AES-256-GCM key")
            }
        }
        var written: Int32 = 0
        if !associatedData.isEmpty {
            try associatedData.withUnsafeBytes { a in
                try checkOpenSSL(EVP_EncryptUpdate(ctx, nil, &written, a.bindMemory(to: UInt8.self).baseAddress, Int32(a.count)), "AES-256-GCM AAD")
            }
        }
        var out = Data(count: nonceLength + plaintext.count + tagLength)
        out.replaceSubrange(0..<nonceLength, with: nonce)
        try out.withUnsafeMutableBytes { o in
            let base = o.bindMemory(to: UInt8.self).baseAddress!
            if !plaintext.isEmpty {
                try plaintext.withUnsafeBytes { p in
                    try checkOpenSSL(EVP_EncryptUpdate(ctx, base + nonceLength, &written, p.bindMemory(to: UInt8.self).baseAddress, Int32(p.count)), "AES-256-GCM encrypt")
                }
            }
            try checkOpenSSL(EVP_EncryptFinal_ex(ctx, base + nonceLength + plaintext.count, &written), "AES-256-GCM final")
            try checkOpenSSL(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), base + nonceLength + plaintext.count), "AES-256-GCM tag")
        }
        return out
    }

    /// Opens nonce || ciphertext || tag; throws `authenticationFailed` on any tampering, wrong key
    /// or wrong associated data.
    public static func open(_ sealed: Data, key: Data, associatedData: Data) throws -> Data {
        guard key.count == keyLength else { throw CryptoError.invalidKeyLength(operation: "AES-256-GCM", expected: keyLength, actual: key.count) }
        guard sealed.count >= nonceLength + tagLength, sealed.count < Int(Int32.max) else {
            throw CryptoError.invalidInput(operation: "AES-256-GCM", reason: "sealed box of \(sealed.count) bytes is shorter than nonce and tag")
        }
        let box = Data(sealed) // indices from 0
        let ciphertextLength = box.count - nonceLength - tagLength
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("AES-256-GCM context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        try checkOpenSSL(EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil), "AES-256-GCM init")
        var plaintext = Data(count: ciphertextLength)
        let ok: Bool = try box.withUnsafeBytes { b in
            let base = b.bindMemory(to: UInt8.self).baseAddress!
            try key.withUnsafeBytes { k in
                try checkOpenSSL(EVP_DecryptInit_ex(ctx, nil, nil, k.bindMemory(to: UInt8.self).baseAddress, base), "AES-256-GCM key")
            }
            var written: Int32 = 0
            if !associatedData.isEmpty {
                try associatedData.withUnsafeBytes { a in
                    try checkOpenSSL(EVP_DecryptUpdate(ctx, nil, &written, a.bindMemory(to: UInt8.self).baseAddress, Int32(a.count)), "AES-256-GCM AAD")
                }
            }
            if ciphertextLength > 0 {
                try plaintext.withUnsafeMutableBytes { p in
                    try checkOpenSSL(EVP_DecryptUpdate(ctx, p.bindMemory(to: UInt8.self).baseAddress, &written, base + nonceLength, Int32(ciphertextLength)), "AES-256-GCM decrypt")
                }
            }
            var tag = [UInt8](UnsafeBufferPointer(start: base + nonceLength + ciphertextLength, count: tagLength))
            try checkOpenSSL(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag), "AES-256-GCM tag")
            var finalWritten: Int32 = 0
            return plaintext.withUnsafeMutableBytes { p in
                EVP_DecryptFinal_ex(ctx, p.bindMemory(to: UInt8.self).baseAddress! + ciphertextLength, &finalWritten) == 1
            }
        }
        ERR_clear_error()
        guard ok else { throw CryptoError.authenticationFailed }
        return plaintext
    }
}
