#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Where the app half keeps its state, and the node name it reports, from the gaend instance it
/// serves (`--name hci0` of `org.gaend.hci0`).
public enum AppPaths {
    public static let defaultStateRoot = "/var/lib/gaend-app"
    /// Moves the default states' root (tests: a `gaenctl status` of a test node must not read the
    /// app state a real board left on the machine).
    public static let stateRootVariable = "GAEND_APP_STATE_ROOT"

    /// Where the default state directories are: $GAEND_APP_STATE_ROOT, else /var/lib/gaend-app.
    public static var stateRoot: String {
        if let root = ProcessInfo.processInfo.environment[stateRootVariable], !root.isEmpty { return root }
        return defaultStateRoot
    }

    /// The app's state directory: `explicit`, else systemd's STATE_DIRECTORY, else
    /// STATE_ROOT/NAME (NAME: the instance, e.g. hci0, or "default"; STATE_ROOT: `stateRoot`).
    public static func stateDirectory(_ explicit: String?, instance: String?,
                                      environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit { return explicit }
        if let dir = environment["STATE_DIRECTORY"], !dir.isEmpty {
            return String(dir.split(separator: ":").first ?? Substring(dir))
        }
        return stateRoot + "/" + instanceName(instance)
    }

    /// `hci0` of `hci0` or `org.gaend.hci0`; "default" for the default instance.
    public static func instanceName(_ name: String?) -> String {
        guard let name, !name.isEmpty, name != "org.gaend" else { return "default" }
        return name.hasPrefix("org.gaend.") ? String(name.dropFirst("org.gaend.".count)) : name
    }

    /// A trial server's base URL as the commands take it.
    public static func validateServer(_ server: String) throws(AppError) {
        guard server.hasPrefix("http://") || server.hasPrefix("https://"), server.count <= 512,
              !server.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false }) else {
            throw .configuration("'\(server)': expected an http:// or https:// URL")
        }
    }
}
