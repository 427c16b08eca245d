/// A value bound to or read from SQLite: its five storage classes.
public enum SQLValue: Equatable, Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public static func int(_ v: Int) -> SQLValue { .integer(Int64(v)) }
    public static func int(_ v: Int32) -> SQLValue { .integer(Int64(v)) }
    /// nil binds NULL.
    public static func optional(_ v: Int64?) -> SQLValue { v.map { .integer($0) } ?? .null }

    public var isNull: Bool { self == .null }
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
}
