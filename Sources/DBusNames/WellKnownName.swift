/// Why a string is not a well-known bus name (each description completes "NAME ..."). libdbus's `dbus_validate_bus_name` only says
/// yes or no; a person who typed `--bus-name` needs to know which rule the name breaks, so the
/// rules of the D-Bus specification ("Valid Bus Names") are checked here one by one.
public enum WellKnownNameError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLong(bytes: Int)
    case uniqueName
    case tooFewElements
    case emptyElement
    case invalidCharacter(element: String, character: Character)
    case elementStartsWithDigit(element: String)

    public var description: String {
        switch self {
        case .empty: "is empty"
        case .tooLong(let n): "is \(n) bytes long; at most \(WellKnownName.maximumLength) are allowed"
        case .uniqueName: "starts with ':', which marks a connection's unique name, not a well-known name"
        case .tooFewElements: "needs at least two dot-separated elements (e.g. org.gaend.hci0)"
        case .emptyElement: "has an empty element (a leading or trailing dot, or two dots in a row)"
        case .invalidCharacter(let e, let c): "has '\(c)' in element '\(e)'; only A-Z, a-z, 0-9, '_' and '-' are allowed"
        case .elementStartsWithDigit(let e): "has element '\(e)' starting with a digit"
        }
    }
}

/// Well-known bus names (`org.gaend`, `org.gaend.hci0`): validation per the D-Bus
/// specification.
public enum WellKnownName {
    /// The specification's limit for any bus name, in bytes.
    public static let maximumLength = 255

    /// Throws the first rule of the specification that `name` breaks.
    public static func validate(_ name: String) throws(WellKnownNameError) {
        if name.isEmpty { throw .empty }
        if name.utf8.count > maximumLength { throw .tooLong(bytes: name.utf8.count) }
        if name.hasPrefix(":") { throw .uniqueName }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        if elements.count < 2 { throw .tooFewElements }
        for element in elements {
            guard let first = element.first else { throw .emptyElement }
            for c in element where !(c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-")) {
                throw .invalidCharacter(element: String(element), character: c)
            }
            if first.isNumber { throw .elementStartsWithDigit(element: String(element)) }
        }
    }

    /// Whether `name` is `prefix` or below it (`org.gaend.hci0` is below `org.gaend`;
    /// `org.gaendx` is not), matching dbus-daemon's `own_prefix` rule.
    public static func isWithin(_ name: String, prefix: String) -> Bool {
        name == prefix || name.hasPrefix(prefix + ".")
    }
}
