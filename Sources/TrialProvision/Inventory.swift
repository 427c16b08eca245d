import BoardNames
import Foundation
import YAMLReader

/// A trial's inventory (docs/provision.md): the boards (names, sites, positions, consent), the
/// server, the time zone, the CA and where alerts go. `gaenctl trial provision` writes every
/// board's and the server's configuration from it.
public struct Inventory: Sendable, Equatable {
    public struct Server: Sendable, Equatable {
        /// nginx's server_name.
        public var name: String
        /// The site root the boards use (uploads to URL/inbox/, packages from URL/keys, days to URL/collect/).
        public var url: String
        /// The trial's private CA (a PEM file, relative to the inventory), given to every board's
        /// app and collection as --cacert; nil: the system's CA store.
        public var ca: String?
        /// The publisher's signing key's public half, copied to the boards as their trust.
        public var trustKey: String?
        public var tlsCertificate = "/etc/ssl/certs/gaend-trial.pem"
        public var tlsKey = "/etc/ssl/private/gaend-trial.key"
        public var country = "DE"
        public var region: String?
        public var keyID = "TRIAL"
        public var keyVersion = 1
        /// A trial of a few boards publishes every key (the CWA server's 140 would hold them back).
        public var minKeys = 1
        public var appConfig = "/etc/gaend-trial/app-config.json"
    }

    public struct Alerting: Sendable, Equatable {
        /// Alertmanager's webhook receiver (a chat bridge, a pager).
        public var webhook: String
        /// Where Prometheus finds Alertmanager.
        public var alertmanager = "localhost:9093"
        public var groupWait = "30s"
        public var groupInterval = "5m"
        public var repeatInterval = "4h"
    }

    public struct Board: Sendable, Equatable {
        public var name: String
        public var site: String
        /// Where on the site (free text: "front door, 1.2 m high"), for the placement plan.
        public var position: String
        /// The trial's consent setting for this board's keys: true uploads them.
        public var consent: Bool
        /// The participant's consent to collect the board's keys and app outcomes at the end of
        /// the trial (`gaenctl collect --outcomes`); default no: nothing leaves the board.
        public var outcomesConsent = false
        /// Where it stood (metres in the site's plane) and when: the placement plan's rows.
        public var placements: [Placement] = []
        /// Its address for Prometheus (node_exporter); default: the name.
        public var host: String
        public var metricsPort = 9100
        public var controller = "hci0"
    }

    /// A board at one place for a while: `from` (inclusive) to `to` (exclusive), Unix seconds,
    /// nil for the trial's start or end.
    public struct Placement: Sendable, Equatable {
        public var from: Double?
        public var to: Double?
        public var x: Double
        public var y: Double
    }

    public var trial: String
    /// The sites' zone, for the people on site; boards, the server and reports keep UTC.
    public var timeZone: String
    /// A placement plan document (a drawing, a PDF), named in the plan file.
    public var placementPlan: String?
    public var scrapeInterval = "30s"
    public var server: Server
    public var alerting: Alerting
    public var boards: [Board]
}

public struct InventoryError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ path: String, _ node: YAMLNode?, _ message: String) {
        description = node.map { "\(path): line \($0.mark.line): \(message)" } ?? "\(path): \(message)"
    }
}

