import DBusCore
import GaendAPI
import ENProtocol


/// Every setting of gaend, with the framework's behaviour as the default. Loaded from the YAML
/// config file (see config/gaend.conf.example, gaend.conf(5)); command-line flags override.
public struct GaendSettings: Sendable, Equatable {
    /// Controller address: hci0, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT, unix:PATH.
    public var controller: String = "hci0"
    /// Directory of the store; must be private to the daemon's user.
    public var stateDirectory: String = "/var/lib/gaend"
    /// The store's 32-byte data key file; nil = the systemd credential `store-key`.
    public var storeKeyFile: String? = nil
    /// system, session, or a D-Bus address.
    public var bus: String = "system"
    /// The well-known name to own on that bus. One gaend per controller needs one name each
    /// (the systemd unit passes org.gaend.hciN); see docs/dbus.md.
    public var busName: String = GaendBus.busName
    /// Public keys that verify provided key files.
    public var trust: [TrustedKeySetting] = []
    /// Field-trial mode: research interface on, today's key exportable, rate limits off.
    public var trial: Bool = false
    /// Runs the whole schedule N times faster than real time (demos, tests).
    public var timeScale: Double = 1
    public var clock = ClockSettings()
    public var advertising = AdvertisingSettings()
    public var scanning = ScanningSettings()
    public var store = StoreSettings()
    public var calibration = CalibrationSettings()
    public var research = ResearchSettings()
    public var rateLimits = RateLimitSettings()
    public var watchdog = WatchdogSettings()
    public var callers = CallerSettings()
    /// The kernel controllers gaend@.service takes (its ExecCondition asks `gaend
    /// --check-controller`); the others stay with bluetoothd.
    public var controllers: ControllerSelection = .all
    /// Every HCI packet to a btsnoop file (`--capture`, `capture:`); nil = no capture.
    public var capture: CaptureSettings? = nil

    public init() {}

    /// What trial mode switches on, applied after the file and the flags.
    public var effective: GaendSettings {
        var s = self
        if trial {
            s.research.enabled = true
            s.research.allowCurrentKeyExport = true
            s.rateLimits.enabled = false
        }
        return s
    }
}

/// Which kernel controllers (hciN) gaend takes when udev offers them.
public enum ControllerSelection: Sendable, Equatable {
    case all
    case only([String])

    /// Whether the controller (as the unit names it, `hci1`) is gaend's.
    public func includes(_ controller: String) -> Bool {
        switch self {
        case .all: return true
        case .only(let names):
            guard let wanted = try? ControllerAddress(parsing: controller) else { return false }
            return names.contains { (try? ControllerAddress(parsing: $0)) == wanted }
        }
    }
}

public struct TrustedKeySetting: Sendable, Equatable {
    public var keyId: String
    public var keyVersion: String?
    public var publicKeyFile: String
    public init(keyId: String, keyVersion: String?, publicKeyFile: String) {
        self.keyId = keyId; self.keyVersion = keyVersion; self.publicKeyFile = publicKeyFile
    }

    /// Parses the command-line form `ID[:VERSION]=PEMFILE`.
    public init(argument: String) throws {
        guard let eq = argument.firstIndex(of: "="), eq != argument.startIndex, argument.index(after: eq) != argument.endIndex else {
            throw ConfigError.invalid(setting: "trust", reason: "'\(argument)' is not ID[:VERSION]=PEMFILE")
        }
        let ident = argument[..<eq]
        publicKeyFile = String(argument[argument.index(after: eq)...])
        if let colon = ident.firstIndex(of: ":") {
            keyId = String(ident[..<colon])
            keyVersion = String(ident[ident.index(after: colon)...])
            guard !keyId.isEmpty, keyVersion?.isEmpty == false else {
                throw ConfigError.invalid(setting: "trust", reason: "'\(argument)' has an empty key id or version")
            }
        } else {
            keyId = String(ident)
            keyVersion = nil
        }
    }
}

public struct ClockSettings: Sendable, Equatable {
    /// No advertising or sighting timestamps until the system clock is synchronised.
    public var requireSync: Bool = true
    /// A synchronised clock that jumps further ahead than this of the latest time that has
    /// held is suspect: retention waits until the new time has held (docs/schedule.md).
    public var stepBoundHours: Double = 24
    /// How long a suspect time must hold (monotonic minutes) before retention follows it.
    public var stepConfirmationMinutes: Double = 60
}

