import HCIProtocol

/// Settings of an `HCIControllerSession`.
package struct HCISessionConfiguration: Sendable {
    /// How long a command may wait for its Command Complete/Status before it fails.
    package var commandTimeout: Duration = .seconds(2)
    /// First reconnect delay; doubled after each failed attempt up to `reconnectMaximumDelay`.
    package var reconnectInitialDelay: Duration = .milliseconds(100)
    package var reconnectMaximumDelay: Duration = .seconds(2)
    /// Give up after this many failed reconnect attempts (nil: never give up).
    package var reconnectAttemptLimit: Int? = nil
    /// Whether to reconnect at all after EOF or Hardware Error.
    package var reconnect = true
    package init() {}
}

/// What a controller said about itself during bring-up.
package struct ControllerInfo: Equatable, Sendable {
    package var version: HCIReadLocalVersionInformation.ReturnParameters
    package var supportedCommands: SupportedCommands
    package var lmpFeatures: LMPFeatures
    package var leFeatures: LEFeatures
    /// The public address (all zero when the controller has none).
    package var address: BDAddress
}

/// Things the session's owner must know about: connection state changes (so that
/// advertising and scanning can be restored after `.reconnected`) and faults.
package enum HCISessionEvent: Equatable, Sendable {
    /// The link closed (EOF, read error, stream out of step); recovery starts if enabled.
    case transportLost(reason: String)
    /// The controller sent HCI_Hardware_Error; the session reconnects and resets it.
    case hardwareError(code: UInt8)
    /// Waiting `delay` before reconnect attempt `attempt` (1-based).
    case reconnecting(attempt: Int, delay: Duration)
    /// A reconnect attempt failed.
    case reconnectFailed(attempt: Int, reason: String)
    /// Connected and brought up again; controller state (advertising, scanning, random
    /// address) is reset and must be restored by the owner.
    case reconnected(ControllerInfo)
    /// Recovery gave up after `reconnectAttemptLimit` attempts; the session is stopped.
    case gaveUp(reason: String)
    /// A command got no answer within the timeout.
    case commandTimedOut(command: String)
    /// An event that could not be decoded was logged and skipped.
    case eventDiscarded(reason: String)
    /// A connection ended (not expected for a GAEN node, which never connects).
    case disconnection(handle: UInt16, reason: HCIStatusCode)
}

/// Errors from session commands.
package enum HCISessionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The controller answered with a non-zero status.
    case commandFailed(command: String, status: HCIStatusCode)
    /// No Command Complete/Status within the timeout.
    case commandTimedOut(command: String, timeout: Duration)
    /// The return parameters did not decode.
    case invalidReturnParameters(command: String, HCIDecodingError)
    /// The transport went away while the command was outstanding (or before it was sent).
    case connectionLost(command: String, reason: String)
    /// The session is not connected (starting, recovering or stopped).
    case notRunning(state: String)
    /// Bring-up found a controller without LE.
    case controllerLacksLE

    package var description: String {
        switch self {
        case let .commandFailed(c, s): return "\(c) failed: \(s)"
        case let .commandTimedOut(c, t): return "\(c): no answer within \(t)"
        case let .invalidReturnParameters(c, e): return "\(c): bad return parameters: \(e)"
        case let .connectionLost(c, r): return "\(c): connection lost: \(r)"
        case let .notRunning(s): return "controller session is not running (\(s))"
        case .controllerLacksLE: return "the controller does not support Bluetooth LE (LMP feature 'LE Supported (Controller)' is off)"
        }
    }
}
