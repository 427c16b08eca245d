import CDBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Conversion between `DBusValue` and libdbus message iterators. Values are validated before
/// any libdbus append call: libdbus aborts the process on some invalid input (a bad object
/// path, an embedded NUL), so nothing invalid may reach it.
enum Marshal {
    static let typeArray = Int32(UInt8(ascii: "a"))
    static let typeStruct = Int32(UInt8(ascii: "r"))
    static let typeDictEntry = Int32(UInt8(ascii: "e"))
    static let typeVariant = Int32(UInt8(ascii: "v"))
    static let typeByte = Int32(UInt8(ascii: "y"))
    static let typeInvalid: Int32 = 0

    // MARK: Validation

    /// The D-Bus specification's limit on the total nesting of a message body.
    static let maxMessageDepth = 64

    static func validate(_ values: [DBusValue]) throws(DBusBindingError) {
        for v in values { try validate(v, depth: 0) }
    }

    static func validate(_ value: DBusValue, depth: Int) throws(DBusBindingError) {
        guard depth <= maxMessageDepth else {
            throw .invalidValue("nesting deeper than \(maxMessageDepth)")
        }
        switch value {
        case .string(let s):
            guard !s.utf8.contains(0) else { throw .invalidValue("string contains a NUL character") }
        case .objectPath(let p):
            guard isValidObjectPath(p) else { throw .invalidName(kind: "object path", value: p) }
        case .signature(let g):
            guard g.utf8.count <= 255, !g.utf8.contains(0), dbus_signature_validate(g, nil) != 0 else {
                throw .invalidValue("'\(g)' is not a valid signature")
            }
        case .unixFD(let fd):
            guard fd.descriptor != nil else { throw .invalidValue("file descriptor was already taken") }
        case .array(let element, let items):
            try validateSignature(DBusType.array(element).signature)
            for item in items {
                guard item.type == element || (element == .byte && item.type == .byte) else {
                    throw .signatureMismatch(expected: element.signature, actual: item.type.signature)
                }
                try validate(item, depth: depth + 1)
            }
        case .dict(let key, let valueType, let entries):
            try validateSignature(DBusType.dict(key: key, value: valueType).signature)
            for e in entries {
                guard e.key.type == key, e.value.type == valueType else {
                    throw .signatureMismatch(
                        expected: key.signature + valueType.signature,
                        actual: e.key.type.signature + e.value.type.signature)
                }
                try validate(e.key, depth: depth + 2)
                try validate(e.value, depth: depth + 2)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidValue("empty struct") }
            try validateSignature(value.type.signature)
            for f in fields { try validate(f, depth: depth + 1) }
        case .variant(let inner):
            try validateSignature(inner.type.signature)
            try validate(inner, depth: depth + 1)
        default:
            break
        }
    }

    private static func validateSignature(_ s: String) throws(DBusBindingError) {
        do {
            _ = try DBusType.parseSingle(s)
        } catch {
            throw .invalidValue(error.description)
        }
    }

    static func isValidObjectPath(_ p: String) -> Bool {
        !p.utf8.contains(0) && dbus_validate_path(p, nil) != 0
    }

