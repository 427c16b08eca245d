import Foundation
import TrialKit

/// One file `gaenctl trial provision` writes: its path under the output directory, its bytes and
/// its mode (passwords 0600).
public struct ProvisionedFile: Sendable, Equatable {
    public var path: String
    public var contents: String
    public var mode: Int

    public init(_ path: String, _ contents: String, mode: Int = 0o644) {
        self.path = path
        self.contents = contents
        self.mode = mode
    }
}

/// The shipped server files the provisioner adapts (deploy/ in the repository, installed under
/// share/gaend/deploy): one source for the nginx site and the alert rules, so a provisioned
/// server runs what the tests ran.
public struct DeployTemplates: Sendable {
    public var nginxSite: String
    /// locations/*.conf by file name.
    public var nginxLocations: [String: String]
    public var alertRules: String

    public init(nginxSite: String, nginxLocations: [String: String], alertRules: String) {
        self.nginxSite = nginxSite
        self.nginxLocations = nginxLocations
        self.alertRules = alertRules
    }

    /// Reads `DIR/server/nginx/gaend-trial.conf`, `DIR/server/nginx/locations/*.conf` and
    /// `DIR/prometheus/gaend-alerts.yml`.
    public static func load(deployDirectory dir: String) throws -> DeployTemplates {
        let base = URL(fileURLWithPath: dir)
        func read(_ rel: String) throws -> String {
            do { return try String(contentsOf: base.appendingPathComponent(rel), encoding: .utf8) } catch {
                throw ProvisionError("\(base.appendingPathComponent(rel).path): cannot read the shipped file (--deploy names the deploy/ directory)")
            }
        }
        let site = try read("server/nginx/gaend-trial.conf")
        let locationsDir = base.appendingPathComponent("server/nginx/locations")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: locationsDir.path)) ?? []).filter { $0.hasSuffix(".conf") }
        guard !names.isEmpty else { throw ProvisionError("\(locationsDir.path): no locations/*.conf") }
        var locations: [String: String] = [:]
        for n in names { locations[n] = try read("server/nginx/locations/\(n)") }
        return DeployTemplates(nginxSite: site, nginxLocations: locations, alertRules: try read("prometheus/gaend-alerts.yml"))
    }
}

public struct ProvisionError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What an earlier run left in the output directory and a re-run keeps: each board's password
/// and the server's htpasswd lines (a hash is kept while it still matches its password).
public struct ExistingSecrets: Sendable, Equatable {
    public var passwords: [String: String] = [:]
    public var htpasswd: [String: String] = [:]

    public init(passwords: [String: String] = [:], htpasswd: [String: String] = [:]) {
        self.passwords = passwords
        self.htpasswd = htpasswd
    }

    public static func read(outputDirectory dir: String, boards: [String]) -> ExistingSecrets {
        var s = ExistingSecrets()
        for b in boards {
            if let p = try? String(contentsOfFile: "\(dir)/\(Provisioner.boardDirectory(b))/app-password", encoding: .utf8) {
                let line = p.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
                if !line.isEmpty { s.passwords[b] = line }
            }
        }
        if let text = try? String(contentsOfFile: "\(dir)/\(Provisioner.htpasswdPath)", encoding: .utf8) {
            for line in text.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                s.htpasswd[String(line[..<colon])] = String(line[line.index(after: colon)...])
            }
        }
        return s
    }
}

/// New secrets: board passwords and htpasswd salts (random; tests may give fixed ones).
public protocol SecretSource {
    mutating func password() -> String
    mutating func salt() -> String
}

public struct RandomSecrets: SecretSource {
    public init() {}
    private var rng = SystemRandomNumberGenerator()
    private static let alphanumeric = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    private static let saltCharacters = alphanumeric + [".", "/"]

    /// 24 letters and digits: 142 bits, and nothing a shell, an env file or basic auth quotes.
    public mutating func password() -> String { String((0..<24).map { _ in Self.alphanumeric.randomElement(using: &rng)! }) }
    public mutating func salt() -> String { String((0..<8).map { _ in Self.saltCharacters.randomElement(using: &rng)! }) }
}

