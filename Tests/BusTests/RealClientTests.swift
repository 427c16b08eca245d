import DBusCore
import Foundation
import Testing

/// The same service, called by the reference clients: dbus-send (libdbus), gdbus (GLib) and
/// busctl (sd-bus). gdbus (Debian: libglib2.0-bin) and busctl (systemd) are skipped, visibly,
/// where not installed.
@Suite("D-Bus service through dbus-send, gdbus and busctl", .serialized)
struct RealClientTests {
    func dbusSend(_ bus: PrivateBus, _ args: [String], asNobody: Bool = false) async throws -> ToolResult {
        try await runTool(["/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply", "--reply-timeout=5000",
                           "--dest=\(TestAPI.busName)", TestAPI.path] + args, asNobody: asNobody)
    }

    @Test("dbus-send: calls, properties, named errors, InvalidArgs, caller uid")
    func dbusSendCalls() async throws {
        try await withTestService { bus, _, _ in
            let add = try await dbusSend(bus, ["\(TestAPI.interface).Add", "int32:2", "int32:3"])
            #expect(add.status == 0)
            #expect(add.stdout.contains("int32 5"))

            let name = try await dbusSend(bus, ["org.freedesktop.DBus.Properties.Get",
                                                "string:\(TestAPI.interface)", "string:Name"])
            #expect(name.stdout.contains("variant") && name.stdout.contains("string \"initial\""))

            let fail = try await dbusSend(bus, ["\(TestAPI.interface).Fail", "string:org.gaend.Error.Busy", "string:still matching"])
            #expect(fail.status != 0)
            #expect(fail.stderr.contains("Error org.gaend.Error.Busy: still matching"))

            let wrong = try await dbusSend(bus, ["\(TestAPI.interface).Add", "string:2", "string:3"])
            #expect(wrong.stderr.contains("org.freedesktop.DBus.Error.InvalidArgs"))

            let me = try await dbusSend(bus, ["\(TestAPI.interface).WhoAmI"])
            #expect(me.stdout.contains("uint32 \(getuid())"))
        }
    }

    @Test("a caller of another uid is seen as that uid", .enabled(if: getuid() == 0, "needs root to run a client as nobody"))
    func otherUID() async throws {
        try await withTestService { bus, _, _ in
            let nobody = try await dbusSend(bus, ["\(TestAPI.interface).WhoAmI"], asNobody: true)
            #expect(nobody.stdout.contains("uint32 65534"), "\(nobody.stderr)")
        }
    }

    @Test("gdbus: call, introspect parses the generated XML, property Set", .enabled(if: haveTool("gdbus")))
    func gdbus() async throws {
        try await withTestService { bus, _, _ in
            let common = ["gdbus", "call", "--address", bus.address, "--dest", TestAPI.busName,
                          "--object-path", TestAPI.path, "--timeout", "5", "--method"]
            let add = try await runTool(common + ["\(TestAPI.interface).Add", "20", "22"])
            #expect(add.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "(42,)", "\(add.stderr)")
            let fail = try await runTool(common + ["\(TestAPI.interface).Fail", "org.gaend.Error.RateLimited", "later"])
            #expect(fail.stderr.contains("org.gaend.Error.RateLimited"))
            let set = try await runTool(common + ["org.freedesktop.DBus.Properties.Set", TestAPI.interface, "Name", "<'from-gdbus'>"])
            #expect(set.status == 0, "\(set.stderr)")
            let get = try await runTool(common + ["org.freedesktop.DBus.Properties.Get", TestAPI.interface, "Name"])
            #expect(get.stdout.contains("'from-gdbus'"))
            let intro = try await runTool(["gdbus", "introspect", "--address", bus.address, "--dest", TestAPI.busName,
                                           "--object-path", TestAPI.path])
            #expect(intro.status == 0, "\(intro.stderr)")
            #expect(intro.stdout.contains("interface \(TestAPI.interface)"))
            #expect(intro.stdout.contains("Add(in  i a,"))
            #expect(intro.stdout.contains("readwrite s Name"))
            #expect(intro.stdout.contains("Ping(s text,"))
        }
    }

    @Test("busctl: call, tree, get-property, InvalidArgs", .enabled(if: haveTool("busctl")))
    func busctl() async throws {
        try await withTestService { bus, _, _ in
            let base = ["busctl", "--address=\(bus.address)", "--timeout=5"]
            let add = try await runTool(base + ["call", TestAPI.busName, TestAPI.path, TestAPI.interface, "Add", "ii", "7", "8"])
            #expect(add.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "i 15", "\(add.stderr)")
            // (busctl does not negotiate fd passing on an explicit --address; fds are tested
            // with our client in ServiceTests.)
            let prop = try await runTool(base + ["get-property", TestAPI.busName, TestAPI.path, TestAPI.interface, "Version"])
            #expect(prop.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "u 2", "\(prop.stderr)")
            let tree = try await runTool(base + ["tree", TestAPI.busName])
            #expect(tree.stdout.contains("/org/gaend/Test"), "\(tree.stderr)")
            let wrong = try await runTool(base + ["call", TestAPI.busName, TestAPI.path, TestAPI.interface, "Add", "s", "x"])
            #expect(wrong.status != 0)
            #expect(wrong.stderr.contains("takes arguments of signature 'ii'"), "\(wrong.stderr)")
        }
    }
}