    // MARK: Encoding

    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusBindingError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for v in values { try append(v, &iter) }
    }

    private static func check(_ ok: dbus_bool_t) throws(DBusBindingError) {
        guard ok != 0 else { throw .outOfMemory }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ code: Int32, _ value: T) throws(DBusBindingError) {
        var v = value
        let ok = withUnsafeMutablePointer(to: &v) { dbus_message_iter_append_basic(&iter, code, $0) }
        try check(ok)
    }

    private static func withContainer(
        _ iter: inout DBusMessageIter, _ code: Int32, _ signature: String?,
        _ body: (inout DBusMessageIter) throws(DBusBindingError) -> Void
    ) throws(DBusBindingError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = dbus_message_iter_open_container(&iter, code, signature, &sub)
        } else {
            opened = dbus_message_iter_open_container(&iter, code, nil, &sub)
        }
        try check(opened)
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iter, &sub)
            throw error
        }
        try check(dbus_message_iter_close_container(&iter, &sub))
    }

    static func append(_ value: DBusValue, _ iter: inout DBusMessageIter) throws(DBusBindingError) {
        let code = value.type.typeCode
        switch value {
        case .byte(let v): try appendBasic(&iter, code, v)
        case .boolean(let v): try appendBasic(&iter, code, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try appendBasic(&iter, code, v)
        case .uint16(let v): try appendBasic(&iter, code, v)
        case .int32(let v): try appendBasic(&iter, code, v)
        case .uint32(let v): try appendBasic(&iter, code, v)
        case .int64(let v): try appendBasic(&iter, code, v)
        case .uint64(let v): try appendBasic(&iter, code, v)
        case .double(let v): try appendBasic(&iter, code, v)
        case .string(let s), .objectPath(let s), .signature(let s):
            let ok = s.withCString { p -> dbus_bool_t in
                var ptr: UnsafePointer<CChar>? = p
                return dbus_message_iter_append_basic(&iter, code, &ptr)
            }
            try check(ok)
        case .unixFD(let fd):
            // libdbus duplicates the descriptor; the value keeps owning its own.
            guard let raw = fd.descriptor else { throw .invalidValue("file descriptor was already taken") }
            try appendBasic(&iter, code, raw)
        case .bytes(let data):
            try withContainer(&iter, typeArray, "y") { sub throws(DBusBindingError) in
                guard !data.isEmpty else { return }
                let ok = data.withUnsafeBytes { buf -> dbus_bool_t in
                    var p: UnsafeRawPointer? = buf.baseAddress
                    return dbus_message_iter_append_fixed_array(&sub, typeByte, &p, Int32(buf.count))
                }
                try check(ok)
            }
        case .array(let element, let items):
            try withContainer(&iter, typeArray, element.signature) { sub throws(DBusBindingError) in
                for item in items { try append(item, &sub) }
            }
        case .dict(let key, let valueType, let entries):
            try withContainer(&iter, typeArray, "{" + key.signature + valueType.signature + "}") { sub throws(DBusBindingError) in
                for e in entries {
                    try withContainer(&sub, typeDictEntry, nil) { entry throws(DBusBindingError) in
                        try append(e.key, &entry)
                        try append(e.value, &entry)
                    }
                }
            }
        case .structure(let fields):
            try withContainer(&iter, typeStruct, nil) { sub throws(DBusBindingError) in
                for f in fields { try append(f, &sub) }
            }
        case .variant(let inner):
            try withContainer(&iter, typeVariant, inner.type.signature) { sub throws(DBusBindingError) in
                try append(inner, &sub)
            }
        }
    }

    // MARK: Decoding

    /// Decodes a message body within `limits`. File descriptors are received as duplicates the
    /// returned values own; on a thrown error those already decoded are closed with the values.
    static func decode(_ message: OpaquePointer, limits: DBusLimits) throws(DBusDecodeError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var decoder = Decoder(limits: limits)
        var out: [DBusValue] = []
        repeat {
            out.append(try decoder.read(&iter, depth: 0))
        } while dbus_message_iter_next(&iter) != 0
        return out
    }

    struct Decoder {
        let limits: DBusLimits
        var values = 0
        var fds = 0

        mutating func count() throws(DBusDecodeError) {
            values += 1
            guard values <= limits.maxValues else {
                throw .limitExceeded(what: "number of values in the message", limit: limits.maxValues, actual: values)
            }
        }

        func enter(_ depth: Int) throws(DBusDecodeError) {
            guard depth <= limits.maxDepth else {
                throw .limitExceeded(what: "container nesting depth", limit: limits.maxDepth, actual: depth)
            }
        }

        func string(_ p: UnsafePointer<CChar>?, what: String) throws(DBusDecodeError) -> String {
            guard let p else { return "" }
            let n = strlen(p)
            guard n <= limits.maxStringBytes else {
                throw .limitExceeded(what: "length of a \(what)", limit: limits.maxStringBytes, actual: n)
            }
            let buf = UnsafeRawBufferPointer(start: p, count: n)
            guard let s = String(validating: buf.bindMemory(to: UInt8.self), as: UTF8.self) else {
                throw .invalidUTF8(what: what)
            }
            return s
        }

        /// The signature of the argument under `iter` (libdbus allocates it).
        func signature(_ iter: inout DBusMessageIter) throws(DBusDecodeError) -> DBusType {
            guard let raw = dbus_message_iter_get_signature(&iter) else {
                throw .unexpectedTypeCode(0)
            }
            defer { dbus_free(raw) }
            guard let t = try? DBusType.parseSingle(String(cString: raw)) else {
                throw .unexpectedTypeCode(dbus_message_iter_get_arg_type(&iter))
            }
            return t
        }

        mutating func read(_ iter: inout DBusMessageIter, depth: Int) throws(DBusDecodeError) -> DBusValue {
            try count()
            let code = dbus_message_iter_get_arg_type(&iter)
            var b = DBusBasicValue()
            switch UInt8(truncatingIfNeeded: code) {
            case UInt8(ascii: "y"): dbus_message_iter_get_basic(&iter, &b); return .byte(b.byt)
            case UInt8(ascii: "b"): dbus_message_iter_get_basic(&iter, &b); return .boolean(b.bool_val != 0)
            case UInt8(ascii: "n"): dbus_message_iter_get_basic(&iter, &b); return .int16(b.i16)
            case UInt8(ascii: "q"): dbus_message_iter_get_basic(&iter, &b); return .uint16(b.u16)
            case UInt8(ascii: "i"): dbus_message_iter_get_basic(&iter, &b); return .int32(b.i32)
            case UInt8(ascii: "u"): dbus_message_iter_get_basic(&iter, &b); return .uint32(b.u32)
            case UInt8(ascii: "x"): dbus_message_iter_get_basic(&iter, &b); return .int64(Int64(b.i64))
            case UInt8(ascii: "t"): dbus_message_iter_get_basic(&iter, &b); return .uint64(UInt64(b.u64))
            case UInt8(ascii: "d"): dbus_message_iter_get_basic(&iter, &b); return .double(b.dbl)
            case UInt8(ascii: "s"):
                dbus_message_iter_get_basic(&iter, &b)
                return .string(try string(b.str, what: "string"))
            case UInt8(ascii: "o"):
                dbus_message_iter_get_basic(&iter, &b)
                return .objectPath(try string(b.str, what: "object path"))
            case UInt8(ascii: "g"):
                dbus_message_iter_get_basic(&iter, &b)
                return .signature(try string(b.str, what: "signature"))
            case UInt8(ascii: "h"):
                // libdbus returns a duplicate the caller owns; wrap it first so it is closed
                // even if the limit check below throws.
                dbus_message_iter_get_basic(&iter, &b)
                // -1 when the message names a descriptor it does not carry (found by fuzzing:
                // an `h` inside a variant of a message rebuilt from bytes).
                guard b.fd >= 0 else { throw .missingUnixFD }
                let fd = DBusUnixFD(owning: b.fd)
                fds += 1
                guard fds <= limits.maxUnixFDs else {
                    throw .limitExceeded(what: "number of file descriptors", limit: limits.maxUnixFDs, actual: fds)
                }
                return .unixFD(fd)
            case UInt8(ascii: "a"):
                try enter(depth + 1)
                let n = Int(dbus_message_iter_get_element_count(&iter))
                if dbus_message_iter_get_element_type(&iter) == typeByte {
                    guard n <= limits.maxByteArrayBytes else {
                        throw .limitExceeded(what: "length of a byte array", limit: limits.maxByteArrayBytes, actual: n)
                    }
                    var sub = DBusMessageIter()
                    dbus_message_iter_recurse(&iter, &sub)
                    var p: UnsafeRawPointer? = nil
                    var len: Int32 = 0
                    withUnsafeMutablePointer(to: &p) { pp in
                        dbus_message_iter_get_fixed_array(&sub, pp, &len)
                    }
                    guard let p, len > 0 else { return .bytes(Data()) }
                    return .bytes(Data(bytes: p, count: Int(len)))
                }
                guard n <= limits.maxArrayElements else {
                    throw .limitExceeded(what: "number of array elements", limit: limits.maxArrayElements, actual: n)
                }
                let type = try signature(&iter)
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                switch type {
                case .dict(let keyType, let valueType):
                    var entries: [DBusDictEntry] = []
                    entries.reserveCapacity(n)
                    while dbus_message_iter_get_arg_type(&sub) != typeInvalid {
                        var entry = DBusMessageIter()
                        dbus_message_iter_recurse(&sub, &entry)
                        let k = try read(&entry, depth: depth + 1)
                        dbus_message_iter_next(&entry)
                        let v = try read(&entry, depth: depth + 1)
                        entries.append(DBusDictEntry(key: k, value: v))
                        dbus_message_iter_next(&sub)
                    }
                    return .dict(key: keyType, value: valueType, entries)
                case .array(let element):
                    var items: [DBusValue] = []
                    items.reserveCapacity(n)
                    while dbus_message_iter_get_arg_type(&sub) != typeInvalid {
                        items.append(try read(&sub, depth: depth + 1))
                        dbus_message_iter_next(&sub)
                    }
                    return .array(element, items)
                default:
                    throw .unexpectedTypeCode(code)
                }
            case UInt8(ascii: "r"):
                try enter(depth + 1)
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                var fields: [DBusValue] = []
                while dbus_message_iter_get_arg_type(&sub) != typeInvalid {
                    fields.append(try read(&sub, depth: depth + 1))
                    dbus_message_iter_next(&sub)
                }
                return .structure(fields)
            case UInt8(ascii: "v"):
                try enter(depth + 1)
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                return .variant(try read(&sub, depth: depth + 1))
            default:
                throw .unexpectedTypeCode(code)
            }
        }
    }
}
