/// A duration the controller counts in 0.625 ms slots, within the range the spec sets for its
/// use: the checks, conversions and text every such parameter shares.
public protocol SlotDuration: Hashable, Comparable, Sendable, CustomStringConvertible {
    static var validUnits: ClosedRange<UInt16> { get }
    /// What the value is, for errors ("advertising interval").
    static var what: String { get }
    var units: UInt16 { get }
    init(units: UInt16) throws
}

extension SlotDuration {
    /// `units` when `validUnits` holds it; otherwise an error giving the range in units and ms.
    public static func checked(_ units: UInt16) throws -> UInt16 {
        guard validUnits.contains(units) else {
            let range = validUnits
            throw HCIParameterError(what: what, expected: "0x\(hex4(range.lowerBound))...0x\(hex4(range.upperBound)) (\(millisecondsRange))",
                                    actual: "0x\(hex4(units))")
        }
        return units
    }

    /// Rounds to the nearest 0.625 ms unit.
    public init(milliseconds: Double) throws {
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 65536 * 0.625 else {
            throw HCIParameterError(what: Self.what, expected: Self.millisecondsRange, actual: "\(milliseconds) ms")
        }
        try self.init(units: UInt16((milliseconds / 0.625).rounded()))
    }

    public var milliseconds: Double { Double(units) * 0.625 }
    public static func < (a: Self, b: Self) -> Bool { a.units < b.units }
    public var description: String { "\(milliseconds) ms" }

    /// "20-10240 ms": the valid range in milliseconds, whole ones without a point.
    static var millisecondsRange: String {
        func text(_ units: UInt16) -> String {
            let ms = Double(units) * 0.625
            return ms == ms.rounded() ? String(Int(ms)) : String(ms)
        }
        return "\(text(validUnits.lowerBound))-\(text(validUnits.upperBound)) ms"
    }
}

/// Advertising interval in 0.625 ms units, 0x0020...0x4000 (20 ms ... 10.24 s)
/// (Vol 4 Part E, 7.8.5 Advertising_Interval_Min/Max).
public struct AdvertisingInterval: SlotDuration {
    public static let validUnits: ClosedRange<UInt16> = 0x0020...0x4000
    public static let what = "advertising interval"
    public let units: UInt16
    public init(units: UInt16) throws { self.units = try Self.checked(units) }
}

/// LE scan interval or window in 0.625 ms units, 0x0004...0x4000 (2.5 ms ... 10.24 s)
/// (Vol 4 Part E, 7.8.10 LE_Scan_Interval / LE_Scan_Window).
public struct ScanTiming: SlotDuration {
    public static let validUnits: ClosedRange<UInt16> = 0x0004...0x4000
    public static let what = "scan interval/window"
    public let units: UInt16
    public init(units: UInt16) throws { self.units = try Self.checked(units) }
}

/// Advertising channels 37, 38, 39 (7.8.5 Advertising_Channel_Map); never empty.
public struct AdvertisingChannelMap: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let channel37 = Self(rawValue: 0x01)
    public static let channel38 = Self(rawValue: 0x02)
    public static let channel39 = Self(rawValue: 0x04)
    public static let all: Self = [.channel37, .channel38, .channel39]
}

/// Legacy advertising PDU types for LE Set Advertising Parameters (7.8.5 Advertising_Type).
public enum LegacyAdvertisingType: UInt8, Sendable, CaseIterable {
    /// Connectable and scannable undirected (ADV_IND).
    case advInd = 0x00
    /// Connectable directed, high duty cycle (ADV_DIRECT_IND).
    case advDirectIndHighDuty = 0x01
    /// Scannable undirected (ADV_SCAN_IND).
    case advScanInd = 0x02
    /// Non-connectable, non-scannable undirected (ADV_NONCONN_IND): what GAEN uses.
    case advNonconnInd = 0x03
    /// Connectable directed, low duty cycle (ADV_DIRECT_IND).
    case advDirectIndLowDuty = 0x04
}

/// Scan type for LE Set Scan Parameters (7.8.10 LE_Scan_Type).
public enum LEScanType: UInt8, Sendable, CaseIterable {
    case passive = 0x00
    case active = 0x01
}
