#if canImport(Glibc)
import Glibc
#endif
import ENProtocol
import PlatformSupport
import YAMLReader

/// The calibration `gaenctl calibrate` saves: what goes into the AEM (`txPower`, nil keeps the
/// config's) and what corrects received RSSI (whole dB, as gaend applies it).
package struct CalibrationUpdate: Sendable, Equatable {
    package var rssiCorrection: Int
    package var calibrationConfidence: CalibrationConfidence
    package var txPower: Int?

    package init(rssiCorrection: Int, calibrationConfidence: CalibrationConfidence, txPower: Int? = nil) {
        self.rssiCorrection = rssiCorrection; self.calibrationConfidence = calibrationConfidence; self.txPower = txPower
    }
}

/// Why a config was not edited. The file is then left exactly as it was.
package enum CalibrationConfigEditError: Error, Equatable, CustomStringConvertible {
    /// The config does not load in gaend now; editing it could only hide that.
    case configDoesNotLoad(path: String, reason: String)
    /// A layout the line-level edit does not handle (flow mapping, block scalar, tags...).
    case unsupportedLayout(path: String, line: Int?, reason: String)
    /// The edited text would not load as exactly the old settings plus the new calibration.
    case editNotVerified(path: String, reason: String)
    case readFailed(path: String, reason: String)
    case writeFailed(path: String, reason: String)

    package var description: String {
        switch self {
        case .configDoesNotLoad(let p, let r): return "\(p) does not load in gaend, fix it first: \(r)"
        case .unsupportedLayout(let p, let l, let r):
            return "\(l.map { "\(p):\($0)" } ?? p): cannot edit the calibration safely: \(r); edit the file by hand"
        case .editNotVerified(let p, let r): return "\(p): the edit did not verify, file left unchanged: \(r)"
        case .readFailed(let p, let r): return "cannot read \(p): \(r)"
        case .writeFailed(let p, let r): return "cannot write \(p): \(r)"
        }
    }
}

