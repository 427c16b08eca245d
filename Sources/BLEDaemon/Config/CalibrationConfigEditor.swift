import ENProtocol
import Foundation
import Yams

/// The calibration `gaenctl calibrate` saves: what goes into the AEM (`txPower`, nil keeps the
/// config's) and what corrects received RSSI (whole dB, as gaend applies it).
public struct CalibrationUpdate: Sendable, Equatable {
    public var rssiCorrection: Int
    public var calibrationConfidence: CalibrationConfidence
    public var txPower: Int?

    public init(rssiCorrection: Int, calibrationConfidence: CalibrationConfidence, txPower: Int? = nil) {
        self.rssiCorrection = rssiCorrection; self.calibrationConfidence = calibrationConfidence; self.txPower = txPower
    }
}

/// Why a config was not edited. The file is then left exactly as it was.
public enum CalibrationConfigEditError: Error, Equatable, CustomStringConvertible {
    /// The config does not load in gaend now; editing it could only hide that.
    case configDoesNotLoad(path: String, reason: String)
    /// A layout the line-level edit does not handle (flow mapping, block scalar, tags...).
    case unsupportedLayout(path: String, line: Int?, reason: String)
    /// The edited text would not load as exactly the old settings plus the new calibration.
    case editNotVerified(path: String, reason: String)
    case readFailed(path: String, reason: String)
    case writeFailed(path: String, reason: String)

