import DBusCore

/// The names of gaend's D-Bus API, shared by the daemon's tables and the client.
public enum GaendBus {
    /// The daemon's well-known bus name.
    public static let busName = "org.gaend"
    /// The object that carries every gaend interface.
    public static let objectPath = "/org/gaend"
    public static let exposureNotificationInterface = "org.gaend.ExposureNotification1"
    public static let researchInterface = "org.gaend.Research1"
    /// Prefix of gaend's own error names (`org.gaend.Error.RateLimited`, ...).
    public static let errorPrefix = "org.gaend.Error."
}

/// The values of the `Status` property (docs/dbus.md). Clients must ignore unknown values.
public enum GaendStatus {
    public static let active = "active"
    public static let inactive = "inactive"
    public static let clockUnsynchronised = "clock-unsynchronised"
    public static let controllerMissing = "controller-missing"
    public static let controllerError = "controller-error"
    public static let storageError = "storage-error"
    public static let storageFull = "storage-full"
    /// The synchronised clock jumped far ahead of the latest time that has held; retention
    /// waits until the new time has held (docs/schedule.md).
    public static let clockSuspect = "clock-suspect"
    /// The schedule wants a beacon on air but the controller has not confirmed it (the radio
    /// owner is retrying).
    public static let advertisingOffAir = "advertising-off-air"
    /// A scan is due but scanning is not confirmed on air (retrying).
    public static let scanningOffAir = "scanning-off-air"
    /// Scanning hears nothing where it used to hear advertisers; the controller was restarted
    /// for it and is restarted again with backoff until a report arrives (docs/radio.md).
    public static let scanningSilent = "scanning-silent"
    public static let all = [active, inactive, clockUnsynchronised, clockSuspect, controllerMissing, controllerError,
                             storageError, storageFull, advertisingOffAir, scanningOffAir, scanningSilent]
}
