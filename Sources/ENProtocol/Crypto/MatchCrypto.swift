import CGaenCrypto

/// The code that derives RPIs in the matcher: AES-128 (OpenSSL EVP, or AES-NI/VAES/ARMv8 in
/// CGaenCrypto, chosen from what the CPU reports) and HKDF (OpenSSL's SHA-256 one key at a
/// time, or SHA-NI / the ARMv8 SHA2 extension with several keys in lockstep). Every choice
/// gives the same bytes (tests compare each path the CPU supports with EVP and with Google's
/// vectors; scripts/test-arm64-crypto.sh the arm64 ones under qemu); they differ in speed.
public struct MatchCrypto: Sendable, Hashable, CustomStringConvertible {
    public enum AES: Int32, Sendable, CaseIterable {
        /// OpenSSL EVP: the portable path, on every CPU.
        case evp = 0
        case aesni = 1
        case vaes256 = 2
        case vaes512 = 3
        case armv8 = 4
    }

    public var aes: AES
    /// Keys per lockstep HKDF call on SHA-NI or ARMv8 SHA2 (1, 2 or 4; named `sha-ni-N` on both);
    /// 0 = OpenSSL SHA-256, one key at a time.
    public var hkdfLanes: Int

    public init(aes: AES, hkdfLanes: Int) {
        self.aes = aes
        self.hkdfLanes = hkdfLanes
    }

    /// OpenSSL only: what runs where CGaenCrypto has nothing for the CPU.
    public static let portable = MatchCrypto(aes: .evp, hkdfLanes: 0)

    /// The fastest this CPU supports.
    public static var fastest: MatchCrypto {
        MatchCrypto(aes: AES(rawValue: gaen_aes_best()) ?? .evp, hkdfLanes: gaen_sha_lockstep_supported() != 0 ? 4 : 0)
    }

    /// Whether this CPU can run it.
    public var isSupported: Bool {
        let aesOK = aes == .evp || gaen_aes_supported() & (1 << UInt32(aes.rawValue)) != 0
        let hkdfOK = hkdfLanes == 0 || ([1, 2, 4].contains(hkdfLanes) && gaen_sha_lockstep_supported() != 0)
        return aesOK && hkdfOK
    }

    /// The AES implementations this CPU supports (EVP always).
    public static var supportedAES: [AES] { AES.allCases.filter { MatchCrypto(aes: $0, hkdfLanes: 0).isSupported } }

    /// A set of supported combinations that covers every AES path (with and without the
    /// lockstep HKDF) and every lane count: what tests and GaenBench compare with `.portable`.
    public static var allSupported: [MatchCrypto] {
        let lanes = gaen_sha_lockstep_supported() != 0 ? [0, 4] : [0]
        var out = supportedAES.flatMap { aes in lanes.map { MatchCrypto(aes: aes, hkdfLanes: $0) } }
        if gaen_sha_lockstep_supported() != 0 { out += [1, 2].map { MatchCrypto(aes: fastest.aes, hkdfLanes: $0) } }
        return out
    }

    /// "portable", "fastest", or "AES/HKDF" such as "vaes512/sha-ni-4" (GaenBench --crypto,
    /// GAEND_MATCH_CRYPTO). Nil for an unknown name.
    public init?(named name: String) {
        switch name {
        case "portable": self = .portable
        case "fastest", "": self = .fastest
        default:
            let parts = name.split(separator: "/").map(String.init)
            guard let a = parts.first, let aes = AES.named[a] else { return nil }
            guard parts.count <= 2 else { return nil }
            var lanes = 0
            if parts.count == 2, parts[1] != "openssl-sha256" {
                guard parts[1].hasPrefix("sha-ni-"), let n = Int(parts[1].dropFirst(7)), [1, 2, 4].contains(n) else { return nil }
                lanes = n
            }
            self.init(aes: aes, hkdfLanes: lanes)
        }
    }

    public var description: String {
        let name = AES.named.first { $0.value == aes }!.key
        return hkdfLanes == 0 ? "\(name)/openssl-sha256" : "\(name)/sha-ni-\(hkdfLanes)"
    }
}

extension MatchCrypto.AES {
    static let named: [String: MatchCrypto.AES] = ["evp": .evp, "aesni": .aesni, "vaes256": .vaes256, "vaes512": .vaes512, "armv8": .armv8]
}
