/// Exposure results with the semantics and field names of the Android Exposure Notifications
/// API (v2): ScanInstance, ExposureWindow. JSON uses exactly these names.

/// Infectiousness from the diagnosis-key data mapping.
public enum Infectiousness: Int, Sendable, Codable, CaseIterable {
    case none = 0
    case standard = 1
    case high = 2
}

/// Calibration confidence, from the AEM's metadata v1.1 bits 3..2 (0 lowest ... 3 highest).
public enum CalibrationConfidence: Int, Sendable, Codable, CaseIterable {
    case lowest = 0
    case low = 1
    case medium = 2
    case high = 3
}

/// Sightings of one RPI within one scan.
public struct ScanInstance: Hashable, Sendable, Codable {
    public var typicalAttenuationDb: Int
    public var minAttenuationDb: Int
    public var secondsSinceLastScan: Int
    public init(typicalAttenuationDb: Int, minAttenuationDb: Int, secondsSinceLastScan: Int) {
        self.typicalAttenuationDb = typicalAttenuationDb
        self.minAttenuationDb = minAttenuationDb
        self.secondsSinceLastScan = secondsSinceLastScan
    }
}

/// Up to 30 minutes of scan instances of one diagnosis key on one UTC day.
public struct ExposureWindow: Hashable, Sendable, Codable {
    /// Midnight UTC of the window's day, in milliseconds since the epoch.
    public var dateMillisSinceEpoch: Int64
    public var reportType: Int
    public var infectiousness: Int
    public var calibrationConfidence: Int
    public var scanInstances: [ScanInstance]
    /// Not part of the Android API; carried for the v1-style engines that need it (CWA v1).
    public var transmissionRiskLevel: Int?

    public init(dateMillisSinceEpoch: Int64, reportType: Int, infectiousness: Int, calibrationConfidence: Int,
                scanInstances: [ScanInstance], transmissionRiskLevel: Int? = nil) {
        self.dateMillisSinceEpoch = dateMillisSinceEpoch
        self.reportType = reportType
        self.infectiousness = infectiousness
        self.calibrationConfidence = calibrationConfidence
        self.scanInstances = scanInstances
        self.transmissionRiskLevel = transmissionRiskLevel
    }

    public var day: UTCDay { UTCDay(Int32(dateMillisSinceEpoch / 86_400_000)) }
}
