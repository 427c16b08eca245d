import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ECDSA over NIST P-256 with SHA-256, the only signature scheme of GAEN key export files
/// (OID 1.2.840.10045.4.3.2). Signatures are DER (X9.62 `ECDSA-Sig-Value`), as in export.sig.
///
/// OpenSSL libcrypto is the one crypto provider; these types keep its pointers inside a
/// private owner class that frees them, check every size before a C call, and never print
/// key material.
public enum ECDSAError: Error, Equatable, CustomStringConvertible {
    /// The PEM text could not be read as a key of the expected kind.
    case invalidPEM(what: String, detail: String)
    /// The key is an EC key, but not on P-256 (or not an EC key at all).
    case wrongKeyType(expected: String, actual: String)
    /// An input is larger than any sensible value (checked before handing it to C).
    case inputTooLarge(what: String, limit: Int, actual: Int)
    /// OpenSSL reported a failure in `function`.
    case openSSL(function: String, detail: String)

    public var description: String {
        switch self {
        case .invalidPEM(let what, let detail): return "cannot read \(what) from PEM: \(detail)"
        case .wrongKeyType(let expected, let actual): return "expected a \(expected) key, got \(actual)"
        case .inputTooLarge(let what, let limit, let actual): return "\(what) is \(actual) bytes, more than the limit of \(limit)"
        case .openSSL(let function, let detail): return "OpenSSL \(function) failed: \(detail)"
        }
    }
}

/// Owns one `EVP_PKEY`. A key is never mutated after it is loaded or generated, and OpenSSL 3
/// allows one `EVP_PKEY` to be used by several threads for signing and verifying at once,
/// so sharing the owner across threads is safe.
private final class EVPKeyBox: @unchecked Sendable {
    let pkey: OpaquePointer
    init(_ pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }
}

/// The most recent OpenSSL error as text, clearing the thread's error queue so that a later
/// call does not report a stale error.
private func drainOpenSSLError() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return "no detail from OpenSSL" }
    var buf = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buf, buf.count)
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// PEM keys are small (a P-256 key is well under 1 KiB); anything far larger is not a key.
private let maxPEMLength = 64 * 1024

/// Runs `body` with a read-only memory BIO over `text`'s UTF-8 bytes.
private func withMemoryBIO<T>(_ text: String, what: String, _ body: (OpaquePointer) throws -> T) throws -> T {
    var bytes = Array(text.utf8)
    defer { bytes.withUnsafeMutableBytes { if let b = $0.baseAddress { memset(b, 0, $0.count) } } } // may hold a private key
    guard bytes.count <= maxPEMLength else {
        throw ECDSAError.inputTooLarge(what: "\(what) PEM", limit: maxPEMLength, actual: bytes.count)
    }
    return try bytes.withUnsafeBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
            throw ECDSAError.openSSL(function: "BIO_new_mem_buf", detail: drainOpenSSLError())
        }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Reads everything written to a memory BIO as a string.
private func drainBIO(_ bio: OpaquePointer) -> String {
    let pending = Int(BIO_ctrl_pending(bio))
    var out = [UInt8](repeating: 0, count: pending)
    let n = out.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
    return String(decoding: out.prefix(max(0, Int(n))), as: UTF8.self)
}

// Both PEM readers pass a passphrase callback that refuses: without one OpenSSL would
// prompt on the terminal for an encrypted PEM, which a daemon or a script must never do.

/// Checks that `pkey` is an EC key on P-256.
private func requireP256(_ pkey: OpaquePointer) throws {
    guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else {
        throw ECDSAError.wrongKeyType(expected: "EC P-256", actual: "non-EC key (type \(EVP_PKEY_get_base_id(pkey)))")
    }
    var name = [CChar](repeating: 0, count: 64)
    var len = 0
    guard EVP_PKEY_get_group_name(pkey, &name, name.count, &len) == 1 else {
        throw ECDSAError.wrongKeyType(expected: "EC P-256", actual: "EC key without a named curve")
    }
    let curve = String(decoding: name.prefix(len).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard curve == "prime256v1" || curve == "P-256" else {
        throw ECDSAError.wrongKeyType(expected: "EC P-256", actual: "EC \(curve)")
    }
}

/// A P-256 public key, for verifying export.sig signatures.
public struct P256PublicKey: Sendable, CustomStringConvertible {
    private let box: EVPKeyBox

    fileprivate init(box: EVPKeyBox) { self.box = box }

    /// Loads a `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo) PEM, as servers publish them.
    public init(pem: String) throws {
        let pkey: OpaquePointer = try withMemoryBIO(pem, what: "public key") { bio in
            guard let k = PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil) else {
                throw ECDSAError.invalidPEM(what: "public key", detail: drainOpenSSLError())
            }
            return k
        }
        let box = EVPKeyBox(pkey)
        try requireP256(pkey)
        self.box = box
    }

    /// The key as `-----BEGIN PUBLIC KEY-----` PEM.
    public var pemRepresentation: String {
        get throws {
            guard let bio = BIO_new(BIO_s_mem()) else { throw ECDSAError.openSSL(function: "BIO_new", detail: drainOpenSSLError()) }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PUBKEY(bio, box.pkey) == 1 else {
                throw ECDSAError.openSSL(function: "PEM_write_bio_PUBKEY", detail: drainOpenSSLError())
            }
            return drainBIO(bio)
        }
    }

    /// An ECDSA P-256 signature in DER is at most 72 bytes; longer input cannot verify.
    public static let maxSignatureLength = 72

    /// True when `signature` (DER) is a valid ECDSA P-256/SHA-256 signature of `message`.
    /// A malformed, empty or oversized signature is simply not valid; only an OpenSSL
    /// failure unrelated to the signature throws.
    public func isValidSignature(_ signature: Data, for message: Data) throws -> Bool {
        guard !signature.isEmpty, signature.count <= Self.maxSignatureLength else { return false }
        guard let ctx = EVP_MD_CTX_new() else { throw ECDSAError.openSSL(function: "EVP_MD_CTX_new", detail: drainOpenSSLError()) }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, box.pkey) == 1 else {
            throw ECDSAError.openSSL(function: "EVP_DigestVerifyInit", detail: drainOpenSSLError())
        }
        let rc = signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in
                EVP_DigestVerify(ctx, sig.bindMemory(to: UInt8.self).baseAddress, sig.count,
                                 msg.bindMemory(to: UInt8.self).baseAddress, msg.count)
            }
        }
        // 1: valid; 0: invalid; negative: the DER did not parse. Both of the latter mean "no".
        if rc != 1 { ERR_clear_error() }
        return rc == 1
    }

    public var description: String { "P256PublicKey" }
}

