import ENProtocol
import Foundation
import Testing

/// `gaenctl match` and `gaenctl windows` end to end: a signed key file and a sightings CSV
/// written here, the JSON contracts read back.
@Suite struct MatchCommandTests {
    let day = UTCDay(isoDate: "2026-11-10")!

    struct Setup {
        var dir: URL
        var keys: String
        var pem: String
        var sightings: String
        var tek: TemporaryExposureKey
        var t0: Double
    }

    /// Keys: one infected visitor seen in two scans, one revoked key seen once, one key never seen.
    /// Sightings: five scans (one empty), rows for the visitor with an RSSI correction.
    func setup() throws -> Setup {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("match-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let schedule = try GAENKeySchedule()
        let visitor = DiagnosisKey(key: try TemporaryExposureKey(hex: "00112233445566778899aabbccddeeff"),
                                   rollingStartIntervalNumber: day.firstInterval, transmissionRiskLevel: 6,
                                   reportType: .confirmedTest, daysSinceOnsetOfSymptoms: 0)
        let revoked = DiagnosisKey(key: try TemporaryExposureKey(hex: "ffeeddccbbaa99887766554433221100"),
                                   rollingStartIntervalNumber: day.firstInterval, reportType: .revoked)
        let absent = DiagnosisKey(key: try TemporaryExposureKey(hex: "0f0e0d0c0b0a09080706050403020100"),
                                  rollingStartIntervalNumber: day.advanced(by: -5).firstInterval, reportType: .confirmedTest)
        let signing = try P256PrivateKey.generate()
        let zip = try KeyExportWriter.signedArchive(
            header: KeyExportHeader(startTimestamp: UInt64(day.unixSeconds), endTimestamp: UInt64(day.unixSeconds + 86_400), region: "XX"),
            keys: [visitor, revoked, absent], signingKey: signing, keyId: "test", keyVersion: "v1")
        let keysPath = dir.appendingPathComponent("keys.zip")
        try zip.write(to: keysPath)
        let pemPath = dir.appendingPathComponent("key.pem")
        try signing.publicKey.pemRepresentation.write(to: pemPath, atomically: true, encoding: .utf8)

        let t0 = Double(day.unixSeconds) + 36_000 // 10:00 UTC
        func row(_ key: DiagnosisKey, _ t: Double, rssi: Int, correction: Int, scan: Double, tx: Int8) throws -> String {
            let j = ENIntervalNumber(unixSeconds: t)
            let rpi = try schedule.rollingProximityIdentifier(for: key.key, interval: j)
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_1(txPower: tx, calibrationConfidence: .high), rpi: rpi,
                                                                       aemk: schedule.associatedEncryptedMetadataKey(for: key.key))
            return "\(t),\(rpi.hexString),\(aem.hexString),\(rssi),\(scan),\(scan + 4),\(correction)"
        }
        var lines = ["time,rpi,aem,rssi,scan_start,scan_end,rssi_correction"]
        lines.append("\(t0),,,,\(t0),\(t0 + 4),")                                       // empty scan
        lines.append(try row(visitor, t0 + 241, rssi: -70, correction: 4, scan: t0 + 240, tx: -20))
        lines.append(try row(visitor, t0 + 242, rssi: -74, correction: 4, scan: t0 + 240, tx: -20))
        lines.append("\(t0 + 480),,,,\(t0 + 480),\(t0 + 484),")                         // missed the visitor
        lines.append(try row(visitor, t0 + 721, rssi: -60, correction: 4, scan: t0 + 720, tx: -20))
        lines.append(try row(revoked, t0 + 722, rssi: -50, correction: 4, scan: t0 + 720, tx: -20))
        lines.append(try row(visitor, t0 + 960.5, rssi: -60, correction: 4, scan: t0 + 960, tx: 90)) // implausible
        let sightingsPath = dir.appendingPathComponent("sightings.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: sightingsPath, atomically: true, encoding: .utf8)
        return Setup(dir: dir, keys: keysPath.path, pem: pemPath.path, sightings: sightingsPath.path, tek: visitor.key, t0: t0)
    }

    @Test func matchPrintsOneLinePerMatchedSighting() throws {
        let s = try setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let r = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", s.keys, "--trust", "test:v1=\(s.pem)"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 5)
        let objects = try lines.map { try #require(try CLI.json($0) as? [String: Any]) }
        let fields: Set = ["time", "rpi", "rssi", "transmitter", "keyData", "interval", "txPower", "attenuation", "metadataVersion",
                           "calibrationConfidence", "txPowerPlausible"]
        #expect(objects.allSatisfy { Set($0.keys) == fields })
        let first = objects[0]
        #expect(first["time"] as? Int == Int(s.t0) + 241 && first["rssi"] as? Int == -70)
        #expect(first["keyData"] as? String == s.tek.hexString && first["transmitter"] as? String == "keys")
        #expect(first["interval"] as? Int == Int(ENIntervalNumber(unixSeconds: s.t0 + 241).rawValue))
        // attenuation = -20 - (-70 + 4)
        #expect(first["txPower"] as? Int == -20 && first["attenuation"] as? Int == 46)
        #expect(first["metadataVersion"] as? String == "1.1" && first["calibrationConfidence"] as? Int == 3)
        let last = objects[4]
        #expect(last["time"] as? Double == s.t0 + 960.5)
        #expect(last["txPower"] as? Int == 90 && last["attenuation"] is NSNull && last["txPowerPlausible"] as? Bool == false)
        #expect(r.stderr.contains("3 keys (1 skipped"))
        #expect(r.stderr.contains("2 keys matched 5 sightings (1 with implausible TX power)"))
    }

    @Test func matchWithoutTrustSaysSoAndRejectsAnUntrustedFile() throws {
        let s = try setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let open = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", s.keys])
        #expect(open.status == 0 && open.stderr.contains("no signature was required"))
        #expect(open.stdout.split(separator: "\n").count == 5)
        let other = s.dir.appendingPathComponent("other.pem")
        try P256PrivateKey.generate().publicKey.pemRepresentation.write(to: other, atomically: true, encoding: .utf8)
        let rejected = try CLI.run("gaenctl", ["match", "--sightings", s.sightings, "--keys", s.keys, "--trust", "test:v1=\(other.path)"])
        #expect(rejected.status == 1 && rejected.stdout.isEmpty)
        #expect(rejected.stderr.split(separator: "\n").count == 1 && rejected.stderr.contains("rejected"))
    }

    @Test func badSightingsFileIsOneClearLine() throws {
        let s = try setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let bad = s.dir.appendingPathComponent("bad.csv")
        try "time,rpi,aem,rssi\n1700000000,zz,01020304,-60\n".write(to: bad, atomically: true, encoding: .utf8)
        let r = try CLI.run("gaenctl", ["match", "--sightings", bad.path, "--keys", s.keys])
        #expect(r.status == 1)
        #expect(r.stderr.contains("line 2, column 'rpi': expected 32 hex digits, got 'zz'"))
    }

    @Test func windowsWithMapping() throws {
        let s = try setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let mapping = s.dir.appendingPathComponent("mapping.json")
        try #"{"daysSinceOnsetToInfectiousness": {"0": "HIGH"}, "reportTypeWhenMissing": 1, "infectiousnessWhenDaysSinceOnsetMissing": 1}"#
            .write(to: mapping, atomically: true, encoding: .utf8)
        let r = try CLI.run("gaenctl", ["windows", "--sightings", s.sightings, "--keys", s.keys, "--mapping", mapping.path])
        #expect(r.status == 0, "\(r.stderr)")
        let windows = try #require(try CLI.json(r.stdout) as? [[String: Any]])
        try #require(windows.count == 1)
        let w = windows[0]
        #expect(w["dateMillisSinceEpoch"] as? Int == Int(day.millisSinceEpoch))
        #expect(w["reportType"] as? Int == 1 && w["infectiousness"] as? Int == 2 && w["calibrationConfidence"] as? Int == 3)
        #expect(w["transmissionRiskLevel"] as? Int == 6)
        let instances = try #require(w["scanInstances"] as? [[String: Any]])
        // Scan at +240: attenuations 46 and 50 -> typical 48, min 46, 240 s after the empty scan.
        // Scan at +720: 36, 240 s after the scan at +480 that missed the visitor.
        #expect(instances.map { $0["typicalAttenuationDb"] as? Int } == [48, 36])
        #expect(instances.map { $0["minAttenuationDb"] as? Int } == [46, 36])
        #expect(instances.map { $0["secondsSinceLastScan"] as? Int } == [240, 240])
        #expect(r.stderr.contains("1 revoked"))
    }

    @Test func windowsNeedScanColumns() throws {
        let s = try setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let plain = s.dir.appendingPathComponent("plain.csv")
        try "time,rpi,aem,rssi\n".write(to: plain, atomically: true, encoding: .utf8)
        let r = try CLI.run("gaenctl", ["windows", "--sightings", plain.path, "--keys", s.keys])
        #expect(r.status == 1 && r.stderr.contains("no 'scan_start' column"))
    }
}
