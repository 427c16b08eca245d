import DBusNames
import ENProtocol
import HCIHost
import YAMLReader

/// A bad config file or flag: names the file, line and setting, and says what is wrong.
package enum ConfigError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case tooLarge(path: String, bytes: Int, limit: Int)
    case syntax(path: String, reason: String)
    case unknownSetting(path: String, line: Int?, setting: String, suggestion: String?)
    case wrongType(path: String, line: Int?, setting: String, expected: String)
    case outOfRange(path: String, line: Int?, setting: String, value: String, allowed: String)
    case invalid(setting: String, reason: String)

    package var description: String {
        func at(_ path: String, _ line: Int?) -> String { line.map { "\(path):\($0)" } ?? path }
        switch self {
        case .unreadable(let p, let r): return "\(p): cannot read config: \(r)"
        case .tooLarge(let p, let b, let l): return "\(p): config file of \(b) bytes exceeds the \(l)-byte limit"
        case .syntax(let p, let r): return "\(p): not valid YAML: \(r)"
        case .unknownSetting(let p, let l, let s, let sug):
            return "\(at(p, l)): unknown setting '\(s)'" + (sug.map { " (did you mean '\($0)'?)" } ?? "")
        case .wrongType(let p, let l, let s, let e): return "\(at(p, l)): '\(s)' must be \(e)"
        case .outOfRange(let p, let l, let s, let v, let a): return "\(at(p, l)): '\(s)' is \(v), allowed \(a)"
        case .invalid(let s, let r): return "'\(s)': \(r)"
        }
    }
}