extension Inventory {
    public static func read(path: String) throws -> Inventory {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw InventoryError(path, nil, "cannot read the inventory (\((error as NSError).localizedDescription))")
        }
        guard data.count <= 4 << 20, let text = String(data: data, encoding: .utf8) else {
            throw InventoryError(path, nil, "not a UTF-8 text file under 4 MiB")
        }
        return try parse(text, path: path)
    }

    /// Reads the inventory's YAML. Unknown keys are refused with their line (a misspelt key would
    /// otherwise silently take its default), as are duplicate board names and targets.
    public static func parse(_ text: String, path: String = "inventory") throws -> Inventory {
        let root: YAMLNode?
        do { root = try YAML.compose(text) } catch { throw InventoryError(path, nil, "\(error)") }
        guard let root, case .mapping(let top) = root else { throw InventoryError(path, root, "expected a mapping (trial:, time_zone:, server:, alerting:, boards:)") }
        let r = Reader(path: path)

        try r.keys(top, ["trial", "time_zone", "placement_plan", "scrape_interval", "server", "alerting", "defaults", "boards"], root)
        let trial = try r.string(top, "trial", root)
        guard BoardName.isValid(trial) else { throw InventoryError(path, top["trial"], "trial: \(BoardName.rule) (it labels every alert)") }
        let zone = try r.string(top, "time_zone", root)
        guard TimeZone(identifier: zone) != nil else { throw InventoryError(path, top["time_zone"], "time_zone: '\(zone)' is not an IANA time zone (Europe/Berlin, UTC)") }

        guard let serverNode = top["server"], case .mapping(let s) = serverNode else { throw InventoryError(path, top["server"] ?? root, "server: expected a mapping (name:, url:, ...)") }
        try r.keys(s, ["name", "url", "ca", "trust_key", "tls_certificate", "tls_key", "country", "region", "key_id", "key_version", "min_keys", "app_config"], serverNode)
        let url = try r.string(s, "url", serverNode)
        try r.url(url, s["url"], "server.url")
        var server = Server(name: try r.string(s, "name", serverNode), url: url.hasSuffix("/") ? String(url.dropLast()) : url)
        guard server.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }), !server.name.isEmpty else {
            throw InventoryError(path, s["name"], "server.name: a host name (letters, digits, '.', '-')")
        }
        server.ca = try r.optionalString(s, "ca")
        server.trustKey = try r.optionalString(s, "trust_key")
        server.tlsCertificate = try r.optionalString(s, "tls_certificate") ?? server.tlsCertificate
        server.tlsKey = try r.optionalString(s, "tls_key") ?? server.tlsKey
        server.country = try r.optionalString(s, "country") ?? server.country
        server.region = try r.optionalString(s, "region")
        server.keyID = try r.optionalString(s, "key_id") ?? server.keyID
        for (key, code) in [("country", server.country), ("region", server.region ?? server.country), ("key_id", server.keyID)] {
            guard !code.isEmpty, code.count <= 32, code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw InventoryError(path, s[key], "server.\(key): letters, digits, '-' and '_' (at most 32)")
            }
        }
        server.keyVersion = try r.optionalInt(s, "key_version", 1...999) ?? server.keyVersion
        server.minKeys = try r.optionalInt(s, "min_keys", 1...100_000) ?? server.minKeys
        server.appConfig = try r.optionalString(s, "app_config") ?? server.appConfig
        for (key, value) in [("tls_certificate", server.tlsCertificate), ("tls_key", server.tlsKey), ("app_config", server.appConfig)] {
            guard value.hasPrefix("/"), !value.contains(where: { $0 == " " || $0 == ";" || $0 == "\n" || $0 == "\"" }) else {
                throw InventoryError(path, s[key], "server.\(key): an absolute path on the server without spaces, quotes or ';'")
            }
        }

        guard let alertNode = top["alerting"], case .mapping(let a) = alertNode else { throw InventoryError(path, top["alerting"] ?? root, "alerting: expected a mapping (webhook:, ...)") }
        try r.keys(a, ["webhook", "alertmanager", "group_wait", "group_interval", "repeat_interval"], alertNode)
        var alerting = Alerting(webhook: try r.string(a, "webhook", alertNode))
        try r.url(alerting.webhook, a["webhook"], "alerting.webhook")
        alerting.alertmanager = try r.optionalString(a, "alertmanager") ?? alerting.alertmanager
        try r.hostPort(alerting.alertmanager, a["alertmanager"], "alerting.alertmanager")
        alerting.groupWait = try r.duration(a, "group_wait") ?? alerting.groupWait
        alerting.groupInterval = try r.duration(a, "group_interval") ?? alerting.groupInterval
        alerting.repeatInterval = try r.duration(a, "repeat_interval") ?? alerting.repeatInterval

        // Defaults for every board, each overridable per board.
        var defaults: YAMLMapping?
        if let d = top["defaults"] {
            guard case .mapping(let m) = d else { throw InventoryError(path, d, "defaults: expected a mapping (consent:, controller:, metrics_port:, site:)") }
            try r.keys(m, ["consent", "outcomes_consent", "controller", "metrics_port", "site"], d)
            defaults = m
        }
        guard let boardsNode = top["boards"], case .sequence(let list) = boardsNode, !list.items.isEmpty else {
            throw InventoryError(path, top["boards"] ?? root, "boards: expected a list of boards (- name: board01 ...)")
        }
        var boards: [Board] = []
        var names = Set<String>(), targets = Set<String>()
        for item in list.items {
            guard case .mapping(let b) = item else { throw InventoryError(path, item, "a board: expected a mapping (name:, site:, position:, consent:)") }
            try r.keys(b, ["name", "site", "position", "consent", "outcomes_consent", "x", "y", "placements", "host", "metrics_port", "controller"], item)
            let name = try r.string(b, "name", item)
            if let problem = BoardName.problem(name) { throw InventoryError(path, b["name"], "name: \(problem)") }
            guard names.insert(name).inserted else { throw InventoryError(path, b["name"], "board \(name) is listed twice") }
            func value(_ key: String) -> YAMLNode? { b[key] ?? defaults?[key] }
            guard let siteNode = value("site"), let site = siteNode.string, !site.isEmpty else { throw InventoryError(path, item, "board \(name): site: missing") }
            guard !site.contains(where: { $0.isNewline || $0 == "\"" || $0 == "\\" }), site.count <= 128 else {
                throw InventoryError(path, siteNode, "board \(name): site: one line, no quotes or backslashes, at most 128 characters")
            }
            guard let consentNode = value("consent"), let consent = consentNode.bool else {
                throw InventoryError(path, value("consent") ?? item, "board \(name): consent: true or false (the trial's consent for this board's keys; no default)")
            }
            var board = Board(name: name, site: site, position: try r.optionalString(b, "position") ?? "", consent: consent,
                              host: try r.optionalString(b, "host") ?? name)
            if let o = value("outcomes_consent") {
                guard let consent = o.bool else { throw InventoryError(path, o, "board \(name): outcomes_consent: true or false (consent to collect its keys and app outcomes)") }
                board.outcomesConsent = consent
            }
            board.placements = try r.placements(b, item, board: name)
            guard !board.position.contains(where: \.isNewline) else { throw InventoryError(path, b["position"], "board \(name): position: one line") }
            try r.hostPort(board.host + ":1", b["host"], "board \(name): host")
            if let p = value("metrics_port") {
                guard let port = p.int, (1...65_535).contains(port) else { throw InventoryError(path, p, "board \(name): metrics_port: 1...65535") }
                board.metricsPort = port
            }
            if let c = value("controller") {
                guard let controller = c.string, Inventory.isControllerName(controller) else {
                    throw InventoryError(path, c, "board \(name): controller: a kernel controller name hci0...hci65535 as the kernel spells it (the board's units are gaend@hciN), got '\(c.string ?? "?")'")
                }
                board.controller = controller
            }
            guard targets.insert("\(board.host):\(board.metricsPort)").inserted else {
                throw InventoryError(path, item, "board \(name): \(board.host):\(board.metricsPort) is another board's metrics target too")
            }
            boards.append(board)
        }
        var inventory = Inventory(trial: trial, timeZone: zone, placementPlan: try r.optionalString(top, "placement_plan"),
                                  server: server, alerting: alerting, boards: boards)
        inventory.scrapeInterval = try r.duration(top, "scrape_interval") ?? inventory.scrapeInterval
        return inventory
    }
}

