import COpenSSL

/// A failure inside the crypto provider. Messages name the operation and OpenSSL's reason,
/// never key material.
public enum CryptoError: Error, Equatable, CustomStringConvertible {
    case openSSL(operation: String, reason: String)
    case invalidKeyLength(operation: String, expected: Int, actual: Int)
    case invalidInput(operation: String, reason: String)
    case authenticationFailed

    public var description: String {
        switch self {
        case .openSSL(let op, let reason): return "\(op) failed in OpenSSL: \(reason)"
        case .invalidKeyLength(let op, let e, let a): return "\(op): key must be \(e) bytes, got \(a)"
        case .invalidInput(let op, let reason): return "\(op): \(reason)"
        case .authenticationFailed: return "authentication failed: the data or its key is not the one it was sealed with"
        }
    }

    /// Drains OpenSSL's thread-local error queue into one error.
    static func fromOpenSSL(_ operation: String) -> CryptoError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return .openSSL(operation: operation, reason: reasons.isEmpty ? "unknown error" : reasons.joined(separator: "; "))
    }
}

/// Checks an OpenSSL return code (1 = success) and throws with the queued reason otherwise.
@inline(__always)
func checkOpenSSL(_ result: Int32, _ operation: @autoclosure () -> String) throws {
    if result != 1 { throw CryptoError.fromOpenSSL(operation()) }
}
