import BoardNames
@testable import NodeConfig
import Foundation
import Testing
@testable import TrialProvision
import TrialKit

/// Fixed secrets, so a plan is a function of its inputs; counts what was asked for.
struct CountingSecrets: SecretSource {
    var passwords = 0, salts = 0
    mutating func password() -> String { passwords += 1; return "pw\(passwords)" }
    mutating func salt() -> String { salts += 1; return "salt\(salts)" }
}

let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

func inventory(boards: Int, extra: String = "") -> String {
    var text = """
        trial: t1
        time_zone: Europe/Berlin
        server:
          name: trial.example.org
          url: https://trial.example.org/
        alerting:
          webhook: http://127.0.0.1:9/hook
        defaults:
          consent: yes
        boards:

        """
    for i in 1...boards { text += "  - {name: board\(String(format: "%02d", i)), site: \"bus \(i)\", position: front}\n" }
    return text + extra
}

@Suite struct BoardNameTests {
    @Test func theRule() {
        for good in ["b", "board01", "bus12-front", "A_1", String(repeating: "a", count: 64)] { #expect(BoardName.isValid(good), "\(good)") }
        for bad in ["", "-a", "_a", "a.b", "..", "a/b", "a b", "é", String(repeating: "a", count: 65)] { #expect(!BoardName.isValid(bad), "\(bad)") }
    }

    /// nginx's locations spell the same rule: a change on one side fails here.
    @Test func nginxUsesTheSameRule() throws {
        for file in ["keys.conf", "collect.conf"] {
            let text = try String(contentsOf: repo.appendingPathComponent("deploy/server/nginx/locations/\(file)"), encoding: .utf8)
            #expect(text.contains(">\(BoardName.pattern))/"), "\(file) does not use BoardName.pattern")
        }
    }

    @Test func gaendConfigRefusesOtherNames() throws {
        #expect(try ConfigLoader.parse("research: {node: board-1}").research.node == "board-1")
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("research: {node: board.1}") }
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("research: {node: \"bus 12\"}") }
    }
}

@Suite struct InventoryTests {
    @Test func readsTheExample() throws {
        let inv = try Inventory.read(path: repo.appendingPathComponent("examples/trial/inventory.yml").path)
        #expect(inv.boards.map(\.name) == ["bus12-front", "bus12-rear", "office-desk3"])
        #expect(inv.boards.map(\.consent) == [true, true, false])
        #expect(inv.boards[2].host == "10.20.0.13" && inv.boards[0].metricsPort == 9100)
        #expect(inv.server.url == "https://trial.example.org" && inv.alerting.alertmanager == "localhost:9093")
    }

    @Test func refusesMistakesWithTheirLine() {
        func problem(_ text: String) -> String {
            do { _ = try Inventory.parse(text, path: "inv.yml"); return "" } catch { return "\(error)" }
        }
        #expect(problem(inventory(boards: 2).replacingOccurrences(of: "board02", with: "board01")).contains("listed twice"))
        #expect(problem(inventory(boards: 1).replacingOccurrences(of: "board01", with: "board.01")).contains("line 11"))
        #expect(problem(inventory(boards: 1).replacingOccurrences(of: "  consent: yes\n", with: "")).contains("consent"))
        #expect(problem(inventory(boards: 1).replacingOccurrences(of: "time_zone:", with: "timezone:")).contains("unknown key 'timezone'"))
        #expect(problem(inventory(boards: 1).replacingOccurrences(of: "Europe/Berlin", with: "Mars/Olympus")).contains("time_zone"))
        #expect(problem(inventory(boards: 1).replacingOccurrences(of: "http://127.0.0.1:9/hook", with: "ftp://x")).contains("alerting.webhook"))
        #expect(problem(inventory(boards: 1)) == "")
    }
}

@Suite struct ProvisionPlanTests {
    let templates = try! DeployTemplates.load(deployDirectory: repo.appendingPathComponent("deploy").path)

