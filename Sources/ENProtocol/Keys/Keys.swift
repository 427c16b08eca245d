#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Errors for values whose size the spec fixes.
public enum KeyMaterialError: Error, Equatable, CustomStringConvertible {
    case wrongLength(what: String, expected: Int, actual: Int)
    public var description: String {
        switch self {
        case .wrongLength(let what, let e, let a): return "\(what) must be \(e) bytes, got \(a)"
        }
    }
}

/// A value of bytes whose number the spec fixes (a key, an identifier, metadata): the length
/// check, the hex form and reading one from hex that every such value shares.
public protocol FixedLengthBytes: Hashable, Sendable {
    static var length: Int { get }
    /// What the value is, for errors ("rolling proximity identifier").
    static var what: String { get }
    var bytes: Data { get }
    init(bytes: Data) throws
}

extension FixedLengthBytes {
    /// `bytes`, rebased so indices start at 0, when there are `length` of them.
    public static func checked(_ bytes: Data) throws -> Data {
        guard bytes.count == length else { throw KeyMaterialError.wrongLength(what: what, expected: length, actual: bytes.count) }
        return Data(bytes)
    }

    public init(hex: String) throws { try self.init(bytes: Data(hex: hex)) }
    public var hexString: String { bytes.hexString }
}

/// A Temporary Exposure Key's 16 secret bytes. Its description is redacted so that a key
/// never reaches a log by accident; use `hexString` where showing it is the point.
public struct TemporaryExposureKey: FixedLengthBytes, CustomStringConvertible, CustomDebugStringConvertible {
    public static let length = 16
    public static let what = "temporary exposure key"
    public let bytes: Data
    public init(bytes: Data) throws { self.bytes = try Self.checked(bytes) }
    public var description: String { "TemporaryExposureKey(<redacted>)" }
    public var debugDescription: String { description }
}

/// Rolling Proximity Identifier: 16 bytes broadcast in the 0xFD6F service data.
public struct RollingProximityIdentifier: FixedLengthBytes, CustomStringConvertible {
    public static let length = 16
    public static let what = "rolling proximity identifier"
    public let bytes: Data
    public init(bytes: Data) throws { self.bytes = try Self.checked(bytes) }
    public var description: String { hexString }
}

/// Associated Encrypted Metadata: the 4 metadata bytes encrypted under AEMK with the RPI as IV.
public struct AssociatedEncryptedMetadata: FixedLengthBytes, CustomStringConvertible {
    public static let length = 4
    public static let what = "associated encrypted metadata"
    public let bytes: Data
    public init(bytes: Data) throws { self.bytes = try Self.checked(bytes) }
    public var description: String { hexString }
}

/// Report type of a diagnosis key (values of the key export proto's ReportType enum).
public enum ReportType: Int, Sendable, Codable, CaseIterable {
    case unknown = 0
    case confirmedTest = 1
    case confirmedClinicalDiagnosis = 2
    case selfReport = 3
    case recursive = 4
    case revoked = 5
}

/// A diagnosis key as published in a key export file: a TEK plus what the server says of it.
public struct DiagnosisKey: Hashable, Sendable {
    public var key: TemporaryExposureKey
    public var rollingStartIntervalNumber: ENIntervalNumber
    /// Intervals of validity, 1...144 (the proto's default when absent is 144).
    public var rollingPeriod: UInt32
    /// Deprecated in v2 but still carried by servers and used by v1 risk scoring (0...8).
    public var transmissionRiskLevel: Int32?
    public var reportType: ReportType?
    public var daysSinceOnsetOfSymptoms: Int32?

    public init(key: TemporaryExposureKey, rollingStartIntervalNumber: ENIntervalNumber, rollingPeriod: UInt32 = 144,
                transmissionRiskLevel: Int32? = nil, reportType: ReportType? = nil, daysSinceOnsetOfSymptoms: Int32? = nil) {
        self.key = key
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
        self.reportType = reportType
        self.daysSinceOnsetOfSymptoms = daysSinceOnsetOfSymptoms
    }

    /// First interval after the key's validity.
    public var validityEnd: ENIntervalNumber { rollingStartIntervalNumber.advanced(by: Int(rollingPeriod)) }
}