    public var description: String {
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
/// Why a line-level edit: Yams (libyaml) does not keep comments or layout when a document is
/// re-emitted, and the config is a commented, hand-edited file. So Yams is used only to find
/// where the `calibration:` block and its values are (node marks), the values are replaced in
/// place (a trailing comment stays), missing keys are added as lines of the block, and the
/// result must load with `ConfigLoader` as exactly the old settings with the new calibration,
/// otherwise nothing is written. Layouts the edit cannot do safely (a flow mapping, a block or
/// tagged scalar, a top level that is not a block mapping) are refused.
public enum CalibrationConfigEditor {
    /// The settings `text` loads as, with `update` applied.
    static func expected(_ base: GaendSettings, _ update: CalibrationUpdate) -> GaendSettings {
        var s = base
        s.calibration.rssiCorrection = update.rssiCorrection
        s.calibration.calibrationConfidence = update.calibrationConfidence
        if let tx = update.txPower { s.calibration.txPower = tx }
        return s
    }

    /// The new text of the config (`text` nil: the file does not exist yet). Pure.
    public static func edit(_ text: String?, path: String, update: CalibrationUpdate) throws -> String {
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
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch {
            throw CalibrationConfigEditError.configDoesNotLoad(path: path, reason: "\(error)")
        }
        let crlf = text.contains("\r\n")
        // A new `calibration:` block at the end: for a missing file, an empty (or comments
        // only) file, or a config without the block.
        func appended() -> String {
            var block = "calibration:\n" + wanted.map { "  \($0.key): \($0.value)\n" }.joined()
            if crlf { block = block.replacingOccurrences(of: "\n", with: "\r\n") }
            if text.isEmpty { return block }
            return text + (text.unicodeScalars.last == "\n" ? "" : (crlf ? "\r\n" : "\n")) + block
        }
        guard let root else { return appended() }
        // Lines as unicode scalars (Yams' columns count scalars); the "\n" is not part of a line.
        // (Split as scalars: as Characters, "\r\n" is one grapheme and would not split at "\n".)
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
        // A block mapping starts at its first key; a flow one at "{" (Yams 6 reports the style of
        // a composed mapping unreliably, so the text at its start is looked at).
        func isBlockMapping(_ node: Node) -> Bool {
            guard case .mapping = node, let m = node.mark, m.line >= 1, m.column >= 1 else { return false }
            // The first character of the mapping at or after its mark (libyaml may mark the
            // line break before it).
            var row = m.line - 1, col = m.column - 1
            while row < lines.count {
                while col < lines[row].count, [" ", "\t", "\r"].contains(lines[row][col]) { col += 1 }
                if col < lines[row].count { return !["{", "!", "&", "*"].contains(lines[row][col]) }
                row += 1; col = 0
            }
            return false
        }
        guard case .mapping(let top) = root, isBlockMapping(root) else {
            throw refuse(root.mark?.line, "the top level is not a block mapping (one setting per line)")
        }
        guard let calibration = top.first(where: { $0.key.string == "calibration" }) else { return appended() }
        let calKey = calibration.key, calValue = calibration.value
        guard case .mapping(let cal) = calValue, isBlockMapping(calValue) else {
            throw refuse(calKey.mark?.line, "'calibration:' is not a block mapping (e.g. written as {...} on one line)")
        }
        var lastLine = calKey.mark?.line ?? 0
        var indent: Int?
        for (k, v) in cal {
            guard let km = k.mark, let vm = v.mark else { throw refuse(nil, "the YAML parser gave no position") }
            if indent == nil { indent = km.column - 1 }
            guard case .scalar(let scalar) = v, km.line == vm.line else {
                throw refuse(km.line, "'\(k.string ?? "?")' does not have its value on its own line")
            }
            lastLine = max(lastLine, vm.line)
            guard let i = wanted.firstIndex(where: { $0.key == k.string }) else { continue }
            let row = vm.line - 1, start = vm.column - 1
            guard row < lines.count, start <= lines[row].count else { throw refuse(vm.line, "the position is outside the file") }
            let end = try valueEnd(lines[row], from: start, style: scalar.style, line: vm.line, refuse: refuse)
            if scalar.style == .plain {
                // A plain scalar continued on the next line would be cut in two.
                guard String(String.UnicodeScalarView(lines[row][start..<end])) == scalar.string else {
                    throw refuse(vm.line, "the value of '\(wanted[i].key)' spans several lines")
                }
            }
            lines[row].replaceSubrange(start..<end, with: Array(wanted[i].value.unicodeScalars))
        }
        let present = Set(cal.compactMap { $0.key.string })
        let missing = wanted.filter { !present.contains($0.key) }
        if !missing.isEmpty {
            let pad = String(repeating: " ", count: indent ?? 2)
            let added = missing.map { Array((pad + "\($0.key): \($0.value)" + (crlf ? "\r" : "")).unicodeScalars) }
            guard lastLine >= 1, lastLine <= lines.count else { throw refuse(lastLine, "the position is outside the file") }
            lines.insert(contentsOf: added, at: lastLine)
        }
        return lines.map { String(String.UnicodeScalarView($0)) }.joined(separator: "\n")
    }

    /// Where the scalar starting at `start` ends on its line (a trailing comment is not part of it).
    static func valueEnd(_ line: [Unicode.Scalar], from start: Int, style: Node.Scalar.Style, line number: Int,
                         refuse: (Int?, String) -> CalibrationConfigEditError) throws -> Int {
        guard start < line.count else { throw refuse(number, "the value is empty") }
        switch style {
        case .plain:
            guard !["!", "&", "*", "|", ">"].contains(line[start]) else {
                throw refuse(number, "the value carries a tag, anchor or block indicator")
            }
            var end = line.count
            for i in start..<line.count where line[i] == "#" && i > start && (line[i - 1] == " " || line[i - 1] == "\t") {
                end = i
                break
            }
            while end > start, line[end - 1] == " " || line[end - 1] == "\t" || line[end - 1] == "\r" { end -= 1 }
            return end
        case .singleQuoted:
            guard line[start] == "'" else { throw refuse(number, "the quoted value does not start where expected") }
            var i = start + 1
            while i < line.count {
                if line[i] == "'" {
                    if i + 1 < line.count, line[i + 1] == "'" { i += 2; continue }
                    return i + 1
                }
                i += 1
            }
            throw refuse(number, "the quoted value spans several lines")
        case .doubleQuoted:
            guard line[start] == "\"" else { throw refuse(number, "the quoted value does not start where expected") }
            var i = start + 1
            while i < line.count {
                if line[i] == "\\" { i += 2; continue }
                if line[i] == "\"" { return i + 1 }
                i += 1
            }
            throw refuse(number, "the quoted value spans several lines")
        default:
            throw refuse(number, "the value is a block scalar")
        }
    }

    /// Checks, before a long measurement, that the config at `path` can take a calibration
    /// (it loads, and its layout is one the edit handles). Writes nothing.
    public static func check(fileAt path: String, txPower: Int?) throws {
        let current = try read(path)
        _ = try edit(current.text, path: path, update: CalibrationUpdate(rssiCorrection: 0, calibrationConfidence: .lowest, txPower: txPower))
    }

    /// Edits the config file at `path` (created if missing) and replaces it atomically: a
    /// temporary file in the same directory, written, given the old file's mode (and owner,
    /// when allowed), flushed, then renamed over it. A symbolic link is followed, so the file
    /// it points to is replaced and the link stays. On any failure the file is unchanged.
    /// Returns the settings the file now loads as.
    @discardableResult
    public static func apply(_ update: CalibrationUpdate, toFileAt path: String) throws -> GaendSettings {
        let current = try read(path)
        let edited = try edit(current.text, path: path, update: update)
        if edited != current.text {
            let info = current.info
            try replace(current.target, with: Data(edited.utf8), mode: info.map { $0.st_mode & 0o7777 } ?? 0o644,
                        owner: info.map { ($0.st_uid, $0.st_gid) }, shownAs: path)
        }
        return try ConfigLoader.parse(edited, path: path)
    }

    /// The file a path names (symbolic links followed), its status and text; nil when missing.
    static func read(_ path: String) throws -> (target: String, info: stat?, text: String?) {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var info = stat()
        guard stat(target, &info) == 0 else {
            if errno == ENOENT { return (target, nil, nil) }
            throw CalibrationConfigEditError.readFailed(path: path, reason: String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw CalibrationConfigEditError.readFailed(path: path, reason: "not a regular file") }
        guard Int(info.st_size) <= ConfigLoader.maximumFileSize else {
            throw CalibrationConfigEditError.readFailed(path: path, reason: "larger than \(ConfigLoader.maximumFileSize) bytes")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: target)) } catch {
            throw CalibrationConfigEditError.readFailed(path: path, reason: (error as NSError).localizedDescription)
        }
        guard let text = String(data: data, encoding: .utf8) else { throw CalibrationConfigEditError.readFailed(path: path, reason: "not UTF-8 text") }
        return (target, info, text)
    }

    static func replace(_ target: String, with data: Data, mode: mode_t, owner: (uid_t, gid_t)?, shownAs path: String) throws {
        func failure(_ what: String) -> CalibrationConfigEditError {
            .writeFailed(path: path, reason: "\(what): \(String(cString: strerror(errno)))")
        }
        let url = URL(fileURLWithPath: target)
        let directory = url.deletingLastPathComponent().path
        var template = Array((directory + "/." + url.lastPathComponent + ".XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw failure("cannot create a temporary file in \(directory)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            var offset = 0
            try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                while offset < buffer.count {
                    let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw failure("write failed")
                    }
                    offset += n
                }
            }
            // The owner first: chown clears set-id bits, fchmod then sets the exact mode.
            if let owner, fchown(fd, owner.0, owner.1) != 0, errno != EPERM { throw failure("cannot set the owner") }
            guard fchmod(fd, mode) == 0 else { throw failure("cannot set the mode") }
            guard fsync(fd) == 0 else { throw failure("fsync failed") }
        }
        guard rename(temporary, target) == 0 else { throw failure("rename failed") }
        done = true
        // The rename itself is durable once the directory is flushed.
        let dfd = open(directory, O_RDONLY | O_DIRECTORY)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
    }
}