/// Reads gaend's YAML config into `GaendSettings`. Every key is known: a typo is an error with a
/// suggestion, not a silently ignored setting (a trial losing a day of data to `scaning:` is the
/// failure this prevents).
package enum ConfigLoader {
    package static let maximumFileSize = 1 << 20

    /// Reads and parses the file at `path`: at most `maximumFileSize` bytes are read, whatever
    /// the file is (a larger regular file is refused by its size, unread).
    package static func load(path: String, into base: GaendSettings = GaendSettings()) throws -> GaendSettings {
        let bytes: [UInt8]
        switch ConfigFile.read(path, limit: maximumFileSize) {
        case .success(let b): bytes = b
        case .failure(.tooLarge(let size)): throw ConfigError.tooLarge(path: path, bytes: size, limit: maximumFileSize)
        case .failure(.system(let reason)): throw ConfigError.unreadable(path: path, reason: reason)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError.syntax(path: path, reason: "not UTF-8 text" + (firstInvalidUTF8(bytes).map { " (\($0))" } ?? ""))
        }
        return try parse(text, path: path, into: base)
    }

    /// Where the first byte that is not UTF-8 is: "line 3, column 7: byte 0xff".
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> String? {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0, line = 1, column = 1
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                offset += encoded.count
                if encoded.count == 1, encoded.first == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
            case .emptyInput:
                return nil
            case .error:
                return "line \(line), column \(column): byte 0x" + String(bytes[offset], radix: 16)
            }
        }
    }

    /// Parses config text (YAMLReader: aliases, unknown tags, repeated keys and a second
    /// document are YAML errors with their line and column).
    package static func parse(_ text: String, path: String = "<config>", into base: GaendSettings = GaendSettings()) throws -> GaendSettings {
        let root: YAMLNode?
        do { root = try YAML.compose(text) } catch { throw ConfigError.syntax(path: path, reason: "\(error)") }
        var settings = base
        // An empty file, comments only, or an empty document (`---`) keeps every default.
        guard let root, !root.isNull else { return settings }
        var reader = Reader(path: path)
        try reader.apply(root, to: &settings)
        return settings
    }

    struct Reader {
        let path: String

        func line(_ n: YAMLNode) -> Int? { n.mark.line }

        func mapping(_ n: YAMLNode, _ name: String) throws -> [(String, YAMLNode, YAMLNode)] {
            guard case .mapping(let m) = n else { throw ConfigError.wrongType(path: path, line: line(n), setting: name, expected: "a mapping of settings") }
            return try m.entries.map { entry in
                guard let k = entry.key.string else { throw ConfigError.wrongType(path: path, line: line(entry.key), setting: name, expected: "keyed by names") }
                return (k, entry.key, entry.value)
            }
        }

        func unknown(_ key: String, _ node: YAMLNode, prefix: String, known: [String]) -> ConfigError {
            let suggestion = known.first { $0.hasPrefix(key) || key.hasPrefix($0) }
                ?? known.min { editDistance($0, key) < editDistance($1, key) }.flatMap { editDistance($0, key) <= 3 ? $0 : nil }
            return .unknownSetting(path: path, line: line(node), setting: prefix + key, suggestion: suggestion.map { prefix + $0 })
        }

        func string(_ n: YAMLNode, _ s: String) throws -> String {
            guard case .scalar(let sc) = n else { throw ConfigError.wrongType(path: path, line: line(n), setting: s, expected: "a string") }
            return sc.string
        }
        /// A plain (unquoted) scalar, as YAML resolves it: quoted, "true" is text.
        func plainMeaning(_ n: YAMLNode) -> YAMLScalar? {
            guard case .scalar(let sc) = n, sc.style != .plain, sc.tag == nil else { return nil }
            return YAMLScalar(sc.string)
        }
        func bool(_ n: YAMLNode, _ s: String) throws -> Bool {
            guard let b = n.bool else {
                let quoted = plainMeaning(n)?.bool != nil ? " (unquoted: in quotes it is text)" : ""
                throw ConfigError.wrongType(path: path, line: line(n), setting: s, expected: "true or false" + quoted)
            }
            return b
        }
        func number(_ n: YAMLNode, _ s: String, _ range: ClosedRange<Double>) throws -> Double {
            guard let v = n.double, v.isFinite else {
                let quoted = plainMeaning(n)?.double?.isFinite == true ? " (unquoted: in quotes it is text)" : ""
                throw ConfigError.wrongType(path: path, line: line(n), setting: s, expected: "a number" + quoted)
            }
            guard range.contains(v) else {
                throw ConfigError.outOfRange(path: path, line: line(n), setting: s, value: "\(v)", allowed: "\(range.lowerBound)...\(range.upperBound)")
            }
            return v
        }
        func integer(_ n: YAMLNode, _ s: String, _ range: ClosedRange<Int>) throws -> Int {
            guard let v = n.int else {
                let quoted = plainMeaning(n)?.int != nil ? " (unquoted: in quotes it is text)" : ""
                throw ConfigError.wrongType(path: path, line: line(n), setting: s, expected: "a whole number" + quoted)
            }
            guard range.contains(v) else {
                throw ConfigError.outOfRange(path: path, line: line(n), setting: s, value: "\(v)", allowed: "\(range.lowerBound)...\(range.upperBound)")
            }
            return v
        }

        mutating func apply(_ root: YAMLNode, to s: inout GaendSettings) throws {
            let top = ["controller", "state_dir", "store_key_file", "bus", "bus_name", "trust", "trial", "time_scale", "clock",
                       "advertising", "scanning", "store", "calibration", "research", "rate_limits", "watchdog", "callers", "capture", "controllers"]
            for (key, keyNode, v) in try mapping(root, "config") {
                switch key {
                case "controller":
                    // The one controller address parser (HCIHost's ControllerAddress), as the CLI uses.
                    do { s.controller = try ControllerAddress(parsing: try string(v, key)) } catch let e as ControllerAddressError {
                        throw ConfigError.wrongType(path: path, line: line(v), setting: key,
                                                    expected: "a controller address (hciN, hci:N, serial:/dev/ttyX[:baud], tcp:HOST:PORT or unix:PATH); \(e.reason)")
                    }
                case "state_dir": s.stateDirectory = try string(v, key)
                case "store_key_file": s.storeKeyFile = v.isNull ? nil : try string(v, key)
                case "bus": s.bus = try string(v, key)
                case "bus_name":
                    s.busName = try string(v, key)
                    do { try WellKnownName.validate(s.busName) } catch {
                        throw ConfigError.wrongType(path: path, line: line(v), setting: key,
                                                    expected: "a D-Bus well-known name such as org.gaend.hci0; '\(s.busName)' \(error)")
                    }
                case "trial": s.trial = try bool(v, key)
                case "time_scale": s.timeScale = try number(v, key, 1...100_000)
                case "trust":
                    guard case .sequence(let seq) = v else { throw ConfigError.wrongType(path: path, line: line(v), setting: key, expected: "a list of {id, version, public_key_file}") }
                    s.trust = try seq.items.map { item in
                        var id: String?, version: String?, file: String?
                        for (k, kn, iv) in try mapping(item, "trust[]") {
                            switch k {
                            case "id": id = try string(iv, "trust[].id")
                            case "version": version = try string(iv, "trust[].version")
                            case "public_key_file": file = try string(iv, "trust[].public_key_file")
                            default: throw unknown(k, kn, prefix: "trust[].", known: ["id", "version", "public_key_file"])
                            }
                        }
                        guard let id, let file else { throw ConfigError.invalid(setting: "trust", reason: "each entry needs id and public_key_file (line \(line(item) ?? 0))") }
                        return TrustedKeySetting(keyId: id, keyVersion: version, publicKeyFile: file)
                    }
                case "clock":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "require_sync": s.clock.requireSync = try bool(cv, "clock.require_sync")
                        case "step_bound_hours": s.clock.stepBoundHours = try number(cv, "clock.step_bound_hours", 0.01...24 * 365)
                        case "step_confirmation_minutes": s.clock.stepConfirmationMinutes = try number(cv, "clock.step_confirmation_minutes", 0.1...7 * 24 * 60)
                        default: throw unknown(k, kn, prefix: "clock.", known: ["require_sync", "step_bound_hours", "step_confirmation_minutes"])
                        }
                    }
                case "advertising":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "interval_min_ms": s.advertising.intervalMinMs = try number(cv, "advertising.\(k)", 20...10_240)
                        case "interval_max_ms": s.advertising.intervalMaxMs = try number(cv, "advertising.\(k)", 20...10_240)
                        case "rotation_min_minutes": s.advertising.rotationMinMinutes = try number(cv, "advertising.\(k)", 10...20)
                        case "rotation_max_minutes": s.advertising.rotationMaxMinutes = try number(cv, "advertising.\(k)", 10...20)
                        default: throw unknown(k, kn, prefix: "advertising.", known: ["interval_min_ms", "interval_max_ms", "rotation_min_minutes", "rotation_max_minutes"])
                        }
                    }
                case "scanning":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "mode":
                            let m = try string(cv, "scanning.mode")
                            guard let mode = ScanMode(rawValue: m) else {
                                throw ConfigError.outOfRange(path: path, line: line(cv), setting: "scanning.mode", value: m, allowed: ScanMode.allCases.map(\.rawValue).joined(separator: ", "))
                            }
                            s.scanning.mode = mode
                        case "duration_seconds": s.scanning.durationSeconds = try number(cv, "scanning.\(k)", 2...4)
                        case "period_min_seconds": s.scanning.periodMinSeconds = try number(cv, "scanning.\(k)", 10...3600)
                        case "period_max_seconds": s.scanning.periodMaxSeconds = try number(cv, "scanning.\(k)", 10...3600)
                        case "fixed_period_seconds": s.scanning.fixedPeriodSeconds = try number(cv, "scanning.\(k)", 5...3600)
                        default: throw unknown(k, kn, prefix: "scanning.", known: ["mode", "duration_seconds", "period_min_seconds", "period_max_seconds", "fixed_period_seconds"])
                        }
                    }
                case "store":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "retention_days": s.store.retentionDays = try integer(cv, "store.\(k)", 1...365)
                        case "max_size_mb": s.store.maxSizeMB = try integer(cv, "store.\(k)", 1...1_000_000)
                        case "max_pending_mb": s.store.maxPendingMB = try integer(cv, "store.\(k)", 1...1_024)
                        default: throw unknown(k, kn, prefix: "store.", known: ["retention_days", "max_size_mb", "max_pending_mb"])
                        }
                    }
                case "calibration":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "tx_power": s.calibration.txPower = try integer(cv, "calibration.tx_power", -127...127)
                        case "rssi_correction": s.calibration.rssiCorrection = try integer(cv, "calibration.rssi_correction", -100...100)
                        case "calibration_confidence":
                            let c = try string(cv, "calibration.calibration_confidence")
                            guard let conf = CalibrationConfidence(configName: c) else {
                                throw ConfigError.outOfRange(path: path, line: line(cv), setting: "calibration.calibration_confidence", value: c,
                                                             allowed: CalibrationConfidence.configNames.joined(separator: ", "))
                            }
                            s.calibration.calibrationConfidence = conf
                        case "metadata_version":
                            let m = try string(cv, "calibration.metadata_version")
                            guard m == "1.0" || m == "1.1" else {
                                throw ConfigError.outOfRange(path: path, line: line(cv), setting: "calibration.metadata_version", value: m, allowed: "1.0, 1.1")
                            }
                            s.calibration.metadataMinorVersion = m == "1.0" ? 0 : 1
                        default: throw unknown(k, kn, prefix: "calibration.", known: ["tx_power", "rssi_correction", "calibration_confidence", "metadata_version"])
                        }
                    }
                case "research":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "enabled": s.research.enabled = try bool(cv, "research.enabled")
                        case "site": s.research.site = try string(cv, "research.site")
                        case "node": s.research.node = try string(cv, "research.node")
                        case "allow_current_key_export": s.research.allowCurrentKeyExport = try bool(cv, "research.allow_current_key_export")
                        default: throw unknown(k, kn, prefix: "research.", known: ["enabled", "site", "node", "allow_current_key_export"])
                        }
                    }
                case "rate_limits":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "enabled": s.rateLimits.enabled = try bool(cv, "rate_limits.enabled")
                        case "provide_diagnosis_keys_per_day": s.rateLimits.provideDiagnosisKeysPerDay = try integer(cv, "rate_limits.\(k)", 1...10_000)
                        case "data_mapping_changes_per_week": s.rateLimits.dataMappingChangesPerWeek = try integer(cv, "rate_limits.\(k)", 1...10_000)
                        default: throw unknown(k, kn, prefix: "rate_limits.", known: ["enabled", "provide_diagnosis_keys_per_day", "data_mapping_changes_per_week"])
                        }
                    }
                case "watchdog":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "scan_stall_seconds": s.watchdog.scanStallSeconds = try number(cv, "watchdog.\(k)", 5...3600)
                        case "controller_silence_seconds": s.watchdog.controllerSilenceSeconds = try number(cv, "watchdog.\(k)", 5...3600)
                        default: throw unknown(k, kn, prefix: "watchdog.", known: ["scan_stall_seconds", "controller_silence_seconds"])
                        }
                    }
                case "callers":
                    for (k, kn, cv) in try mapping(v, key) {
                        switch k {
                        case "io_timeout_seconds": s.callers.ioTimeoutSeconds = try number(cv, "callers.\(k)", 1...3600)
                        case "calls_in_flight": s.callers.callsInFlight = try integer(cv, "callers.\(k)", 1...64)
                        default: throw unknown(k, kn, prefix: "callers.", known: ["io_timeout_seconds", "calls_in_flight"])
                        }
                    }
                case "controllers":
                    // `all`, or a list of kernel controller names: the ones gaend@.service takes.
                    if case .scalar(let sc) = v, sc.string == "all" { s.controllers = .all; break }
                    guard case .sequence(let seq) = v else {
                        throw ConfigError.wrongType(path: path, line: line(v), setting: key, expected: "all, or a list of controllers such as [hci0]")
                    }
                    let names = try seq.items.map { try string($0, "controllers[]") }
                    let addresses = try names.map { n in
                        guard let a = try? ControllerAddress(parsing: n), case .hci = a else {
                            throw ConfigError.wrongType(path: path, line: line(v), setting: key, expected: "kernel controller names such as hci0, not '\(n)'")
                        }
                        return a
                    }
                    s.controllers = .only(addresses)
                case "capture":
                    if v.isNull { s.capture = nil; break }
                    var c = CaptureSettings(path: "")
                    for (k, kn, cv) in try mapping(v, "capture") {
                        switch k {
                        case "file": c.path = try string(cv, "capture.file")
                        case "max_size_mb": c.maxBytes = try integer(cv, "capture.max_size_mb", 1...4096) << 20
                        case "keep": c.keep = try integer(cv, "capture.keep", 0...100)
                        default: throw unknown(k, kn, prefix: "capture.", known: ["file", "max_size_mb", "keep"])
                        }
                    }
                    guard !c.path.isEmpty else { throw ConfigError.invalid(setting: "capture", reason: "capture.file is required") }
                    s.capture = c
                default:
                    throw unknown(key, keyNode, prefix: "", known: top)
                }
            }
            try Self.validate(s, path: path)
        }

        /// Cross-setting rules no single key can check.
        static func validate(_ s: GaendSettings, path: String) throws {
            if s.advertising.intervalMinMs > s.advertising.intervalMaxMs {
                throw ConfigError.invalid(setting: "advertising", reason: "interval_min_ms \(s.advertising.intervalMinMs) exceeds interval_max_ms \(s.advertising.intervalMaxMs)")
            }
            if s.advertising.rotationMinMinutes > s.advertising.rotationMaxMinutes {
                throw ConfigError.invalid(setting: "advertising", reason: "rotation_min_minutes exceeds rotation_max_minutes")
            }
            if s.scanning.periodMinSeconds > s.scanning.periodMaxSeconds {
                throw ConfigError.invalid(setting: "scanning", reason: "period_min_seconds exceeds period_max_seconds")
            }
            if s.scanning.mode != .continuous && s.scanning.durationSeconds >= min(s.scanning.periodMinSeconds, s.scanning.fixedPeriodSeconds) {
                throw ConfigError.invalid(setting: "scanning", reason: "a scan of \(s.scanning.durationSeconds) s does not fit in its period")
            }
        }
    }

    /// Levenshtein distance, for "did you mean" suggestions on a handful of short names.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var prev = Array(0...b.count)
        for i in 1...a.count {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where j <= b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
}
