import Foundation
import GaenCollect
import HTTPClient
import Testing
import TrialFormats

/// Debian's nginx on loopback (never a mock): one location that takes PUTs into `stored/` and
/// serves GETs from a root the test chooses (`stored/` itself, or a copy it tampered with), and
/// one that answers every request with a redirect.
final class LoopbackNginx {
    let dir: URL
    let port: Int
    let process: Process
    var stored: URL { dir.appendingPathComponent("stored") }
    var served: URL { dir.appendingPathComponent("served") }
    var url: String { "http://127.0.0.1:\(port)/collect/" }
    var redirecting: String { "http://127.0.0.1:\(port)/moved/" }

    static var binary: String? { ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) } }

    /// `readBackFromStored`: GET reads what PUT stored; otherwise GET reads `served/`.
    init(readBackFromStored: Bool) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-collect-test-\(UUID().uuidString)")
        for d in ["stored", "served", "body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(d), withIntermediateDirectories: true)
        }
        port = try Self.freePort()
        let storedPath = dir.appendingPathComponent("stored").path
        let getRoot = readBackFromStored ? storedPath : dir.appendingPathComponent("served").path
        let user = getuid() == 0 ? "user root;\n" : ""
        let conf = """
            \(user)worker_processes 1;
            daemon off;
            pid \(dir.path)/nginx.pid;
            error_log \(dir.path)/logs/error.log info;
            events {}
            http {
                access_log \(dir.path)/logs/access.log;
                client_body_temp_path \(dir.path)/body;
                proxy_temp_path \(dir.path)/proxy;
                fastcgi_temp_path \(dir.path)/fastcgi;
                uwsgi_temp_path \(dir.path)/uwsgi;
                scgi_temp_path \(dir.path)/scgi;
                map $request_method $collect_root { PUT \(storedPath); default \(getRoot); }
                server {
                    listen 127.0.0.1:\(port);
                    location /collect/ {
                        alias $collect_root/;
                        dav_methods PUT;
                        create_full_put_path on;
                        dav_access user:rw;
                    }
                    location /moved/ { return 307 http://127.0.0.1:9/elsewhere/; }
                }
            }

            """
        try conf.write(to: dir.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary!)
        process.arguments = ["-p", dir.path, "-c", dir.appendingPathComponent("nginx.conf").path, "-e", dir.path + "/logs/error.log"]
        try process.run()
        // Up when it accepts a connection.
        for _ in 0..<200 {
            if Self.accepts(port) { return }
            usleep(50_000)
        }
        process.terminate()
        throw CollectError("nginx did not start: \((try? String(contentsOf: dir.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? "")")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: dir)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { throw CollectError("no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

@Suite("gaenctl collect ships a day and checks the server's copy by content",
       .enabled(if: LoopbackNginx.binary != nil, "nginx is not installed (scripts/setup.sh installs it)"))
struct ShipTests {
    /// A spool holding one prepared day of board b1, as `prepare` leaves it.
    func spoolWithOneDay() throws -> (CollectSpool, CollectSpool.Day, URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-spool-\(UUID().uuidString)")
        let spool = try CollectSpool(path: root.path)
        let scratch = try spool.freshScratch()
        let sightings = (0..<2_000).map { "2026-01-05T10:\(String(format: "%02d", $0 % 60)):00Z,b1,rpi\($0),-\(40 + $0 % 30)" }.joined(separator: "\n") + "\n"
        try Data(("time,board,rpi,rssi\n" + sightings).utf8).write(to: scratch.appendingPathComponent("sightings.csv"))
        try Data("{\"txPower\":-30}\n".utf8).write(to: scratch.appendingPathComponent("calibration.json"))
        try Data(DayManifest.make(directory: scratch.path, files: ["sightings.csv", "calibration.json"]).utf8)
            .write(to: scratch.appendingPathComponent(DayManifest.fileName))
        let day = CollectSpool.Day(board: "b1", day: "2026-01-05")
        try spool.enqueue(scratch, as: day)
        return (spool, day, root)
    }

    @Test("A server that keeps the bytes sent: the day is shipped, its spool copy removed")
    func honestServer() throws {
        let nginx = try LoopbackNginx(readBackFromStored: true)
        defer { nginx.stop() }
        let (spool, day, root) = try spoolWithOneDay()
        defer { try? FileManager.default.removeItem(at: root) }
        let http = try HTTPSession()
        #expect(try spool.ship(day, base: nginx.url, http: http) == 3)
        #expect(try spool.pendingDays().isEmpty)
        let server = try Data(contentsOf: nginx.stored.appendingPathComponent("board=b1/day=2026-01-05/sightings.csv"))
        #expect(server.count > 40_000)
        #expect(try spool.loadState().shipped["board=b1/day=2026-01-05"] != nil)
    }

    @Test("The outcomes go to board=B/outcomes/, after the board's days, and are listed as pending until shipped")
    func outcomesAfterTheDays() throws {
        let nginx = try LoopbackNginx(readBackFromStored: true)
        defer { nginx.stop() }
        let (spool, day, root) = try spoolWithOneDay()
        defer { try? FileManager.default.removeItem(at: root) }
        let scratch = try spool.freshScratch()
        try Data("[]\n".utf8).write(to: scratch.appendingPathComponent(CollectedOutcomes.keysFile))
        try Data(DayManifest.make(directory: scratch.path, files: [CollectedOutcomes.keysFile]).utf8).write(to: scratch.appendingPathComponent(DayManifest.fileName))
        let outcomes = CollectOutcomes.spoolDay(board: "b1")
        try spool.enqueue(scratch, as: outcomes)
        #expect(outcomes.relativePath == "board=b1/outcomes")
        #expect(try spool.pendingDays() == [day, outcomes])
        let http = try HTTPSession()
        #expect(try spool.ship(outcomes, base: nginx.url, http: http) == 2)
        #expect(try spool.pendingDays() == [day])
        #expect(try Data(contentsOf: nginx.stored.appendingPathComponent("board=b1/outcomes/keys.json")) == Data("[]\n".utf8))
    }

    @Test("A server that serves one flipped byte, same size: not shipped, the spool copy kept, the file named")
    func flippedByte() throws {
        let nginx = try LoopbackNginx(readBackFromStored: false)
        defer { nginx.stop() }
        let (spool, day, root) = try spoolWithOneDay()
        defer { try? FileManager.default.removeItem(at: root) }
        // The copy the server will serve back: the same files and manifest, one byte of the sightings flipped.
        let source = spool.pending.appendingPathComponent(day.relativePath)
        let served = nginx.served.appendingPathComponent(day.relativePath)
        try FileManager.default.createDirectory(at: served.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: source, to: served)
        var bytes = try Data(contentsOf: served.appendingPathComponent("sightings.csv"))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: served.appendingPathComponent("sightings.csv"))

        #expect {
            try spool.ship(day, base: nginx.url, http: try HTTPSession())
        } throws: { error in
            let text = "\(error)"
            return text.contains("sightings.csv is not the file sent") && text.contains("sent again next run")
        }
        #expect(try spool.pendingDays() == [day])
        #expect(FileManager.default.fileExists(atPath: source.appendingPathComponent("sightings.csv").path))
        #expect(try spool.loadState().shipped.isEmpty)
    }

    @Test("A PUT answered with a redirect is not followed: the day stays, the message names where it pointed")
    func redirectedUpload() throws {
        let nginx = try LoopbackNginx(readBackFromStored: true)
        defer { nginx.stop() }
        let (spool, day, root) = try spoolWithOneDay()
        defer { try? FileManager.default.removeItem(at: root) }
        let http = try HTTPSession()
        http.credentials = HTTPCredentials(user: "b1", password: "secret")
        #expect {
            try spool.ship(day, base: nginx.redirecting, http: http)
        } throws: { error in
            "\(error)".contains("HTTP 307") && "\(error)".contains("'http://127.0.0.1:9/elsewhere/") && "\(error)".contains("not followed")
        }
        #expect(try spool.pendingDays() == [day])
    }
}

@Suite("The password file of collect and app submit")
struct PasswordFileTests {
    @Test("A FIFO is refused at once, an empty file and two lines are named")
    func specialFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-pw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect { try HTTPCredentials.readPassword(fifo) } throws: { "\($0)".contains("FIFO") }
        let empty = dir.appendingPathComponent("empty").path
        FileManager.default.createFile(atPath: empty, contents: Data("\n".utf8))
        #expect { try HTTPCredentials.readPassword(empty) } throws: { "\($0)".contains("is empty") }
        let two = dir.appendingPathComponent("two").path
        FileManager.default.createFile(atPath: two, contents: Data("a\nb\n".utf8))
        #expect { try HTTPCredentials.readPassword(two) } throws: { "\($0)".contains("more than one line") }
        let good = dir.appendingPathComponent("good").path
        FileManager.default.createFile(atPath: good, contents: Data("s3cret\r\n".utf8))
        #expect(try HTTPCredentials.readPassword(good) == "s3cret")
    }
}