/// Writes a calibration into gaend's YAML config, keeping every other line and comment.
///
/// Why a line-level edit: a YAML emitter does not keep comments or layout when a document is
/// re-emitted, and the config is a commented, hand-edited file. So the YAML reader is used only
/// to find where the `calibration:` block and its values are (node marks: a scalar's start and
/// end), the values are replaced in place (a trailing comment stays), missing keys are added as
/// lines of the block, and the result must load with `ConfigLoader` as exactly the old settings
/// with the new calibration, otherwise nothing is written. Layouts the edit cannot do safely (a
/// flow mapping, a block or tagged scalar, a value on a line of its own or over several lines,
/// a top level that is not a block mapping) are refused.
package enum CalibrationConfigEditor {
    /// The settings `text` loads as, with `update` applied.
    static func expected(_ base: GaendSettings, _ update: CalibrationUpdate) -> GaendSettings {
        var s = base
        s.calibration.rssiCorrection = update.rssiCorrection
        s.calibration.calibrationConfidence = update.calibrationConfidence
        if let tx = update.txPower { s.calibration.txPower = tx }
        return s
    }

    /// The new text of the config (`text` nil: the file does not exist yet). Pure.
    package static func edit(_ text: String?, path: String, update: CalibrationUpdate) throws -> String {
        let original = text ?? ""
        let before: GaendSettings
        do { before = try ConfigLoader.parse(original, path: path) } catch {
            throw CalibrationConfigEditError.configDoesNotLoad(path: path, reason: "\(error)")
        }
        let wanted: [(key: String, value: String)] = [
            ("rssi_correction", String(update.rssiCorrection)),
            ("calibration_confidence", update.calibrationConfidence.configName),
        ] + (update.txPower.map { [("tx_power", String($0))] } ?? [])

        let edited = try editedText(original, path: path, wanted: wanted)
        let after: GaendSettings
        do { after = try ConfigLoader.parse(edited, path: path) } catch {
            throw CalibrationConfigEditError.editNotVerified(path: path, reason: "the result would not load: \(error)")
        }
        guard after == expected(before, update) else {
            throw CalibrationConfigEditError.editNotVerified(path: path, reason: "the result would load with other settings than the old ones plus the calibration")
        }
        return edited
    }

    static func editedText(_ text: String, path: String, wanted: [(key: String, value: String)]) throws -> String {
        func refuse(_ line: Int?, _ reason: String) -> CalibrationConfigEditError {
            .unsupportedLayout(path: path, line: line, reason: reason)
        }
        let root: YAMLNode?
        do { root = try YAML.compose(text) } catch {
            throw CalibrationConfigEditError.configDoesNotLoad(path: path, reason: "\(error)")
        }
        let crlf = text.contains("\r\n")
        // A new `calibration:` block at the end: for a missing file, an empty (or comments
        // only) file, or a config without the block.
        func appended() -> String {
            var block = "calibration:\n" + wanted.map { "  \($0.key): \($0.value)\n" }.joined()
            if crlf { block = block.replacing("\n", with: "\r\n") }
            if text.isEmpty { return block }
            return text + (text.unicodeScalars.last == "\n" ? "" : (crlf ? "\r\n" : "\n")) + block
        }
        // No document, or an empty one (`---`): the block goes at the end (and the result is
        // verified like every edit).
        guard let root, !root.isNull else { return appended() }
        // The reader's lines end where YAML's do: also at a lone "\r", NEL, LS and PS. Lines are
        // split at "\n" below, so a text with those is not edited (its marks would point elsewhere).
        let scalars = Array(text.unicodeScalars)
        for (i, c) in scalars.enumerated() where c == "\u{85}" || c == "\u{2028}" || c == "\u{2029}" || (c == "\r" && (i + 1 == scalars.count || scalars[i + 1] != "\n")) {
            throw refuse(scalars[..<i].filter { $0 == "\n" }.count + 1, "the file breaks lines with other characters than \\n or \\r\\n (U+\(String(c.value, radix: 16, uppercase: true)))")
        }
        // Lines as unicode scalars (the reader's columns count scalars); the "\n" is not part of a line.
        // (Split as scalars: as Characters, "\r\n" is one grapheme and would not split at "\n".)
        var lines = scalars.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
        // One setting per line: a block mapping with no tag or anchor in front of it.
        func blockMapping(_ node: YAMLNode) -> YAMLMapping? {
            guard case .mapping(let m) = node, m.style == .block, m.tag == nil, m.anchor == nil else { return nil }
            return m
        }
        guard let top = blockMapping(root) else {
            throw refuse(root.mark.line, "the top level is not a block mapping (one setting per line)")
        }
        guard let calibration = top.entries.first(where: { $0.key.string == "calibration" }) else { return appended() }
        let calKey = calibration.key
        guard let cal = blockMapping(calibration.value) else {
            throw refuse(calKey.mark.line, "'calibration:' is not a block mapping (e.g. written as {...} on one line)")
        }
        var lastLine = calKey.mark.line
        var indent: Int?
        for entry in cal.entries {
            let k = entry.key, km = k.mark
            if indent == nil { indent = km.column - 1 }
            guard case .scalar(let scalar) = entry.value, km.line == scalar.start.line else {
                throw refuse(km.line, "'\(k.string ?? "?")' does not have its value on its own line")
            }
            // A block scalar ends at the start of the line after its last one.
            lastLine = max(lastLine, scalar.end.column == 1 && scalar.end.line > scalar.start.line ? scalar.end.line - 1 : scalar.end.line)
            guard let i = wanted.firstIndex(where: { $0.key == k.string }) else { continue }
            guard scalar.tag == nil, scalar.anchor == nil else { throw refuse(km.line, "the value carries a tag or anchor") }
            guard [.plain, .singleQuoted, .doubleQuoted].contains(scalar.style) else { throw refuse(km.line, "the value is a block scalar") }
            guard scalar.end.line == scalar.start.line else { throw refuse(km.line, "the value of '\(wanted[i].key)' spans several lines") }
            let row = scalar.start.line - 1, start = scalar.start.column - 1, end = scalar.end.column - 1
            guard row < lines.count, start < end, end <= lines[row].count else { throw refuse(km.line, "the position is outside the file") }
            lines[row].replaceSubrange(start..<end, with: Array(wanted[i].value.unicodeScalars))
        }
        let present = Set(cal.entries.compactMap { $0.key.string })
        let missing = wanted.filter { !present.contains($0.key) }
        if !missing.isEmpty {
            let pad = String(repeating: " ", count: indent ?? 2)
            let added = missing.map { Array((pad + "\($0.key): \($0.value)" + (crlf ? "\r" : "")).unicodeScalars) }
            guard lastLine >= 1, lastLine <= lines.count else { throw refuse(lastLine, "the position is outside the file") }
            lines.insert(contentsOf: added, at: lastLine)
        }
        return lines.map { String(String.UnicodeScalarView($0)) }.joined(separator: "\n")
    }

    /// Checks, before a long measurement, that the config at `path` can take a calibration
    /// (it loads, and its layout is one the edit handles). Writes nothing.
    package static func check(fileAt path: String, txPower: Int?) throws {
        let current = try read(path)
        _ = try edit(current.text, path: path, update: CalibrationUpdate(rssiCorrection: 0, calibrationConfidence: .lowest, txPower: txPower))
    }

    /// Edits the config file at `path` (created if missing) and replaces it atomically: a
    /// temporary file in the same directory, written, given the old file's mode (and owner,
    /// when allowed), flushed, then renamed over it. A symbolic link is followed, so the file
    /// it points to is replaced and the link stays. On any failure the file is unchanged.
    /// Returns the settings the file now loads as.
    @discardableResult
    package static func apply(_ update: CalibrationUpdate, toFileAt path: String) throws -> GaendSettings {
        let current = try read(path)
        let edited = try edit(current.text, path: path, update: update)
        if edited != current.text {
            let info = current.info
            try replace(current.target, with: Array(edited.utf8), mode: info.map { $0.st_mode & 0o7777 } ?? 0o644,
                        owner: info.map { ($0.st_uid, $0.st_gid) }, shownAs: path)
        }
        return try ConfigLoader.parse(edited, path: path)
    }

    /// The file a path names (symbolic links followed), its status and text; nil when missing.
    static func read(_ path: String) throws -> (target: String, info: stat?, text: String?) {
        let target = ConfigFile.followingLinks(path)
        var info = stat()
        guard stat(target, &info) == 0 else {
            if errno == ENOENT { return (target, nil, nil) }
            throw CalibrationConfigEditError.readFailed(path: path, reason: SystemCallError.lastReason)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw CalibrationConfigEditError.readFailed(path: path, reason: "not a regular file") }
        let bytes: [UInt8]
        switch ConfigFile.read(target, limit: ConfigLoader.maximumFileSize) {
        case .success(let b): bytes = b
        case .failure(.tooLarge): throw CalibrationConfigEditError.readFailed(path: path, reason: "larger than \(ConfigLoader.maximumFileSize) bytes")
        case .failure(.system(let reason)): throw CalibrationConfigEditError.readFailed(path: path, reason: reason)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw CalibrationConfigEditError.readFailed(path: path, reason: "not UTF-8 text") }
        return (target, info, text)
    }

    static func replace(_ target: String, with data: [UInt8], mode: mode_t, owner: (uid_t, gid_t)?, shownAs path: String) throws {
        func failure(_ what: String, _ reason: String = SystemCallError.lastReason) -> CalibrationConfigEditError {
            .writeFailed(path: path, reason: "\(what): \(reason)")
        }
        let file: AtomicFile
        do throws(SystemCallError) { file = try AtomicFile(path: target, mode: mode) } catch {
            throw failure("cannot create a temporary file in \(PathName.directory(of: target))", error.reason)
        }
        do throws(SystemCallError) { try file.write(data) } catch { throw failure("write failed", error.reason) }
        // The owner first: chown clears set-id bits, fchmod then sets the exact mode again.
        if let owner, fchown(file.descriptor, owner.0, owner.1) != 0, errno != EPERM { throw failure("cannot set the owner") }
        guard fchmod(file.descriptor, mode) == 0 else { throw failure("cannot set the mode") }
        do throws(SystemCallError) { try file.commit() } catch { throw failure("\(error.function) failed", error.reason) }
    }
}