/// htpasswd's apr1 (MD5-based, what nginx's auth_basic reads) from `openssl passwd`, the
/// password on standard input (never in a process's arguments).
public protocol PasswordHasher {
    func apr1(password: String, salt: String) throws -> String
}

public struct OpenSSLPasswordHasher: PasswordHasher {
    public var openssl: String

    public init(openssl: String = "/usr/bin/openssl") { self.openssl = openssl }

    public func apr1(password: String, salt: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: openssl)
        p.arguments = ["passwd", "-apr1", "-salt", salt, "-stdin"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = errors
        do { try p.run() } catch { throw ProvisionError("\(openssl): cannot run (\(error)); install openssl") }
        input.fileHandleForWriting.write(Data((password + "\n").utf8))
        try? input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let hash = String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard p.terminationStatus == 0, hash.hasPrefix("$apr1$\(salt)$") else {
            throw ProvisionError("openssl passwd -apr1 failed: \(String(decoding: err, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return hash
    }
}

/// The configuration of a whole trial from its inventory: pure but for the hasher (a function
/// of the inventory, the shipped templates and the secrets kept from an earlier run).
public enum Provisioner {
    public static let htpasswdPath = "server/nginx/boards.htpasswd"
    public static func boardDirectory(_ board: String) -> String { "boards/\(board)" }

    /// Files the provisioner reads beside the inventory (the CA, the trust key), by their inventory path.
    public struct Attachments: Sendable {
        public var ca: String?
        public var trustKey: String?
        public init(ca: String? = nil, trustKey: String? = nil) {
            self.ca = ca
            self.trustKey = trustKey
        }

        public static func read(_ inventory: Inventory, inventoryPath: String) throws -> Attachments {
            let dir = URL(fileURLWithPath: inventoryPath).deletingLastPathComponent()
            func pem(_ rel: String?, _ what: String, _ marker: String) throws -> String? {
                guard let rel else { return nil }
                let url = rel.hasPrefix("/") ? URL(fileURLWithPath: rel) : dir.appendingPathComponent(rel)
                guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw ProvisionError("\(what) \(url.path): cannot read it") }
                guard text.contains("-----BEGIN \(marker)") else { throw ProvisionError("\(what) \(url.path): not a PEM \(marker.lowercased())") }
                return text.hasSuffix("\n") ? text : text + "\n"
            }
            return Attachments(ca: try pem(inventory.server.ca, "server.ca", "CERTIFICATE"),
                               trustKey: try pem(inventory.server.trustKey, "server.trust_key", "PUBLIC KEY"))
        }
    }

    public static func plan(_ inv: Inventory, inventoryName: String, templates: DeployTemplates, attachments: Attachments,
                            existing: ExistingSecrets, secrets: inout some SecretSource, hasher: some PasswordHasher) throws -> [ProvisionedFile] {
        let stamp = "Written by `gaenctl trial provision` from \(inventoryName) (trial \(inv.trial)): edit the inventory and provision again, not this file."
        var files: [ProvisionedFile] = []
        var htpasswd: [String] = []
        let caPath = "/etc/gaend/trial-ca.pem", trustPath = "/etc/gaend/trial-key.pem"

        for b in inv.boards {
            let dir = boardDirectory(b.name)
            files.append(ProvisionedFile("\(dir)/gaend.conf", """
                # \(stamp)
                # /etc/gaend/gaend.conf of board \(b.name) (site \(b.site)). On the board, `gaenctl calibrate
                # --config /etc/gaend/gaend.conf --apply` adds its calibration block in place.
                controllers: [\(b.controller)]
                research:
                  # Raw sightings and markers for collection (gaend-collect@.timer), labelled with
                  # this board's name, which is also its user on the trial server.
                  enabled: true
                  node: \(yamlQuoted(b.name))
                  site: \(yamlQuoted(b.site))

                """))
            files.append(ProvisionedFile("\(dir)/app.env", """
                # \(stamp)
                # /etc/gaend/app.env of board \(b.name): read by gaend-app@\(b.controller).service, gaend-collect@\(b.controller).service
                # and gaend-outcomes@\(b.controller).service.
                SERVER=\(inv.server.url)
                LAYOUT=--country \(inv.server.country)
                TRUST=--trust \(inv.server.keyID):\(inv.server.keyVersion)=\(trustPath)
                BOARD=\(b.name)
                CONSENT=\(b.consent ? "yes" : "no")
                OUTCOMES_CONSENT=\(b.outcomesConsent ? "yes" : "no")
                HTTP_OPTIONS=\(attachments.ca == nil ? "" : "--cacert \(caPath)")
                # Empty for a trial; a rehearsal puts --trial-clock FILE here (docs/runbook.md, "Rehearsal under systemd").
                TRIAL_OPTIONS=
                APP_OPTIONS=

                """))
            // Kept once generated: the board and the server must go on agreeing on it.
            let password = existing.passwords[b.name] ?? secrets.password()
            files.append(ProvisionedFile("\(dir)/app-password", password + "\n", mode: 0o600))
            if let ca = attachments.ca { files.append(ProvisionedFile("\(dir)/trial-ca.pem", ca)) }
            if let key = attachments.trustKey { files.append(ProvisionedFile("\(dir)/trial-key.pem", key)) }
            files.append(ProvisionedFile("\(dir)/README.md", boardReadme(b, trial: inv.trial, stamp: stamp, ca: attachments.ca != nil, trustKey: attachments.trustKey != nil)))
            htpasswd.append("\(b.name):\(try hash(password, kept: existing.htpasswd[b.name], secrets: &secrets, hasher: hasher))")
        }

        // The server: nginx's site (the shipped one, named and with its certificate), the boards' users.
        var site = try replacingLine(in: templates.nginxSite, starting: "server_name ", with: "server_name \(inv.server.name);")
        site = try replacingLine(in: site, starting: "ssl_certificate ", with: "ssl_certificate \(inv.server.tlsCertificate);")
        site = try replacingLine(in: site, starting: "ssl_certificate_key ", with: "ssl_certificate_key \(inv.server.tlsKey);")
        files.append(ProvisionedFile("server/nginx/gaend-trial.conf", "# \(stamp)\n" + site))
        for (name, text) in templates.nginxLocations.sorted(by: { $0.key < $1.key }) {
            files.append(ProvisionedFile("server/nginx/locations/\(name)", text))
        }
        // nginx's workers (www-data) read it: 0640, group www-data when installed.
        files.append(ProvisionedFile(htpasswdPath, htpasswd.joined(separator: "\n") + "\n", mode: 0o640))

        let region = inv.server.region.map { " --region \($0)" } ?? ""
        files.append(ProvisionedFile("server/publish.env", """
            # \(stamp)
            # /etc/gaend-trial/publish.env: read by gaend-publish.service (docs/key-server.md).
            KEY_ID=\(inv.server.keyID)
            KEY_VERSION=\(inv.server.keyVersion)
            PUBLISH_OPTIONS=--country \(inv.server.country)\(region) --min-keys \(inv.server.minKeys) --app-config \(inv.server.appConfig)
            # Empty for a trial; a rehearsal puts --trial-clock FILE here (docs/runbook.md, "Rehearsal under systemd").
            TRIAL_OPTIONS=

            """))

        files.append(ProvisionedFile("server/prometheus/prometheus.yml", """
            # \(stamp)
            # /etc/prometheus/prometheus.yml with gaend-alerts.yml and gaend-boards.json beside it
            # (relative paths are the config file's directory's).
            global:
              scrape_interval: \(inv.scrapeInterval)
              evaluation_interval: \(inv.scrapeInterval)
              external_labels:
                trial: \(yamlQuoted(inv.trial))
            alerting:
              alertmanagers:
                - static_configs:
                    - targets: [\(yamlQuoted(inv.alerting.alertmanager))]
            rule_files:
              - gaend-alerts.yml
            scrape_configs:
              # Every board's node_exporter (gaend's metrics come through its textfile collector).
              # A target per provisioned board, so a board that never answered has up == 0 and the
              # alerts know which boards should report.
              - job_name: gaend-boards
                file_sd_configs:
                  - files: [gaend-boards.json]

            """))
        files.append(ProvisionedFile("server/prometheus/gaend-alerts.yml", templates.alertRules))
        // Only `board` as a target label: node and site come with the board's own metrics, and
        // a target label of the same name would rename theirs (exported_node).
        let targets = inv.boards.map { b in
            "  {\"targets\": [\(jsonQuoted("\(b.host):\(b.metricsPort)"))], \"labels\": {\"board\": \(jsonQuoted(b.name))}}"
        }
        files.append(ProvisionedFile("server/prometheus/gaend-boards.json", "[\n" + targets.joined(separator: ",\n") + "\n]\n"))

        files.append(ProvisionedFile("server/alertmanager/alertmanager.yml", """
            # \(stamp)
            # /etc/prometheus/alertmanager.yml (Debian's prometheus-alertmanager). Every alert of the
            # trial goes to its webhook, grouped per alert and board, resolved ones too.
            route:
              receiver: trial-\(inv.trial)
              group_by: [alertname, board, instance]
              group_wait: \(inv.alerting.groupWait)
              group_interval: \(inv.alerting.groupInterval)
              repeat_interval: \(inv.alerting.repeatInterval)
            receivers:
              - name: trial-\(inv.trial)
                webhook_configs:
                  - url: \(yamlQuoted(inv.alerting.webhook))
                    send_resolved: true

            """))

        // The trial's placement plan (TrialKit's PlacementPlan: its one reader and writer): a row
        // per board and placement, or one without coordinates for a board not placed.
        var rows: [PlacementPlan.Row] = []
        for b in inv.boards {
            let base = PlacementPlan.Row(board: b.name, site: b.site, position: b.position, metricsTarget: "\(b.host):\(b.metricsPort)",
                                         controller: b.controller, consent: b.consent, outcomesConsent: b.outcomesConsent)
            if b.placements.isEmpty { rows.append(base) }
            for p in b.placements {
                var row = base
                (row.from, row.to, row.x, row.y) = (p.from, p.to, p.x, p.y)
                rows.append(row)
            }
        }
        let plan = PlacementPlan.csv(rows)
        files.append(ProvisionedFile("placement.csv", plan))
        files.append(ProvisionedFile("README.md", readme(inv, stamp: stamp, ca: attachments.ca != nil, trustKey: attachments.trustKey != nil)))
        return files
    }

    /// The kept hash while it is still this password's (re-running changes nothing), else a new one.
    static func hash(_ password: String, kept: String?, secrets: inout some SecretSource, hasher: some PasswordHasher) throws -> String {
        if let kept, kept.hasPrefix("$apr1$") {
            let parts = kept.split(separator: "$", omittingEmptySubsequences: false)
            if parts.count == 4, try hasher.apr1(password: password, salt: String(parts[2])) == kept { return kept }
        }
        return try hasher.apr1(password: password, salt: secrets.salt())
    }

    static func replacingLine(in text: String, starting prefix: String, with replacement: String) throws -> String {
        var found = false
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix(prefix) else { return String(line) }
            found = true
            return String(line.prefix(line.count - trimmed.count)) + replacement
        }
        guard found else { throw ProvisionError("the shipped gaend-trial.conf has no '\(prefix)...' line to set") }
        return lines.joined(separator: "\n")
    }

