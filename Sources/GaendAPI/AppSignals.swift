import DBusCore

/// The names of the app half's own D-Bus object (`gaenctl app sync`, not gaend): the app sends
/// its signal on its own connection; gaend is not involved.
public enum GaendAppBus {
    public static let objectPath = "/org/gaend/App1"
    public static let interface = "org.gaend.App1"
}

/// org.gaend.App1.RiskChanged (node, level, engine, since): the app's risk turned high.
/// `since` is Unix seconds.
public struct GaendAppRiskChanged: GaendSignal, Equatable {
    public static let interface = GaendAppBus.interface, member = "RiskChanged"
    public static let arguments = [DBusArgument("node", "s"), DBusArgument("level", "s"),
                                   DBusArgument("engine", "s"), DBusArgument("since", "x")]
    public var node: String
    public var level: String
    public var engine: String
    public var since: Int64

    public init(node: String, level: String, engine: String, since: Int64) {
        self.node = node
        self.level = level
        self.engine = engine
        self.since = since
    }

    public var args: [DBusValue] { [.string(node), .string(level), .string(engine), .int64(since)] }
    public init(args: [DBusValue]) throws(GaendWireError) {
        try Self.check(args)
        node = try args[0].wireString("node")
        level = try args[1].wireString("level")
        engine = try args[2].wireString("engine")
        since = try args[3].wireInt64("since")
    }
}
