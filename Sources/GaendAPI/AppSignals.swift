import DBusCore

/// The names of the app half's own D-Bus object (`gaenctl app sync`, not gaend): the app sends
/// its signal on its own connection; gaend is not involved.
public enum GaendAppBus {
    public static let objectPath = "/org/gaend/App1"
    public static let interface = "org.gaend.App1"
    /// The app's own well-known name: `org.gaend.App1` for the default gaend, and
    /// `org.gaend.App1.NAME` for instance NAME (the app of org.gaend.hci0 owns
    /// org.gaend.App1.hci0). Only the app's user may own it (dbus/org.gaend.App1.conf), so a
    /// receiver that matches on it as the sender hears the app and nobody else.
    public static let busName = "org.gaend.App1"

    public static func busName(instance: String?) -> String {
        guard let instance, !instance.isEmpty, instance != "default" else { return busName }
        return busName + "." + instance
    }

    /// The match rule a receiver adds for the app of `instance`: dbus-daemon delivers only
    /// signals whose sender owns that name at the time.
    public static func riskChangedMatch(instance: String?) -> String {
        "type='signal',sender='\(busName(instance: instance))',interface='\(interface)',member='RiskChanged',path='\(objectPath)'"
    }
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