    /// The inventory's positions become the placement plan TrialKit reads back; the outcomes
    /// consent goes to the plan and the board's app.env.
    @Test func placementPlanFromTheInventory() throws {
        var secrets = CountingSecrets()
        let text = inventory(boards: 0 + 1).replacingOccurrences(of: "position: front}", with: "position: front, x: 1.5, y: -2}") + """
              - name: mover
                site: bus 1
                outcomes_consent: yes
                placements:
                  - {from: "2026-11-20T08:00:00Z", to: "2026-11-20T09:00:00Z", x: 0, y: 0}
                  - {from: "2026-11-20T09:00:00Z", x: 10, y: 0}
              - {name: nowhere, site: bus 2}

            """
        let files = try plan(text, secrets: &secrets)
        let csv = try #require(files["placement.csv"]).contents
        let plan = try TrialKit.PlacementPlan.parse(Array(csv.utf8), file: "placement.csv")
        #expect(plan.boards == ["board01", "mover", "nowhere"])
        #expect(plan.rows.count == 4 && plan.rows[0].x == 1.5 && plan.rows[0].y == -2 && plan.rows[0].outcomesConsent == false)
        #expect(plan.rows[2].from == 1_795_165_200 && plan.rows[2].to == nil && plan.rows[2].outcomesConsent == true)
        #expect(!plan.isPlaced("nowhere"))
        #expect(plan.segments("board01", "mover", from: 1_795_161_600, to: 1_795_165_200).map(\.distance) == [2.5])
        #expect(files["boards/mover/app.env"]?.contents.contains("\nCONSENT=yes\nOUTCOMES_CONSENT=yes\n") == true)
        #expect(files["boards/board01/app.env"]?.contents.contains("\nOUTCOMES_CONSENT=no\n") == true)
        func problem(_ extra: String) -> String {
            do { _ = try Inventory.parse(inventory(boards: 1) + extra, path: "inv.yml"); return "" } catch { return "\(error)" }
        }
        #expect(problem("  - {name: m, site: s, x: 1}\n") == "inv.yml: line 12: board m: y: missing (metres; x and y go together)")
        #expect(problem("  - {name: m, site: s, x: 1, y: 1, placements: []}\n").hasSuffix("board m: give x/y or placements, not both"))
        #expect(problem("  - {name: m, site: s, placements: [{from: yesterday, x: 1, y: 1}]}\n").hasSuffix("board m: from: a UTC time such as 2026-11-20T08:00:00Z"))
        #expect(problem("  - {name: m, site: s, outcomes_consent: maybe}\n").contains("outcomes_consent: true or false"))
    }

    func plan(_ text: String, existing: ExistingSecrets = ExistingSecrets(), secrets: inout CountingSecrets) throws -> [String: ProvisionedFile] {
        let files = try Provisioner.plan(try Inventory.parse(text), inventoryName: "inv.yml", templates: templates, attachments: .init(),
                                         existing: existing, secrets: &secrets, hasher: OpenSSLPasswordHasher())
        return Dictionary(uniqueKeysWithValues: files.map { ($0.path, $0) })
    }