    static func yamlQuoted(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func jsonQuoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// The files a board installs under /etc/gaend (its password apart: 0600).
    static func boardFiles(ca: Bool, trustKey: Bool) -> String {
        var files = "gaend.conf app.env"
        if ca { files += " trial-ca.pem" }
        if trustKey { files += " trial-key.pem" }
        return files
    }

    /// The units a board enables, named by its controller: they are instances of it.
    static func boardTimers(_ controller: String) -> String {
        "gaend-app@\(controller).timer gaend-metrics@\(controller).timer gaend-collect@\(controller).timer"
    }

    /// boards/NAME/README.md: that board's own install lines, with its controller's units. Only
    /// what its other files already depend on (no site or position), so that a change to those
    /// does not rewrite it.
    static func boardReadme(_ b: Inventory.Board, trial: String, stamp: String, ca: Bool, trustKey: Bool) -> String {
        """
        # Board \(b.name) of trial \(trial)

        \(stamp)

        Its controller: \(b.controller) (gaend@\(b.controller) and the units below are its instances). In this folder, on the board:

        ```sh
        sudo install -m 0644 \(boardFiles(ca: ca, trustKey: trustKey)) /etc/gaend/
        sudo install -m 0600 app-password /etc/gaend/app-password
        sudo systemctl enable --now \(boardTimers(b.controller))
        ```

        When the trial ends, after the last days were collected: `sudo systemctl start gaend-outcomes@\(b.controller)`
        ships the board's keys and app outcomes if its participant consented (OUTCOMES_CONSENT in app.env).

        """
    }

    static func readme(_ inv: Inventory, stamp: String, ca: Bool, trustKey: Bool) -> String {
        let files = boardFiles(ca: ca, trustKey: trustKey)
        // One controller for every board: name it. Several: CONTROLLER, and which board has which.
        let byController = Dictionary(grouping: inv.boards, by: \.controller)
        let controller = byController.count == 1 ? inv.boards[0].controller : "CONTROLLER"
        let which = byController.count == 1 ? "" : "\nCONTROLLER is the board's controller: " + byController.keys.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
            .map { c in "\(c) for \(byController[c]!.map(\.name).joined(separator: ", "))" }.joined(separator: "; ") + ".\n"
        return """
            # Trial \(inv.trial): provisioned configuration

            \(stamp)

            Time zone of the sites: \(inv.timeZone). Boards, server and reports keep UTC: convert with it for the people on site.
            \(inv.placementPlan.map { "Placement plan: \($0); each board's site and position: placement.csv.\n" } ?? "Each board's site and position: placement.csv.\n")
            ## Each board (boards/NAME/, its own lines in boards/NAME/README.md)

            ```sh
            cd boards/NAME
            sudo install -m 0644 \(files) /etc/gaend/
            sudo install -m 0600 app-password /etc/gaend/app-password
            sudo systemctl enable --now \(boardTimers(controller))
            ```
            \(which)
            When the trial ends, after the last days were collected: `sudo systemctl start gaend-outcomes@\(controller)` on each
            board ships its keys and app outcomes if its participant consented (OUTCOMES_CONSENT in app.env).

            ## The server (server/), after installing the server package (docs/key-server.md)

            ```sh
            sudo cp -r server/nginx/. /etc/nginx/gaend-trial/
            sudo chgrp www-data /etc/nginx/gaend-trial/boards.htpasswd
            sudo install -m 0644 server/publish.env /etc/gaend-trial/publish.env
            sudo install -m 0644 server/prometheus/* /etc/prometheus/
            sudo install -m 0644 server/alertmanager/alertmanager.yml /etc/prometheus/alertmanager.yml
            sudo nginx -t && sudo systemctl reload nginx prometheus prometheus-alertmanager
            ```

            Boards: \(inv.boards.count). Server: \(inv.server.url) (\(inv.server.name)). Alerts: \(inv.alerting.webhook).

            """
    }
}

/// Writes the planned files under the output directory, each only when its bytes or mode
/// differ, atomically (a temporary file renamed into place): a re-run of an unchanged inventory
/// touches nothing.
public enum OutputTree {
    public struct Outcome: Sendable, Equatable {
        public var written: [String]
        public var unchanged: Int
    }

    public static func write(_ files: [ProvisionedFile], to dir: String) throws -> Outcome {
        let fm = FileManager.default
        // It holds passwords: private from the start.
        try fm.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var outcome = Outcome(written: [], unchanged: 0)
        for f in files {
            let url = URL(fileURLWithPath: dir).appendingPathComponent(f.path)
            let data = Data(f.contents.utf8)
            let attributes = try? fm.attributesOfItem(atPath: url.path)
            if let attributes, (attributes[.posixPermissions] as? NSNumber)?.intValue == f.mode,
               let old = fm.contents(atPath: url.path), old == data {
                outcome.unchanged += 1
                continue
            }
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).new")
            try? fm.removeItem(at: temporary)
            guard fm.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: f.mode]) else {
                throw ProvisionError("\(temporary.path): cannot write")
            }
            // createFile's mode passes through the umask; the password must be 0600 and the rest as planned.
            try fm.setAttributes([.posixPermissions: f.mode], ofItemAtPath: temporary.path)
            guard rename(temporary.path, url.path) == 0 else { throw ProvisionError("\(url.path): cannot rename into place (errno \(errno))") }
            outcome.written.append(f.path)
        }
        return outcome
    }
}
