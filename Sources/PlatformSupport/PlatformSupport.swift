// The few things the daemon's modules took from full Foundation (Thread, String(format:)),
// on the C library (locks are the standard library's `Mutex`, module Synchronization). The footprint goal: gaend links
// FoundationEssentials only, because full Foundation brings CoreFoundation, ICU and
// FoundationInternationalization with it (~1.5 MiB resident in the idle daemon, measured
// by scripts/measure-idle.sh).
#if canImport(Glibc)
import Glibc
import HCIShim
#elseif canImport(Darwin)
import Darwin
#endif

/// glibc's allocator, set for a long-running daemon whose work runs on short-lived threads
/// (the store's executor, the blocking pool, callers' transfers: WorkThreads.swift).
public enum Allocator {
    /// glibc gives threads up to 8 arenas per core, and each keeps the peak of the transient
    /// buffers that ran on it (a scan of tens of thousands of reports: a few MB): on a full
    /// disk under a report flood, 16 arenas held about 100 MB that the pending-scan bound
    /// never saw. Two arenas keep contention low on a board's few cores and that memory small.
    public static func limitArenas(_ arenas: Int32 = 2) {
        _ = gaend_malloc_limit_arenas(arenas)
    }

    /// Hands free memory back to the system (after a large transient buffer is gone).
    public static func trim() {
        _ = gaend_malloc_trim()
    }
}

/// Detached threads of our own (what Foundation's Thread was), named as /proc/PID/task/TID/comm
/// shows them (the kernel keeps 15 bytes).
public enum NamedThread {
    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }

    /// Runs `body` on a new detached thread named `name`.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let rc = pthread_create(&thread, &attributes, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            NamedThread.nameCurrent(start.name)
            start.body()
            return nil
        }, start)
        // Out of threads: as Foundation's Thread did, there is no way to go on.
        precondition(rc == 0, "pthread_create failed (\(rc)) for thread \(name)")
    }

    /// Names the calling thread (at most 15 bytes are kept, cut at a character boundary).
    public static func nameCurrent(_ name: String) {
        var bytes = 0
        var cut = ""
        for c in name {
            bytes += c.utf8.count
            if bytes > 15 { break }
            cut.append(c)
        }
        #if canImport(Glibc)
        _ = gaend_name_current_thread(cut)
        #else
        _ = pthread_setname_np(cut)
        #endif
    }
}

/// printf's rendering of numbers (what String(format:) gave): the C library's own, so the
/// output is byte for byte what it was.
public enum CFormat {
    /// `format` with `arguments` as vsnprintf renders them (numbers only: no %s, no %@).
    public static func string(_ format: String, _ arguments: CVarArg...) -> String {
        withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: 64)
            let needed = Int(vsnprintf(&buffer, buffer.count, format, list))
            if needed >= buffer.count {
                buffer = [CChar](repeating: 0, count: needed + 1)
                _ = withVaList(arguments) { again in vsnprintf(&buffer, buffer.count, format, again) }
            }
            return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
    }

    /// `value` with `decimals` digits after the point, as "%.Nf" renders it.
    public static func fixed(_ value: Double, decimals: Int) -> String {
        string("%.\(decimals)f", value)
    }

    /// `value` as two lower-case hex digits ("%02x").
    public static func hex2(_ value: UInt8) -> String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
        return String([digits[Int(value >> 4)], digits[Int(value & 0xf)]])
    }
}

extension String {
    /// The string without leading and trailing tabs and Unicode space separators (Zs): what
    /// Foundation's `trimmingCharacters(in: .whitespaces)` removed, scalar by scalar.
    public func trimmingWhitespaces() -> String {
        func blank(_ u: Unicode.Scalar) -> Bool { u == "\t" || u.properties.generalCategory == .spaceSeparator }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !blank($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !blank($0) })!
        return String(scalars[first...last])
    }

    /// The string without leading and trailing white space and line ends (the Unicode
    /// White_Space scalars): what Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`
    /// removed (Z* categories, tab, U+000A...U+000D and U+0085: the same set).
    public func trimmingWhitespacesAndNewlines() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }

    /// Every `scalar` replaced by `replacement`, scalar by scalar (as NSString's
    /// replacingOccurrences did for these ASCII cases: a "\r\n" is one Character but two
    /// scalars, and its "\n" is replaced).
    public func replacing(scalar: Unicode.Scalar, with replacement: String) -> String {
        guard unicodeScalars.contains(scalar) else { return self }
        var out = String.UnicodeScalarView()
        for u in unicodeScalars {
            if u == scalar { out.append(contentsOf: replacement.unicodeScalars) } else { out.append(u) }
        }
        return String(out)
    }
}

extension String {
    /// `self` (a directory path) joined with `name`, as NSString's appendingPathComponent
    /// joined them: one "/" added unless the directory ends with one, an empty directory gives
    /// `name` alone.
    public func appendingPathComponent(_ name: String) -> String {
        if isEmpty { return name }
        return hasSuffix("/") ? self + name : self + "/" + name
    }
}

/// Atomic exchange of two existing paths (renameat2 RENAME_EXCHANGE, Linux): a reader of
/// either path sees the old tree or the new one, never a mix. Returns errno on failure.
public func exchangePaths(_ a: String, _ b: String) -> Int32? {
    #if canImport(Glibc)
    return gaend_rename_exchange(a, b) == 0 ? nil : errno
    #else
    return ENOSYS
    #endif
}