/// A P-256 private key, for signing key export files. Its description never shows the key.
public struct P256PrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private let box: EVPKeyBox

    /// Loads an unencrypted `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC1) PEM.
    /// Encrypted keys are refused rather than prompting for a passphrase.
    public init(pem: String) throws {
        let pkey: OpaquePointer = try withMemoryBIO(pem, what: "private key") { bio in
            guard let k = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
                throw ECDSAError.invalidPEM(what: "private key", detail: drainOpenSSLError())
            }
            return k
        }
        let box = EVPKeyBox(pkey)
        try requireP256(pkey)
        self.box = box
    }

    /// Generates a new key from OpenSSL's CSPRNG (for tests, benchmarks and new deployments).
    public static func generate() throws -> P256PrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw ECDSAError.openSSL(function: "EVP_PKEY_CTX_new_from_name", detail: drainOpenSSLError())
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1 else {
            throw ECDSAError.openSSL(function: "EVP_PKEY_keygen_init", detail: drainOpenSSLError())
        }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_generate(ctx, &pkey) == 1, let key = pkey else {
            throw ECDSAError.openSSL(function: "EVP_PKEY_generate", detail: drainOpenSSLError())
        }
        return P256PrivateKey(box: EVPKeyBox(key))
    }

    private init(box: EVPKeyBox) { self.box = box }

    /// The matching public key (shares the OpenSSL key object; only its public half is used).
    public var publicKey: P256PublicKey { P256PublicKey(box: box) }

    /// The key as unencrypted PKCS#8 `-----BEGIN PRIVATE KEY-----` PEM. This is the secret
    /// itself: write it only to a file meant for it.
    public var pemRepresentation: String {
        get throws {
            guard let bio = BIO_new(BIO_s_mem()) else { throw ECDSAError.openSSL(function: "BIO_new", detail: drainOpenSSLError()) }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PKCS8PrivateKey(bio, box.pkey, nil, nil, 0, nil, nil) == 1 else {
                throw ECDSAError.openSSL(function: "PEM_write_bio_PKCS8PrivateKey", detail: drainOpenSSLError())
            }
            return drainBIO(bio)
        }
    }

    /// Signs `message` (hashed with SHA-256 here) and returns a DER signature. The nonce comes
    /// from OpenSSL's CSPRNG, so two signatures of one message differ.
    public func signature(for message: Data) throws -> Data {
        guard let ctx = EVP_MD_CTX_new() else { throw ECDSAError.openSSL(function: "EVP_MD_CTX_new", detail: drainOpenSSLError()) }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, box.pkey) == 1 else {
            throw ECDSAError.openSSL(function: "EVP_DigestSignInit", detail: drainOpenSSLError())
        }
        var out = [UInt8](repeating: 0, count: P256PublicKey.maxSignatureLength)
        var length = out.count
        let rc = message.withUnsafeBytes { msg in
            out.withUnsafeMutableBytes { sig in
                EVP_DigestSign(ctx, sig.bindMemory(to: UInt8.self).baseAddress, &length,
                               msg.bindMemory(to: UInt8.self).baseAddress, msg.count)
            }
        }
        guard rc == 1, length <= out.count else {
            throw ECDSAError.openSSL(function: "EVP_DigestSign", detail: drainOpenSSLError())
        }
        return Data(out.prefix(length))
    }

    public var description: String { "P256PrivateKey(<redacted>)" }
    public var debugDescription: String { description }
}
