/// Introspection XML (D-Bus specification, "Introspection Data Format") generated from tables.
public enum DBusIntrospection {
    public static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    /// The standard interfaces every exported object implements.
    public static let standardInterfaces: [DBusInterfaceDecl] = [
        DBusInterfaceDecl(name: "org.freedesktop.DBus.Peer", methods: [
            DBusMethodDecl("Ping"),
            DBusMethodDecl("GetMachineId", out: [DBusArgument("machine_uuid", "s")]),
        ]),
        DBusInterfaceDecl(name: "org.freedesktop.DBus.Introspectable", methods: [
            DBusMethodDecl("Introspect", out: [DBusArgument("xml_data", "s")]),
        ]),
        DBusInterfaceDecl(name: "org.freedesktop.DBus.Properties", methods: [
            DBusMethodDecl("Get", in: [DBusArgument("interface_name", "s"), DBusArgument("property_name", "s")],
                           out: [DBusArgument("value", "v")]),
            DBusMethodDecl("GetAll", in: [DBusArgument("interface_name", "s")],
                           out: [DBusArgument("props", "a{sv}")]),
            DBusMethodDecl("Set", in: [DBusArgument("interface_name", "s"), DBusArgument("property_name", "s"),
                                       DBusArgument("value", "v")]),
        ], signals: [
            DBusSignalDecl("PropertiesChanged", [DBusArgument("interface_name", "s"),
                                                 DBusArgument("changed_properties", "a{sv}"),
                                                 DBusArgument("invalidated_properties", "as")]),
        ]),
    ]

    /// A document with `interfaces` and child nodes `children` (relative names).
    public static func xml(interfaces: [DBusInterfaceDecl], children: [String] = []) -> String {
        var out = doctype + "\n<node>\n"
        for i in interfaces { out += fragment(i) }
        for c in children { out += "  <node name=\"\(escape(c))\"/>\n" }
        out += "</node>\n"
        return out
    }

    /// The `<interface>` element of one table, indented by two spaces.
    public static func fragment(_ i: DBusInterfaceDecl) -> String {
        var out = "  <interface name=\"\(escape(i.name))\">\n"
        for m in i.methods {
            let args = m.inArgs.map { ($0, "in") } + m.outArgs.map { ($0, "out") }
            if args.isEmpty && !m.deprecated {
                out += "    <method name=\"\(escape(m.name))\"/>\n"
                continue
            }
            out += "    <method name=\"\(escape(m.name))\">\n"
            for (a, dir) in args {
                out += "      <arg name=\"\(escape(a.name))\" type=\"\(escape(a.signature))\" direction=\"\(dir)\"/>\n"
            }
            if m.deprecated {
                out += "      <annotation name=\"org.freedesktop.DBus.Deprecated\" value=\"true\"/>\n"
            }
            out += "    </method>\n"
        }
        for s in i.signals {
            if s.args.isEmpty {
                out += "    <signal name=\"\(escape(s.name))\"/>\n"
                continue
            }
            out += "    <signal name=\"\(escape(s.name))\">\n"
            for a in s.args {
                out += "      <arg name=\"\(escape(a.name))\" type=\"\(escape(a.signature))\"/>\n"
            }
            out += "    </signal>\n"
        }
        for p in i.properties {
            let head = "    <property name=\"\(escape(p.name))\" type=\"\(escape(p.signature))\" access=\"\(p.access.rawValue)\""
            if p.emitsChanged == .true {
                out += head + "/>\n"
            } else {
                out += head + ">\n"
                out += "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(p.emitsChanged.rawValue)\"/>\n"
                out += "    </property>\n"
            }
        }
        out += "  </interface>\n"
        return out
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
