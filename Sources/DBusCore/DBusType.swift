/// A D-Bus type, as written in a signature (D-Bus specification, "Type System").
public indirect enum DBusType: Sendable, Hashable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    /// `aT`; an array of dict entries is `.dict`.
    case array(DBusType)
    /// `a{KV}`: K must be a basic type.
    case dict(key: DBusType, value: DBusType)
    /// `(T...)`, at least one field.
    case structure([DBusType])
    /// `v`
    case variant

    /// The type's signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element): "a" + element.signature
        case .dict(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    public var description: String { signature }

    /// Basic types may be dict keys and are marshalled with `append_basic`.
    public var isBasic: Bool {
        switch self {
        case .array, .dict, .structure, .variant: false
        default: true
        }
    }

    /// The libdbus type code (`DBUS_TYPE_*` is the ASCII code of the signature character).
    var typeCode: Int32 {
        switch self {
        case .array, .dict: Int32(UInt8(ascii: "a"))
        case .structure: Int32(UInt8(ascii: "r"))
        default: Int32(signature.utf8.first!)
        }
    }

    /// Parses a complete signature (zero or more single complete types).
    public static func parse(_ signature: String) throws(DBusSignatureError) -> [DBusType] {
        let bytes = Array(signature.utf8)
        // D-Bus specification: a signature is at most 255 bytes.
        guard bytes.count <= 255 else {
            throw .tooLong(signature: String(signature.prefix(40)) + "...", length: bytes.count)
        }
        var parser = Parser(bytes: bytes, text: signature)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            types.append(try parser.single(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    /// Parses a signature that must hold exactly one complete type.
    public static func parseSingle(_ signature: String) throws(DBusSignatureError) -> DBusType {
        let types = try parse(signature)
        guard types.count == 1 else {
            throw .notSingleType(signature: signature, count: types.count)
        }
        return types[0]
    }

    private struct Parser {
        let bytes: [UInt8]
        let text: String
        var index = 0

        mutating func single(arrayDepth: Int, structDepth: Int) throws(DBusSignatureError) -> DBusType {
            guard index < bytes.count else { throw .truncated(signature: text) }
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "b"): return .boolean
            case UInt8(ascii: "n"): return .int16
            case UInt8(ascii: "q"): return .uint16
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "o"): return .objectPath
            case UInt8(ascii: "g"): return .signature
            case UInt8(ascii: "h"): return .unixFD
            case UInt8(ascii: "v"): return .variant
            case UInt8(ascii: "a"):
                // D-Bus specification: at most 32 nested arrays and 32 nested structs.
                guard arrayDepth < 32 else { throw .nestedTooDeeply(signature: text) }
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    index += 1
                    let key = try single(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                    guard key.isBasic else {
                        throw .dictKeyNotBasic(signature: text, key: key.signature)
                    }
                    let value = try single(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                        throw .unexpectedCharacter(signature: text, offset: index, expected: "}")
                    }
                    index += 1
                    return .dict(key: key, value: value)
                }
                return .array(try single(arrayDepth: arrayDepth + 1, structDepth: structDepth))
            case UInt8(ascii: "("):
                guard structDepth < 32 else { throw .nestedTooDeeply(signature: text) }
                var fields: [DBusType] = []
                while true {
                    guard index < bytes.count else { throw .truncated(signature: text) }
                    if bytes[index] == UInt8(ascii: ")") {
                        index += 1
                        break
                    }
                    fields.append(try single(arrayDepth: arrayDepth, structDepth: structDepth + 1))
                }
                guard !fields.isEmpty else { throw .emptyStruct(signature: text) }
                return .structure(fields)
            default:
                throw .unexpectedCharacter(signature: text, offset: index - 1, expected: "a type code")
            }
        }
    }
}

/// Why a signature is not valid.
public enum DBusSignatureError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLong(signature: String, length: Int)
    case truncated(signature: String)
    case unexpectedCharacter(signature: String, offset: Int, expected: String)
    case dictKeyNotBasic(signature: String, key: String)
    case emptyStruct(signature: String)
    case nestedTooDeeply(signature: String)
    case notSingleType(signature: String, count: Int)

    public var description: String {
        switch self {
        case .tooLong(let s, let n): "signature '\(s)' is \(n) bytes, at most 255 allowed"
        case .truncated(let s): "signature '\(s)' ends inside a container"
        case .unexpectedCharacter(let s, let o, let e): "signature '\(s)': expected \(e) at offset \(o)"
        case .dictKeyNotBasic(let s, let k): "signature '\(s)': dict key '\(k)' is not a basic type"
        case .emptyStruct(let s): "signature '\(s)': empty struct"
        case .nestedTooDeeply(let s): "signature '\(s)': more than 32 nested arrays or structs"
        case .notSingleType(let s, let n): "signature '\(s)' holds \(n) complete types, expected 1"
        }
    }
}
