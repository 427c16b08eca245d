import ENProtocol
import HCIHost

/// Every setting of gaend, with the framework's behaviour as the default. Loaded from the YAML
/// config file (see config/gaend.conf.example, gaend.conf(5)); command-line flags override.
package struct GaendSettings: Sendable, Equatable {
    /// research.node and research.site: at most this many characters.
    package static let maxNameLength = 256
    /// Controller address: hci0, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT, unix:PATH,
    /// parsed once where it is read (config, command line).
    package var controller: ControllerAddress = .hci(index: 0)
    /// Directory of the store; must be private to the daemon's user.
    package var stateDirectory: String = "/var/lib/gaend"
    /// The store's 32-byte data key file; nil = the systemd credential `store-key`.
    package var storeKeyFile: String? = nil
    /// system, session, or a D-Bus address. Kept as the text written: only libdbus's address
    /// parser can judge an address, and the D-Bus edge (gaend, `BusAddress(parsing:)`) is the
    /// one place that links it. Parsing it here would bring libdbus into every tool that reads
    /// the config (`gaenctl calibrate`, `gaenctl markers`).
    package var bus: String = "system"
    /// The well-known name to own on that bus. One gaend per controller needs one name each
    /// (the systemd unit passes org.gaend.hciN); see docs/dbus.md. The default is the API's own
    /// name (GaendAPI's `GaendBus.busName`), written out because the config links no D-Bus
    /// target; BusNameTests checks that the two agree. A name set here is checked against the
    /// D-Bus rules as it is read (DBusNames, standard library only).
    package var busName: String = "org.gaend"
    /// Public keys that verify provided key files.
    package var trust: [TrustedKeySetting] = []
    /// Field-trial mode: research interface on, today's key exportable, rate limits off.
    package var trial: Bool = false
    /// Runs the whole schedule N times faster than real time (demos, tests).
    package var timeScale: Double = 1
    /// A rehearsal's trial clock file (`trial_clock:`, `--trial-clock`; TrialTime's TrialClock):
    /// the node runs on the trial's time, anchored at its epoch, so a restarted node rejoins it.
    /// Read when the node starts (`makeClock`), not with the config: its checks need the time.
    package var trialClockFile: String? = nil
    package var clock = ClockSettings()
    package var advertising = AdvertisingSettings()
    package var scanning = ScanningSettings()
    package var store = StoreSettings()
    package var calibration = CalibrationSettings()
    package var research = ResearchSettings()
    package var rateLimits = RateLimitSettings()
    package var watchdog = WatchdogSettings()
    package var callers = CallerSettings()
    /// The kernel controllers gaend@.service takes (its ExecCondition asks `gaend
    /// --check-controller`); the others stay with bluetoothd.
    package var controllers: ControllerSelection = .all
    /// Every HCI packet to a btsnoop file (`--capture`, `capture:`); nil = no capture.
    package var capture: CaptureSettings? = nil

    package init() {}

    /// What trial mode switches on, applied after the file and the flags.
    package var effective: GaendSettings {
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
package enum ControllerSelection: Sendable, Equatable {
    case all
    /// Kernel controllers only (`.hci`), as the config lists them.
    case only([ControllerAddress])

    /// Whether the controller (as the unit names it, `hci1`) is gaend's.
    package func includes(_ controller: ControllerAddress) -> Bool {
        switch self {
        case .all: return true
        case .only(let wanted): return wanted.contains(controller)
        }
    }
}

package struct TrustedKeySetting: Sendable, Equatable {
    package var keyId: String
    package var keyVersion: String?
    package var publicKeyFile: String
    package init(keyId: String, keyVersion: String?, publicKeyFile: String) {
        self.keyId = keyId; self.keyVersion = keyVersion; self.publicKeyFile = publicKeyFile
    }

    /// Parses the command-line form `ID[:VERSION]=PEMFILE`.
    package init(argument: String) throws {
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

package struct ClockSettings: Sendable, Equatable {
    /// No advertising or sighting timestamps until the system clock is synchronised.
    package var requireSync: Bool = true
    /// A synchronised clock that jumps further ahead than this of the latest time that has
    /// held is suspect: retention waits until the new time has held (docs/schedule.md).
    package var stepBoundHours: Double = 24
    /// How long a suspect time must hold (monotonic minutes) before retention follows it.
    package var stepConfirmationMinutes: Double = 60
}

package struct AdvertisingSettings: Sendable, Equatable {
    /// Advertising interval bounds (GAEN Bluetooth spec: 200-270 ms).
    package var intervalMinMs: Double = 200
    package var intervalMaxMs: Double = 270
    /// Rotation of address, RPI and AEM together, uniformly random in this range (10-20 min).
    package var rotationMinMinutes: Double = 10
    package var rotationMaxMinutes: Double = 20
}

package enum ScanMode: String, Sendable, Equatable, CaseIterable {
    /// A scan every uniformly random 210-300 s (the reference behaviour).
    case random
    /// A scan every `fixedPeriodSeconds`.
    case fixed
    /// Back-to-back scans of `durationSeconds` with no gap (trials).
    case continuous
}

package struct ScanningSettings: Sendable, Equatable {
    package var mode: ScanMode = .random
    package var durationSeconds: Double = 4
    package var periodMinSeconds: Double = 210
    package var periodMaxSeconds: Double = 300
    package var fixedPeriodSeconds: Double = 300
}

package struct StoreSettings: Sendable, Equatable {
    package var retentionDays: Int = 14
    /// Oldest-first eviction beyond this size, with a warning.
    package var maxSizeMB: Int = 512
    /// Memory for scan records waiting while the disk is full; oldest dropped (counted) beyond.
    package var maxPendingMB: Int = 16
}

package struct CalibrationSettings: Sendable, Equatable {
    /// Calibrated TX power carried in the AEM (dBm, normalised like phones: about -20...-40).
    package var txPower: Int = -30
    /// Added to every received RSSI before attenuation is computed.
    package var rssiCorrection: Int = 0
    package var calibrationConfidence: CalibrationConfidence = .lowest
    /// Metadata version sent: 1.0 (TX power only) or 1.1 (adds calibration confidence).
    package var metadataMinorVersion: Int = 1

    package var metadata: BluetoothMetadata {
        metadataMinorVersion == 0
            ? .v1_0(txPower: Int8(clamping: txPower))
            : .v1_1(txPower: Int8(clamping: txPower), calibrationConfidence: calibrationConfidence)
    }
}

extension CalibrationConfidence {
    /// The config's names of the levels (`calibration.calibration_confidence`), lowest first.
    package static let configNames = ["lowest", "low", "medium", "high"]

    package var configName: String { Self.configNames[rawValue] }

    package init?(configName: String) {
        guard let i = Self.configNames.firstIndex(of: configName) else { return nil }
        self.init(rawValue: i)
    }

    /// A level as the node reports it (0-3), by the config's name; another number as itself
    /// (`gaenctl status`, `gaenctl windows`).
    package static func name(ofLevel level: Int32) -> String {
        CalibrationConfidence(rawValue: Int(level)).map(\.configName) ?? "\(level)"
    }
}

package struct ResearchSettings: Sendable, Equatable {
    /// The org.gaend.Research1 interface (raw sightings); off unless enabled.
    package var enabled: Bool = false
    /// Site label carried into every export (a bus, a carriage, an office).
    package var site: String = ""
    /// Node name carried into every export.
    package var node: String = ""
    /// Allows exporting today's TEK before it has rolled (trials only).
    package var allowCurrentKeyExport: Bool = false
}

package struct RateLimitSettings: Sendable, Equatable {
    /// Framework limits by default; trials may switch them off.
    package var enabled: Bool = true
    package var provideDiagnosisKeysPerDay: Int = 6
    package var dataMappingChangesPerWeek: Int = 1
}

package struct WatchdogSettings: Sendable, Equatable {
    /// Restart the controller when a scan neither reports nor completes within this many
    /// seconds past its planned end.
    package var scanStallSeconds: Double = 30
    /// Restart the controller when it has not answered anything for this long.
    package var controllerSilenceSeconds: Double = 60
}

/// Limits on what a D-Bus caller can make the node wait for (docs/dbus.md, "Descriptors").
package struct CallerSettings: Sendable, Equatable {
    /// A descriptor a caller passes (key files in, exports out) that moves no byte for this
    /// long fails the call with org.gaend.Error.Timeout; a key file must also be read whole
    /// within it. Below gaenctl's 25 s reply timeout, so its callers see the error, not NoReply.
    package var ioTimeoutSeconds: Double = 20
    /// Calls passing descriptors one uid may have in flight at once.
    package var callsInFlight: Int = 4
}
