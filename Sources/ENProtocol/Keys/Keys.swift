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

/// A Temporary Exposure Key's 16 secret bytes. Its description is redacted so that a key
/// never reaches a log by accident; use `hexString` where showing it is the point.
public struct TemporaryExposureKey: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public static let length = 16
    public let bytes: Data

    public init(bytes: Data) throws {
        guard bytes.count == Self.length else {
            throw KeyMaterialError.wrongLength(what: "temporary exposure key", expected: Self.length, actual: bytes.count)
        }
        self.bytes = Data(bytes) // rebase so indices start at 0
    }

    public init(hex: String) throws { try self.init(bytes: Data(hex: hex)) }

    public var hexString: String { bytes.hexString }
    public var description: String { "TemporaryExposureKey(<redacted>)" }
    public var debugDescription: String { description }
}

/// Rolling Proximity Identifier: 16 bytes broadcast in the 0xFD6F service data.
public struct RollingProximityIdentifier: Hashable, Sendable, CustomStringConvertible {
    public static let length = 16
    public let bytes: Data
    public init(bytes: Data) throws {
        guard bytes.count == Self.length else {
            throw KeyMaterialError.wrongLength(what: "rolling proximity identifier", expected: Self.length, actual: bytes.count)
        }
        self.bytes = Data(bytes)
    }
    public init(hex: String) throws { try self.init(bytes: Data(hex: hex)) }
    public var hexString: String { bytes.hexString }
    public var description: String { hexString }
}

/// Associated Encrypted Metadata: the 4 metadata bytes encrypted under AEMK with the RPI as IV.
public struct AssociatedEncryptedMetadata: Hashable, Sendable, CustomStringConvertible {
    public static let length = 4
    public let bytes: Data
    public init(bytes: Data) throws {
        guard bytes.count == Self.length else {
            throw KeyMaterialError.wrongLength(what: "associated encrypted metadata", expected: Self.length, actual: bytes.count)
        }
        self.bytes = Data(bytes)
    }
    public init(hex: String) throws { try self.init(bytes: Data(hex: hex)) }
    public var hexString: String { bytes.hexString }
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
