import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A source of random bytes. Pure code takes one as a parameter so that tests can pass a
/// deterministic source and production passes the CSPRNG.
public protocol RandomBytesGenerator: Sendable {
    mutating func bytes(_ count: Int) throws -> Data
}

/// OpenSSL's CSPRNG (RAND_bytes), seeded from the operating system.
public struct SecureRandom: RandomBytesGenerator {
    public init() {}
    public mutating func bytes(_ count: Int) throws -> Data {
        precondition(count >= 0 && count <= 1 << 20, "random request of \(count) bytes is out of range")
        var out = Data(count: count)
        if count == 0 { return out }
        let rc = out.withUnsafeMutableBytes { RAND_bytes($0.bindMemory(to: UInt8.self).baseAddress, Int32(count)) }
        guard rc == 1 else { throw CryptoError.fromOpenSSL("RAND_bytes") }
        return out
    }
}

/// A deterministic generator for tests and simulations (SplitMix64). Never for keys on air.
public struct SeededRandom: RandomBytesGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    public mutating func bytes(_ count: Int) throws -> Data {
        var out = Data(capacity: count)
        while out.count < count {
            var v = next()
            withUnsafeBytes(of: &v) { out.append(contentsOf: $0.prefix(count - out.count)) }
        }
        return out
    }
}
