/// One fact of the node's state (domain), in the order they are listed. The D-Bus edge
/// writes each as its `Status` string (`GaendStatus`); the node knows no wire strings.
package enum NodeCondition: Sendable, Equatable, CaseIterable {
    /// On air as configured: none of the others holds.
    case active
    /// Stopped by the operator (Stop).
    case inactive
    /// The system clock is not synchronised: nothing is stamped.
    case clockUnsynchronised
    /// The clock jumped far ahead of the time that held (retention waits), or back into a
    /// day whose key is gone (off air).
    case clockSuspect
    case controllerMissing
    case controllerError
    /// The schedule wants a beacon on air that the controller has not confirmed (retrying).
    case advertisingOffAir
    /// A scan is due but scanning is not confirmed on air (retrying).
    case scanningOffAir
    /// Scanning hears nothing where it used to hear advertisers: the controller was
    /// restarted for it and is restarted again, with backoff, until a report arrives.
    case scanningSilent
    case storageError
    case storageFull
}
