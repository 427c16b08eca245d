/// HCI error codes (Core spec Vol 1 Part F, 1.3 "List of error codes"). Status 0x00 is success.
public enum HCIStatusCode: Equatable, Hashable, Sendable, CustomStringConvertible {
    case success
    case unknownCommand
    case unknownConnectionIdentifier
    case hardwareFailure
    case pageTimeout
    case authenticationFailure
    case pinOrKeyMissing
    case memoryCapacityExceeded
    case connectionTimeout
    case connectionLimitExceeded
    case commandDisallowed
    case connectionRejectedLimitedResources
    case connectionRejectedSecurity
    case connectionRejectedUnacceptableAddress
    case connectionAcceptTimeoutExceeded
    case unsupportedFeatureOrParameterValue
    case invalidCommandParameters
    case remoteUserTerminatedConnection
    case connectionTerminatedByLocalHost
    case unspecifiedError
    case controllerBusy
    case unacceptableConnectionParameters
    case advertisingTimeout
    case connectionFailedToBeEstablished
    case limitReached
    case other(UInt8)

    private static let table: [(UInt8, HCIStatusCode, String)] = [
        (0x00, .success, "Success"),
        (0x01, .unknownCommand, "Unknown HCI Command"),
        (0x02, .unknownConnectionIdentifier, "Unknown Connection Identifier"),
        (0x03, .hardwareFailure, "Hardware Failure"),
        (0x04, .pageTimeout, "Page Timeout"),
        (0x05, .authenticationFailure, "Authentication Failure"),
        (0x06, .pinOrKeyMissing, "PIN or Key Missing"),
        (0x07, .memoryCapacityExceeded, "Memory Capacity Exceeded"),
        (0x08, .connectionTimeout, "Connection Timeout"),
        (0x09, .connectionLimitExceeded, "Connection Limit Exceeded"),
        (0x0C, .commandDisallowed, "Command Disallowed"),
        (0x0D, .connectionRejectedLimitedResources, "Connection Rejected due to Limited Resources"),
        (0x0E, .connectionRejectedSecurity, "Connection Rejected Due To Security Reasons"),
        (0x0F, .connectionRejectedUnacceptableAddress, "Connection Rejected due to Unacceptable BD_ADDR"),
        (0x10, .connectionAcceptTimeoutExceeded, "Connection Accept Timeout Exceeded"),
        (0x11, .unsupportedFeatureOrParameterValue, "Unsupported Feature or Parameter Value"),
        (0x12, .invalidCommandParameters, "Invalid HCI Command Parameters"),
        (0x13, .remoteUserTerminatedConnection, "Remote User Terminated Connection"),
        (0x16, .connectionTerminatedByLocalHost, "Connection Terminated By Local Host"),
        (0x1F, .unspecifiedError, "Unspecified Error"),
        (0x3A, .controllerBusy, "Controller Busy"),
        (0x3B, .unacceptableConnectionParameters, "Unacceptable Connection Parameters"),
        (0x3C, .advertisingTimeout, "Advertising Timeout"),
        (0x3E, .connectionFailedToBeEstablished, "Connection Failed to be Established"),
        (0x43, .limitReached, "Limit Reached"),
    ]

    public init(rawValue: UInt8) {
        self = Self.table.first { $0.0 == rawValue }?.1 ?? .other(rawValue)
    }

    public var rawValue: UInt8 {
        if case let .other(v) = self { return v }
        return Self.table.first { $0.1 == self }!.0
    }

    /// The spec's name, e.g. "Command Disallowed (0x0c)".
    public var description: String {
        let name = Self.table.first { $0.0 == rawValue }?.2 ?? "Reserved"
        return "\(name) (0x\(hex2(rawValue)))"
    }
}
