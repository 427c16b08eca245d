import BoardNames
import DBusNames
import ENProtocol
import HCIHost
import PlatformSupport
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
        let reader = Reader(path: path)
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

        /// How one key of a section is read into the section's typed value: the type and range
        /// checks, with the key's full name and line in every message.
        enum Field<Section> {
            case bool(WritableKeyPath<Section, Bool>)
            case string(WritableKeyPath<Section, String>)
            /// A name shown in labels, exports and the API (research.node, research.site): no
            /// control characters (a line break would forge a metrics line, a NUL breaks every
            /// D-Bus string), at most `maxNameLength` characters.
            case name(WritableKeyPath<Section, String>)
            case number(WritableKeyPath<Section, Double>, ClosedRange<Double>)
            case integer(WritableKeyPath<Section, Int>, ClosedRange<Int>)
            /// Read by the closure, given the value, the key's full name and the section.
            case custom((YAMLNode, String, inout Section) throws -> Void)
        }

        /// Reads the mapping `name` into `section`, each key by its field; the keys listed are
        /// the section's only keys (any other is an error, with a suggestion from the list).
        func read<Section>(_ n: YAMLNode, _ name: String, into section: inout Section,
                           _ fields: KeyValuePairs<String, Field<Section>>) throws {
            for (k, kn, v) in try mapping(n, name) {
                guard let field = fields.first(where: { $0.key == k })?.value else {
                    throw unknown(k, kn, prefix: "\(name).", known: fields.map(\.key))
                }
                let setting = "\(name).\(k)"
                switch field {
                case .bool(let path): section[keyPath: path] = try bool(v, setting)
                case .string(let path): section[keyPath: path] = try string(v, setting)
                case .name(let key):
                    let value = try string(v, setting)
                    guard TextSafety.isPlain(value), !value.unicodeScalars.contains("\0"), value.count <= GaendSettings.maxNameLength else {
                        throw ConfigError.outOfRange(path: path, line: line(v), setting: setting, value: TextSafety.quoted(value, limit: 80),
                                                     allowed: "printable characters only (no line break, tab, NUL or other control character), at most \(GaendSettings.maxNameLength)")
                    }
                    section[keyPath: key] = value
                case .number(let path, let range): section[keyPath: path] = try number(v, setting, range)
                case .integer(let path, let range): section[keyPath: path] = try integer(v, setting, range)
                case .custom(let read): try read(v, setting, &section)
                }
            }
        }

        func apply(_ root: YAMLNode, to s: inout GaendSettings) throws {
            let top = ["controller", "state_dir", "store_key_file", "bus", "bus_name", "trust", "trial", "time_scale", "trial_clock", "clock",
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
                case "trial_clock": s.trialClockFile = v.isNull ? nil : try string(v, key)
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
                    try read(v, key, into: &s.clock, [
                        "require_sync": .bool(\.requireSync),
                        "step_bound_hours": .number(\.stepBoundHours, 0.01...24 * 365),
                        "step_confirmation_minutes": .number(\.stepConfirmationMinutes, 0.1...7 * 24 * 60),
                    ])
                case "advertising":
                    try read(v, key, into: &s.advertising, [
                        "interval_min_ms": .number(\.intervalMinMs, 20...10_240),
                        "interval_max_ms": .number(\.intervalMaxMs, 20...10_240),
                        "rotation_min_minutes": .number(\.rotationMinMinutes, 10...20),
                        "rotation_max_minutes": .number(\.rotationMaxMinutes, 10...20),
                    ])
                case "scanning":
                    try read(v, key, into: &s.scanning, [
                        "mode": .custom { n, setting, section in
                            let m = try string(n, setting)
                            guard let mode = ScanMode(rawValue: m) else {
                                throw ConfigError.outOfRange(path: path, line: line(n), setting: setting, value: m, allowed: ScanMode.allCases.map(\.rawValue).joined(separator: ", "))
                            }
                            section.mode = mode
                        },
                        "duration_seconds": .number(\.durationSeconds, 2...4),
                        "period_min_seconds": .number(\.periodMinSeconds, 10...3600),
                        "period_max_seconds": .number(\.periodMaxSeconds, 10...3600),
                        "fixed_period_seconds": .number(\.fixedPeriodSeconds, 5...3600),
                    ])
                case "store":
                    try read(v, key, into: &s.store, [
                        "retention_days": .integer(\.retentionDays, 1...365),
                        "max_size_mb": .integer(\.maxSizeMB, 1...1_000_000),
                        "max_pending_mb": .integer(\.maxPendingMB, 1...1_024),
                    ])
                case "calibration":
                    try read(v, key, into: &s.calibration, [
                        "tx_power": .integer(\.txPower, -127...127),
                        "rssi_correction": .integer(\.rssiCorrection, -100...100),
                        "calibration_confidence": .custom { n, setting, section in
                            let c = try string(n, setting)
                            guard let conf = CalibrationConfidence(configName: c) else {
                                throw ConfigError.outOfRange(path: path, line: line(n), setting: setting, value: c,
                                                             allowed: CalibrationConfidence.configNames.joined(separator: ", "))
                            }
                            section.calibrationConfidence = conf
                        },
                        "metadata_version": .custom { n, setting, section in
                            let m = try string(n, setting)
                            guard m == "1.0" || m == "1.1" else {
                                throw ConfigError.outOfRange(path: path, line: line(n), setting: setting, value: m, allowed: "1.0, 1.1")
                            }
                            section.metadataMinorVersion = m == "1.0" ? 0 : 1
                        },
                    ])
                case "research":
                    try read(v, key, into: &s.research, [
                        "enabled": .bool(\.enabled),
                        "site": .name(\.site),
                        // The board's name on the trial server too (its user, its inbox and
                        // collection paths): one rule everywhere (BoardName); empty is no name.
                        "node": .custom { n, setting, section in
                            let name = try string(n, setting)
                            guard name.isEmpty || BoardName.isValid(name) else {
                                // Escaped: a control character in the value must not reach the terminal raw.
                                throw ConfigError.outOfRange(path: path, line: line(n), setting: setting, value: TextSafety.quoted(name, limit: 80),
                                                             allowed: BoardName.rule)
                            }
                            section.node = name
                        },
                        "allow_current_key_export": .bool(\.allowCurrentKeyExport),
                    ])
                case "rate_limits":
                    try read(v, key, into: &s.rateLimits, [
                        "enabled": .bool(\.enabled),
                        "provide_diagnosis_keys_per_day": .integer(\.provideDiagnosisKeysPerDay, 1...10_000),
                        "data_mapping_changes_per_week": .integer(\.dataMappingChangesPerWeek, 1...10_000),
                    ])
                case "watchdog":
                    try read(v, key, into: &s.watchdog, [
                        "scan_stall_seconds": .number(\.scanStallSeconds, 5...3600),
                        "controller_silence_seconds": .number(\.controllerSilenceSeconds, 5...3600),
                    ])
                case "callers":
                    try read(v, key, into: &s.callers, [
                        "io_timeout_seconds": .number(\.ioTimeoutSeconds, 1...3600),
                        "calls_in_flight": .integer(\.callsInFlight, 1...64),
                    ])
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
                    try read(v, key, into: &c, [
                        "file": .string(\.path),
                        "max_size_mb": .custom { n, setting, section in section.maxBytes = try integer(n, setting, 1...4096) << 20 },
                        "keep": .integer(\.keep, 0...100),
                    ])
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
