#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport
import Synchronization

/// A D-Bus value. `ay` is always `.bytes` when decoded (compact: one byte per element, where
/// `.array(.byte, ...)` would cost an enum per byte); `.array(.byte, ...)` is accepted when encoding.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(DBusUnixFD)
    case bytes(Data)
    /// An array of `element`-typed values (element type given so an empty array has a signature).
    case array(DBusType, [DBusValue])
    case dict(key: DBusType, value: DBusType, [DBusDictEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's type.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .bytes: .array(.byte)
        case .array(let element, _): .array(element)
        case .dict(let key, let value, _): .dict(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// The signature of a sequence of values (a message body).
    public static func signature(of values: [DBusValue]) -> String {
        values.map(\.type.signature).joined()
    }

    /// `a{sv}`, the usual option bag, from a Swift dictionary (keys sorted for stable output).
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .dict(key: .string, value: .variant, entries.sorted { $0.key < $1.key }.map {
            DBusDictEntry(key: .string($0.key), value: .variant($0.value))
        })
    }

    // Accessors: nil when the value has another type.
    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }
    public var boolValue: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var bytesValue: Data? {
        switch self {
        case .bytes(let d): d
        case .array(.byte, let items):
            Data(items.compactMap { if case .byte(let b) = $0 { b } else { nil } })
        default: nil
        }
    }
    public var unixFDValue: DBusUnixFD? { if case .unixFD(let fd) = self { fd } else { nil } }
    public var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }
    public var arrayValue: [DBusValue]? { if case .array(_, let a) = self { a } else { nil } }
    public var structValue: [DBusValue]? { if case .structure(let f) = self { f } else { nil } }
    /// Any integer type widened to Int64 (UInt64 above Int64.max gives nil).
    public var integerValue: Int64? {
        switch self {
        case .byte(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint32(let v): Int64(v)
        case .int64(let v): v
        case .uint64(let v): Int64(exactly: v)
        default: nil
        }
    }
    public var doubleValue: Double? { if case .double(let d) = self { d } else { nil } }
    /// The entries of an `a{s*}` dict keyed by string, variants unwrapped.
    public var vardictValue: [String: DBusValue]? {
        guard case .dict(.string, _, let entries) = self else { return nil }
        var out: [String: DBusValue] = [:]
        for e in entries {
            guard let k = e.key.stringValue else { return nil }
            out[k] = e.value.variantValue ?? e.value
        }
        return out
    }
}

/// One entry of a D-Bus dict (`{KV}`).
public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// A Unix file descriptor carried in a message (`h`). The object owns the descriptor and closes
/// it when released, unless `take()` transferred ownership to the caller.
public final class DBusUnixFD: @unchecked Sendable, Hashable, CustomStringConvertible {
    // Guarded: `take()` and `deinit` may race only in misuse, but stay safe.
    private let fd: Mutex<Int32>

    /// Takes ownership of `fd`.
    public init(owning fd: Int32) {
        self.fd = Mutex(fd)
    }

    /// Duplicates `fd` (close-on-exec); the caller keeps its own descriptor.
    public init(duplicating fd: Int32) throws(DBusUnixFDError) {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw .dupFailed(fd: fd, errno: errno) }
        self.fd = Mutex(copy)
    }

    /// The descriptor while still owned, else nil. Do not close it: the object will.
    public var descriptor: Int32? { fd.withLock { $0 >= 0 ? $0 : nil } }

    /// Hands the descriptor over to the caller, who must close it. Nil if already taken.
    public func take() -> Int32? {
        fd.withLock { fd in
            guard fd >= 0 else { return nil }
            defer { fd = -1 }
            return fd
        }
    }

    /// Closes the descriptor now.
    public func close() {
        if let fd = take() { _ = Glibc.close(fd) }
    }

    deinit {
        if let fd = take() { _ = Glibc.close(fd) }
    }

    public static func == (a: DBusUnixFD, b: DBusUnixFD) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "DBusUnixFD(\(descriptor.map(String.init) ?? "taken"))" }
}

public enum DBusUnixFDError: Error, Sendable, Equatable {
    case dupFailed(fd: Int32, errno: Int32)
}

/// Bounds applied when decoding a received message, so that a hostile caller cannot make the
/// process expand a message into unbounded memory or recursion. The bus daemon already bounds
/// the message size; these bound what the Swift side builds from it.
public struct DBusLimits: Sendable, Equatable {
    /// Container nesting (arrays, dicts, structs, variants) below the top-level arguments.
    public var maxDepth: Int
    /// Elements of one array or dict (`ay` is bounded by `maxByteArrayBytes` instead).
    public var maxArrayElements: Int
    /// Bytes of one string, object path or signature.
    public var maxStringBytes: Int
    /// Bytes of one `ay`.
    public var maxByteArrayBytes: Int
    /// Values in one message, all levels counted.
    public var maxValues: Int
    /// Unix file descriptors in one message (16: what a dbus-daemon accepts per message unless
    /// configured otherwise; a sender over the bus's limit is disconnected by the bus).
    public var maxUnixFDs: Int

    public init(
        maxDepth: Int = 16, maxArrayElements: Int = 65_536, maxStringBytes: Int = 1 << 20,
        maxByteArrayBytes: Int = 16 << 20, maxValues: Int = 262_144, maxUnixFDs: Int = 16
    ) {
        self.maxDepth = maxDepth
        self.maxArrayElements = maxArrayElements
        self.maxStringBytes = maxStringBytes
        self.maxByteArrayBytes = maxByteArrayBytes
        self.maxValues = maxValues
        self.maxUnixFDs = maxUnixFDs
    }

    public static let `default` = DBusLimits()
}