    @Test func everyBoardAndTheServer() throws {
        var secrets = CountingSecrets()
        let files = try plan(inventory(boards: 20), secrets: &secrets)
        #expect(secrets.passwords == 20)
        for i in 1...20 {
            let b = "board\(String(format: "%02d", i))"
            let conf = try #require(files["boards/\(b)/gaend.conf"])
            // gaend itself reads the board's config and gets its name and site.
            let settings = try ConfigLoader.parse(conf.contents)
            #expect(settings.research.node == b && settings.research.site == "bus \(i)" && settings.research.enabled)
            #expect(files["boards/\(b)/app-password"]?.mode == 0o600)
            #expect(files["boards/\(b)/app.env"]?.contents.contains("\nBOARD=\(b)\nCONSENT=yes\n") == true)
        }
        let htpasswd = try #require(files[Provisioner.htpasswdPath]).contents.split(separator: "\n")
        #expect(htpasswd.count == 20 && htpasswd[0].hasPrefix("board01:$apr1$salt1$"))
        #expect(files["server/nginx/gaend-trial.conf"]?.contents.contains("server_name trial.example.org;") == true)
        #expect(files["server/publish.env"]?.contents.contains("PUBLISH_OPTIONS=--country DE --min-keys 1 --app-config /etc/gaend-trial/app-config.json") == true)
        let targets = try JSONSerialization.jsonObject(with: Data(try #require(files["server/prometheus/gaend-boards.json"]).contents.utf8)) as? [[String: Any]]
        #expect(targets?.count == 20)
        #expect(files["server/alertmanager/alertmanager.yml"]?.contents.contains("url: \"http://127.0.0.1:9/hook\"") == true)
        // No CA in the inventory: the system's store.
        #expect(files["boards/board01/app.env"]?.contents.contains("HTTP_OPTIONS=\n") == true)
        // A rehearsal's --trial-clock has its own variable, empty for a trial, on both sides.
        #expect(files["boards/board01/app.env"]?.contents.contains("\nTRIAL_OPTIONS=\nAPP_OPTIONS=\n") == true)
        #expect(files["server/publish.env"]?.contents.hasSuffix("\nTRIAL_OPTIONS=\n") == true)
    }

    /// A board's controller names its units in the READMEs (its own and the trial's), as in its
    /// gaend.conf; the default is hci0.
    @Test func readmesNameEachBoardsController() throws {
        var secrets = CountingSecrets()
        let text = inventory(boards: 3).replacingOccurrences(of: "name: board02, site: \"bus 2\", position: front}", with: "name: board02, site: \"bus 2\", position: front, controller: hci1}")
        let files = try plan(text, secrets: &secrets)
        for (board, controller, other) in [("board01", "hci0", "hci1"), ("board02", "hci1", "hci0"), ("board03", "hci0", "hci1")] {
            let readme = try #require(files["boards/\(board)/README.md"]).contents
            #expect(readme.contains("sudo systemctl enable --now gaend-app@\(controller).timer gaend-metrics@\(controller).timer gaend-collect@\(controller).timer\n"), "\(board)")
            #expect(readme.contains("`sudo systemctl start gaend-outcomes@\(controller)`") && !readme.contains(other), "\(board)")
            #expect(try ConfigLoader.parse(try #require(files["boards/\(board)/gaend.conf"]).contents).controllers == .only([.hci(index: controller == "hci1" ? 1 : 0)]))
        }
        let top = try #require(files["README.md"]).contents
        #expect(top.contains("gaend-app@CONTROLLER.timer") && top.contains("CONTROLLER is the board's controller: hci0 for board01, board03; hci1 for board02.\n"))

        // One controller for every board (here from defaults): the trial's README names it.
        let same = try plan(inventory(boards: 2).replacingOccurrences(of: "  consent: yes\n", with: "  consent: yes\n  controller: hci12\n"), secrets: &secrets)
        let sameTop = try #require(same["README.md"]).contents
        #expect(sameTop.contains("sudo systemctl enable --now gaend-app@hci12.timer gaend-metrics@hci12.timer gaend-collect@hci12.timer\n"))
        #expect(sameTop.contains("gaend-outcomes@hci12") && !sameTop.contains("hci0") && !sameTop.contains("CONTROLLER"))
        #expect(same["boards/board02/README.md"]?.contents.contains("gaend-app@hci12.timer") == true)
    }

    /// The inventory takes the kernel controllers gaend's config takes, spelt as their units'
    /// instances: anything else is refused naming the board, the key and the line.
    @Test func controllerNames() throws {
        func problem(_ controller: String, inDefaults: Bool = false) -> String {
            let text = inDefaults
                ? inventory(boards: 1).replacingOccurrences(of: "  consent: yes\n", with: "  consent: yes\n  controller: \"\(controller)\"\n")
                : inventory(boards: 1).replacingOccurrences(of: "position: front}", with: "position: front, controller: \"\(controller)\"}")
            do { _ = try Inventory.parse(text, path: "inv.yml"); return "" } catch { return "\(error)" }
        }
        for good in ["hci0", "hci1", "hci9", "hci10", "hci65535"] {
            #expect(problem(good) == "", "\(good)")
            #expect(problem(good, inDefaults: true) == "", "\(good)")
            #expect(try ConfigLoader.parse("controllers: [\(good)]").controllers == .only([.hci(index: Int(good.dropFirst(3))!)]), "\(good)")
        }
        for bad in ["", "hci", "hci01", "hci+1", "hci-0", "hci:1", "hci65536", "hci1 ", "HCI0", "bt0", "hci٣", "tcp:127.0.0.1:9000"] {
            #expect(problem(bad) == "inv.yml: line 11: board board01: controller: a kernel controller name hci0...hci65535 as the kernel spells it (the board's units are gaend@hciN), got '\(bad)'", "\(bad)")
            #expect(problem(bad, inDefaults: true).hasPrefix("inv.yml: line 10: board board01: controller: "), "\(bad)")
        }
        // Not a text at all.
        #expect(throws: InventoryError.self) { try Inventory.parse(inventory(boards: 1).replacingOccurrences(of: "position: front}", with: "position: front, controller: [hci0]}")) }
    }

    /// Kept passwords keep their hashes: the second plan is the first, byte for byte.
    @Test func rerunKeepsSecrets() throws {
        var secrets = CountingSecrets()
        let first = try plan(inventory(boards: 3), secrets: &secrets)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("provision-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try OutputTree.write(Array(first.values), to: dir)
        var again = CountingSecrets()
        let second = try plan(inventory(boards: 3), existing: ExistingSecrets.read(outputDirectory: dir, boards: ["board01", "board02", "board03"]), secrets: &again)
        #expect(again.passwords == 0 && again.salts == 0)
        #expect(first == second)
        let outcome = try OutputTree.write(Array(second.values), to: dir)
        #expect(outcome.written.isEmpty && outcome.unchanged == first.count)
        // A fourth board: its files and the server's lists change, the three boards' do not.
        let third = try plan(inventory(boards: 4), existing: ExistingSecrets.read(outputDirectory: dir, boards: ["board01", "board02", "board03", "board04"]), secrets: &again)
        let changed = Set(try OutputTree.write(Array(third.values), to: dir).written)
        #expect(changed.contains("boards/board04/app-password") && changed.contains(Provisioner.htpasswdPath))
        #expect(!changed.contains { $0.hasPrefix("boards/board01/") })
        let mode = try FileManager.default.attributesOfItem(atPath: "\(dir)/boards/board04/app-password")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    /// A hash that no longer matches its password (edited by hand) is replaced.
    @Test func staleHashReplaced() throws {
        var secrets = CountingSecrets()
        let files = try plan(inventory(boards: 1), existing: ExistingSecrets(passwords: ["board01": "kept"], htpasswd: ["board01": "$apr1$old$nothash"]), secrets: &secrets)
        #expect(secrets.passwords == 0 && secrets.salts == 1)
        #expect(files["boards/board01/app-password"]?.contents == "kept\n")
        #expect(files[Provisioner.htpasswdPath]?.contents == "board01:\(try OpenSSLPasswordHasher().apr1(password: "kept", salt: "salt1"))\n")
    }
}