public struct AdvertisingSettings: Sendable, Equatable {
    /// Advertising interval bounds (GAEN Bluetooth spec: 200-270 ms).
    public var intervalMinMs: Double = 200
    public var intervalMaxMs: Double = 270
    /// Rotation of address, RPI and AEM together, uniformly random in this range (10-20 min).
    public var rotationMinMinutes: Double = 10
    public var rotationMaxMinutes: Double = 20
}

public enum ScanMode: String, Sendable, Equatable, CaseIterable {
    /// A scan every uniformly random 210-300 s (the reference behaviour).
    case random
    /// A scan every `fixedPeriodSeconds`.
    case fixed
    /// Back-to-back scans of `durationSeconds` with no gap (trials).
    case continuous
}

public struct ScanningSettings: Sendable, Equatable {
    public var mode: ScanMode = .random
    public var durationSeconds: Double = 4
    public var periodMinSeconds: Double = 210
    public var periodMaxSeconds: Double = 300
    public var fixedPeriodSeconds: Double = 300
}

public struct StoreSettings: Sendable, Equatable {
    public var retentionDays: Int = 14
    /// Oldest-first eviction beyond this size, with a warning.
    public var maxSizeMB: Int = 512
    /// Memory for scan records waiting while the disk is full; oldest dropped (counted) beyond.
    public var maxPendingMB: Int = 16
}

public struct CalibrationSettings: Sendable, Equatable {
    /// Calibrated TX power carried in the AEM (dBm, normalised like phones: about -20...-40).
    public var txPower: Int = -30
    /// Added to every received RSSI before attenuation is computed.
    public var rssiCorrection: Int = 0
    public var calibrationConfidence: CalibrationConfidence = .lowest
    /// Metadata version sent: 1.0 (TX power only) or 1.1 (adds calibration confidence).
    public var metadataMinorVersion: Int = 1

    public var metadata: BluetoothMetadata {
        metadataMinorVersion == 0
            ? .v1_0(txPower: Int8(clamping: txPower))
            : .v1_1(txPower: Int8(clamping: txPower), calibrationConfidence: calibrationConfidence)
    }
}

extension CalibrationConfidence {
    /// The config's names of the levels (`calibration.calibration_confidence`), lowest first.
    public static let configNames = ["lowest", "low", "medium", "high"]

    public var configName: String { Self.configNames[rawValue] }

    public init?(configName: String) {
        guard let i = Self.configNames.firstIndex(of: configName) else { return nil }
        self.init(rawValue: i)
    }
}

public struct ResearchSettings: Sendable, Equatable {
    /// The org.gaend.Research1 interface (raw sightings); off unless enabled.
    public var enabled: Bool = false
    /// Site label carried into every export (a bus, a carriage, an office).
    public var site: String = ""
    /// Node name carried into every export.
    public var node: String = ""
    /// Allows exporting today's TEK before it has rolled (trials only).
    public var allowCurrentKeyExport: Bool = false
}

public struct RateLimitSettings: Sendable, Equatable {
    /// Framework limits by default; trials may switch them off.
    public var enabled: Bool = true
    public var provideDiagnosisKeysPerDay: Int = 6
    public var dataMappingChangesPerWeek: Int = 1
}

public struct WatchdogSettings: Sendable, Equatable {
    /// Restart the controller when a scan neither reports nor completes within this many
    /// seconds past its planned end.
    public var scanStallSeconds: Double = 30
    /// Restart the controller when it has not answered anything for this long.
    public var controllerSilenceSeconds: Double = 60
}

/// Limits on what a D-Bus caller can make the node wait for (docs/dbus.md, "Descriptors").
public struct CallerSettings: Sendable, Equatable {
    /// A descriptor a caller passes (key files in, exports out) that moves no byte for this
    /// long fails the call with org.gaend.Error.Timeout; a key file must also be read whole
    /// within it. Below gaenctl's 25 s reply timeout, so its callers see the error, not NoReply.
    public var ioTimeoutSeconds: Double = 20
    /// Calls passing descriptors one uid may have in flight at once.
    public var callsInFlight: Int = 4
}