extension Inventory {
    /// A board's controller: a kernel controller gaend's config takes (`controllers:`, HCIHost's
    /// ControllerAddress: hci0...hci65535), spelt as the kernel names it, because it is also the
    /// instance of the board's units: gaend would read hci01 or hci:1 as hci1, but udev starts
    /// gaend@hci1, and gaend-app@hci01 would be another instance with another state directory.
    public static func isControllerName(_ s: String) -> Bool {
        guard s.hasPrefix("hci"), let n = Int(s.dropFirst(3)), (0...65_535).contains(n) else { return false }
        return s == "hci\(n)"
    }

    /// `YYYY-MM-DDTHH:MM[:SS]Z` as Unix seconds (the inventory's times are UTC, as the boards').
    static func utcTime(_ s: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        if let d = f.date(from: s) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate, .withTimeZone]
        return f.date(from: s)?.timeIntervalSince1970
    }
}

/// The typed reads of one inventory file, each error naming its line.
private struct Reader {
    var path: String

    func keys(_ m: YAMLMapping, _ known: [String], _ node: YAMLNode) throws {
        for e in m.entries {
            guard let k = e.key.string, known.contains(k) else {
                throw InventoryError(path, e.key, "unknown key '\(e.key.string ?? "?")' (known here: \(known.joined(separator: ", ")))")
            }
        }
    }

