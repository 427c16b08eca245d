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
