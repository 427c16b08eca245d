import DBusCore

/// gaend's D-Bus API contract: one table per interface. The introspection XML files in dbus/
/// are generated from these tables (a test checks they are equal) and docs/dbus.md documents
/// every member (a test checks each is there with its revision). Method and signal arguments
/// are not written here: they come from the typed messages (`GaendMethods.swift`), and the
/// properties from the typed properties values (`GaendProperties.swift`).
public enum GaendInterfaces {
    typealias EN = GaendExposureNotification
    typealias R = GaendResearch

    /// Error names, shared by both interfaces.
    public enum ErrorName {
        public static let notAuthorized = GaendBus.errorPrefix + "NotAuthorized"
        public static let notEnabled = GaendBus.errorPrefix + "NotEnabled"
        public static let rateLimited = GaendBus.errorPrefix + "RateLimited"
        public static let invalidKeyFile = GaendBus.errorPrefix + "InvalidKeyFile"
        public static let untrustedKeyFile = GaendBus.errorPrefix + "UntrustedKeyFile"
        public static let limitExceeded = GaendBus.errorPrefix + "LimitExceeded"
        public static let busy = GaendBus.errorPrefix + "Busy"
        public static let controllerMissing = GaendBus.errorPrefix + "ControllerMissing"
        public static let clockUnsynchronised = GaendBus.errorPrefix + "ClockUnsynchronised"
        public static let storageError = GaendBus.errorPrefix + "StorageError"
        public static let writeFailed = GaendBus.errorPrefix + "WriteFailed"
        public static let failed = GaendBus.errorPrefix + "Failed"
        public static let timeout = GaendBus.errorPrefix + "Timeout"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    }

    public static let errors: [DBusErrorDecl] = [
        DBusErrorDecl(ErrorName.notAuthorized, "The caller's uid may not make this call (beyond what the bus policy allows)."),
        DBusErrorDecl(ErrorName.notEnabled, "The call needs the node started (Start)."),
        DBusErrorDecl(ErrorName.rateLimited, "A framework rate limit is reached; the message says when it resets."),
        DBusErrorDecl(ErrorName.invalidKeyFile, "A provided file is not a valid key export (zip, header, protobuf)."),
        DBusErrorDecl(ErrorName.untrustedKeyFile, "No trusted public key verifies a provided file's signature."),
        DBusErrorDecl(ErrorName.limitExceeded, "Too many files, keys, bytes or rows in one call."),
        DBusErrorDecl(ErrorName.busy, "An earlier ProvideDiagnosisKeys is still being matched."),
        DBusErrorDecl(ErrorName.controllerMissing, "No Bluetooth controller is available to start on."),
        DBusErrorDecl(ErrorName.clockUnsynchronised, "The system clock is not synchronised; no timestamped data."),
        DBusErrorDecl(ErrorName.storageError, "The encrypted store failed (disk full, I/O error, wrong key)."),
        DBusErrorDecl(ErrorName.writeFailed, "Writing to a passed file descriptor failed."),
        DBusErrorDecl(ErrorName.timeout, "A passed file descriptor moved no data within the node's limit (callers.io_timeout_seconds); the call did nothing."),
        DBusErrorDecl(ErrorName.failed, "An unexpected internal failure."),
    ]

    /// `org.gaend.ExposureNotification1`: the framework-like API for apps and operators.
    public static let exposureNotification = DBusInterfaceDecl(
        name: GaendBus.exposureNotificationInterface,
        revision: 4,
        methods: [
            DBusMethodDecl(EN.Start.self, since: 1, errors: [ErrorName.controllerMissing, ErrorName.storageError]),
            DBusMethodDecl(EN.Stop.self, since: 1),
            DBusMethodDecl(EN.GetTemporaryExposureKeyHistory.self, since: 1, errors: [ErrorName.notAuthorized, ErrorName.storageError]),
            DBusMethodDecl(EN.ProvideDiagnosisKeys.self, since: 1,
                           errors: [ErrorName.invalidKeyFile, ErrorName.untrustedKeyFile, ErrorName.rateLimited,
                                    ErrorName.limitExceeded, ErrorName.busy, ErrorName.storageError, ErrorName.invalidArgs, ErrorName.timeout]),
            DBusMethodDecl(EN.GetExposureWindows.self, since: 1, errors: [ErrorName.storageError]),
            DBusMethodDecl(EN.GetDailySummaries.self, since: 1, errors: [ErrorName.invalidArgs, ErrorName.storageError]),
            DBusMethodDecl(EN.SetDiagnosisKeysDataMapping.self, since: 1,
                           errors: [ErrorName.invalidArgs, ErrorName.rateLimited, ErrorName.storageError]),
            DBusMethodDecl(EN.GetDiagnosisKeysDataMapping.self, since: 1),
            DBusMethodDecl(EN.GetExposureSummary.self, since: 1, errors: [ErrorName.invalidArgs, ErrorName.storageError], deprecated: true),
        ],
        // Properties (names, signatures, revisions) come from the typed value.
        properties: GaendExposureProperties.declarations,
        signals: [DBusSignalDecl(GaendExposureStateUpdate.self, since: 1)],
        errors: errors)

    /// `org.gaend.Research1`: raw sightings, ground truth and calibration for field trials.
    /// Exported only when the config enables research (or `--trial`).
    public static let research = DBusInterfaceDecl(
        name: GaendBus.researchInterface,
        revision: 2,
        methods: [
            DBusMethodDecl(R.ExportSightings.self, since: 1,
                           errors: [ErrorName.invalidArgs, ErrorName.writeFailed, ErrorName.storageError, ErrorName.limitExceeded, ErrorName.timeout]),
            DBusMethodDecl(R.AddMarker.self, since: 1, errors: [ErrorName.invalidArgs, ErrorName.clockUnsynchronised, ErrorName.storageError]),
            DBusMethodDecl(R.GetMarkers.self, since: 1, errors: [ErrorName.invalidArgs, ErrorName.storageError, ErrorName.limitExceeded]),
            DBusMethodDecl(R.SetCalibration.self, since: 1, errors: [ErrorName.invalidArgs, ErrorName.storageError]),
        ],
        properties: GaendResearchProperties.declarations,
        signals: [DBusSignalDecl(GaendScanFinished.self, since: 1), DBusSignalDecl(GaendScanRecorded.self, since: 2)],
        errors: errors)

    /// Every gaend interface, in the order of the files in dbus/.
    public static let all = [exposureNotification, research]
}