    func string(_ m: YAMLMapping, _ key: String, _ node: YAMLNode) throws -> String {
        guard let v = m[key] else { throw InventoryError(path, node, "\(key): missing") }
        guard let s = v.string, !s.isEmpty, !v.isNull else { throw InventoryError(path, v, "\(key): expected a text") }
        return s
    }

    func optionalString(_ m: YAMLMapping, _ key: String) throws -> String? {
        guard let v = m[key], !v.isNull else { return nil }
        guard let s = v.string, !s.isEmpty else { throw InventoryError(path, v, "\(key): expected a text") }
        return s
    }

    /// `x:`/`y:` (the whole trial) or `placements:` (a list of `{from:, to:, x:, y:}`), metres
    /// in the site's plane, times UTC: the board's rows of the placement plan.
    func placements(_ b: YAMLMapping, _ item: YAMLNode, board: String) throws -> [Inventory.Placement] {
        func metres(_ m: YAMLMapping, _ key: String, _ node: YAMLNode) throws -> Double {
            guard let v = m[key] else { throw InventoryError(path, node, "board \(board): \(key): missing (metres; x and y go together)") }
            guard let d = v.double ?? v.int.map(Double.init), d.isFinite, abs(d) <= 1e7 else { throw InventoryError(path, v, "board \(board): \(key): metres (a number)") }
            return d
        }
        if let list = b["placements"] {
            guard b["x"] == nil, b["y"] == nil else { throw InventoryError(path, list, "board \(board): give x/y or placements, not both") }
            guard case .sequence(let seq) = list else { throw InventoryError(path, list, "board \(board): placements: a list of {from:, to:, x:, y:}") }
            var out: [Inventory.Placement] = []
            for p in seq.items {
                guard case .mapping(let m) = p else { throw InventoryError(path, p, "board \(board): a placement: {from:, to:, x:, y:}") }
                try keys(m, ["from", "to", "x", "y"], p)
                func time(_ key: String) throws -> Double? {
                    guard let v = m[key], !v.isNull else { return nil }
                    guard let s = v.string, let t = Inventory.utcTime(s) else {
                        throw InventoryError(path, v, "board \(board): \(key): a UTC time such as 2026-11-20T08:00:00Z")
                    }
                    return t
                }
                let placement = Inventory.Placement(from: try time("from"), to: try time("to"), x: try metres(m, "x", p), y: try metres(m, "y", p))
                if let f = placement.from, let t = placement.to, t <= f { throw InventoryError(path, m["to"], "board \(board): to: after from") }
                out.append(placement)
            }
            return out
        }
        guard b["x"] != nil || b["y"] != nil else { return [] }
        return [Inventory.Placement(from: nil, to: nil, x: try metres(b, "x", item), y: try metres(b, "y", item))]
    }

    func optionalInt(_ m: YAMLMapping, _ key: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let v = m[key], !v.isNull else { return nil }
        guard let i = v.int, range.contains(i) else { throw InventoryError(path, v, "\(key): a whole number in \(range.lowerBound)...\(range.upperBound)") }
        return i
    }

    /// Prometheus' and Alertmanager's durations as both accept them: 30s, 5m, 4h, 1d.
    func duration(_ m: YAMLMapping, _ key: String) throws -> String? {
        guard let s = try optionalString(m, key) else { return nil }
        guard let unit = s.last, "smhd".contains(unit), let n = Int(s.dropLast()), n > 0, !s.hasPrefix("+") else {
            throw InventoryError(path, m[key], "\(key): a duration such as 30s, 5m, 4h")
        }
        return s
    }

    func url(_ s: String, _ node: YAMLNode?, _ what: String) throws {
        guard let u = URLComponents(string: s), ["http", "https"].contains(u.scheme ?? ""), u.host.map({ !$0.isEmpty }) == true,
              u.user == nil, u.password == nil, !s.contains(where: { $0 == " " || $0 == "\"" || $0.isNewline }) else {
            throw InventoryError(path, node, "\(what): an http:// or https:// URL without credentials, got '\(s)'")
        }
    }

    func hostPort(_ s: String, _ node: YAMLNode?, _ what: String) throws {
        guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (1...65_535).contains(port),
              !s[..<colon].isEmpty, s[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "[" || $0 == "]" || $0 == ":") }) else {
            throw InventoryError(path, node, "\(what): a host name or address (and :port where asked), got '\(s)'")
        }
    }
}
