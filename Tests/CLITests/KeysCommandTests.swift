import ENProtocol
import Foundation
import Testing

@Suite struct KeysCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ENProtocolTests/Fixtures/key-export").standardizedFileURL
    static var sample: String { fixtures.appendingPathComponent("two-keys-signed.zip").path }
    static var samplePEM: String { fixtures.appendingPathComponent("two-keys-signed.public.pem").path }

    func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test func inspectSampleWithTrust() throws {
        let r = try CLI.run("gaenctl", ["keys", "inspect", Self.sample, "--trust", "some_id:1=\(Self.samplePEM)", "--require-signature"])
        #expect(r.status == 0, "\(r.stderr)")
        let obj = try #require(try CLI.json(r.stdout) as? [String: Any])
        let header = try #require(obj["header"] as? [String: Any])
        #expect(header["region"] as? String == "US")
        #expect(header["batchNum"] as? Int == 1 && header["batchSize"] as? Int == 1)
        #expect(header["startTimestamp"] as? Int == 1_590_159_600)
        let keys = try #require(obj["keys"] as? [[String: Any]])
        #expect(keys.map { $0["keyData"] as? String } == ["172fc480e598490c34177604339b1543", "2b63053ac483238de176169e861f3dcd"])
        #expect(keys.map { $0["rollingPeriod"] as? Int } == [1, 114])
        #expect(keys.map { $0["transmissionRiskLevel"] as? Int } == [8, 1])
        #expect(keys[0]["reportType"] is NSNull)
        let sigs = try #require(obj["signatures"] as? [[String: Any]])
        #expect(sigs.count == 1)
        #expect(sigs[0]["keyId"] as? String == "some_id" && sigs[0]["keyVersion"] as? String == "1")
        #expect(sigs[0]["algorithm"] as? String == "1.2.840.10045.4.3.2")
        #expect(sigs[0]["verified"] as? Bool == true)
        #expect(r.stderr.isEmpty)
    }

    @Test func inspectWithoutTrustSaysSoAndDoesNotVerify() throws {
        let r = try CLI.run("gaenctl", ["keys", "inspect", Self.sample])
        #expect(r.status == 0)
        #expect(r.stderr.contains("no signature was required"))
        let obj = try #require(try CLI.json(r.stdout) as? [String: Any])
        #expect((obj["signatures"] as? [[String: Any]])?.first?["verified"] as? Bool == false)
    }

    @Test func untrustedOrBrokenFilesExitOneWithOneLine() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let otherPEM = dir.appendingPathComponent("other.pem")
        try P256PrivateKey.generate().publicKey.pemRepresentation.write(to: otherPEM, atomically: true, encoding: .utf8)
        let garbage = dir.appendingPathComponent("garbage.zip")
        try Data("PK\u{3}\u{4}not really".utf8).write(to: garbage)
        let cases: [([String], String)] = [
            (["keys", "inspect", Self.sample, "--trust", "some_id=\(otherPEM.path)"], "does not verify"),
            (["keys", "inspect", Self.sample, "--trust", "other=\(Self.samplePEM)"], "no trusted key verifies"),
            (["keys", "inspect", Self.sample, "--require-signature"], "needs at least one --trust"),
            (["keys", "inspect", garbage.path], "malformed ZIP archive"),
            (["keys", "inspect", Self.sample, "--trust", "nonsense"], "expected ID[:VERSION]=PEMFILE"),
        ]
        for (args, message) in cases {
            let r = try CLI.run("gaenctl", args)
            #expect(r.status == 1, "\(args)")
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(message), "\(args): \(r.stderr)")
        }
    }

    @Test func createThenInspectRoundTrip() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let signer = try P256PrivateKey.generate()
        let privatePEM = dir.appendingPathComponent("signing.pem"), publicPEM = dir.appendingPathComponent("public.pem")
        try signer.pemRepresentation.write(to: privatePEM, atomically: true, encoding: .utf8)
        try signer.publicKey.pemRepresentation.write(to: publicPEM, atomically: true, encoding: .utf8)
        let keysJSON = """
        [{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":2650032,"rollingPeriod":144,
          "transmissionRiskLevel":4,"reportType":1,"daysSinceOnsetOfSymptoms":-2},
         {"keyData":"ffeeddccbbaa99887766554433221100","rollingStartIntervalNumber":2650176,"reportType":"REVOKED"},
         {"keyData":"11111111111111111111111111111111","rollingStartIntervalNumber":2650320,"rollingPeriod":12,
          "transmissionRiskLevel":null,"reportType":null,"daysSinceOnsetOfSymptoms":null}]
        """
        let keysFile = dir.appendingPathComponent("keys.json")
        try keysJSON.write(to: keysFile, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out.zip")
        let c = try CLI.run("gaenctl", ["keys", "create", "--keys", keysFile.path, "--signing-key", privatePEM.path,
                                        "--key-id", "262", "--key-version", "v2", "--region", "DE", "-o", out.path])
        #expect(c.status == 0, "\(c.stderr)")

        let r = try CLI.run("gaenctl", ["keys", "inspect", out.path, "--trust", "262:v2=\(publicPEM.path)", "--require-signature"])
        #expect(r.status == 0, "\(r.stderr)")
        let obj = try #require(try CLI.json(r.stdout) as? [String: Any])
        let header = try #require(obj["header"] as? [String: Any])
        #expect(header["region"] as? String == "DE")
        #expect(header["startTimestamp"] as? Int == 2_650_032 * 600)
        #expect(header["endTimestamp"] as? Int == (2_650_320 + 12) * 600)
        // Output keys equal the input, with absent optional fields as null and the default period.
        let keys = try #require(obj["keys"] as? [[String: Any]])
        let input = try #require(try CLI.json(keysJSON) as? [[String: Any]])
        #expect(keys.count == 3)
        #expect(keys[0] as NSDictionary == input[0] as NSDictionary)
        #expect(keys[1]["rollingPeriod"] as? Int == 144 && keys[1]["reportType"] as? Int == 5)
        #expect(keys[1]["transmissionRiskLevel"] is NSNull && keys[1]["daysSinceOnsetOfSymptoms"] is NSNull)
        #expect(keys[2] as NSDictionary == input[2] as NSDictionary)
        let sig = try #require((obj["signatures"] as? [[String: Any]])?.first)
        #expect(sig["keyId"] as? String == "262" && sig["keyVersion"] as? String == "v2" && sig["verified"] as? Bool == true)
    }

    @Test func createRejectsBadInputWithOneLine() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pem = dir.appendingPathComponent("k.pem")
        try P256PrivateKey.generate().pemRepresentation.write(to: pem, atomically: true, encoding: .utf8)
        let cases: [(String, String)] = [
            (#"[{"keyData":"0011","rollingStartIntervalNumber":1}]"#, "[0].keyData"),
            (#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1,"rollingPeriod":145}]"#, "rollingPeriod"),
            (#"[{"keyData":"000102030405060708090a0b0c0d0e0f"}]"#, "rollingStartIntervalNumber: missing"),
            (#"[{"keyData":"000102030405060708090a0b0c0d0e0f","rollingStartIntervalNumber":1,"colour":1}]"#, "unknown field 'colour'"),
            (#"{"keyData":"x"}"#, "expected a JSON array"),
        ]
        for (json, message) in cases {
            let f = dir.appendingPathComponent("k.json")
            try json.write(to: f, atomically: true, encoding: .utf8)
            let r = try CLI.run("gaenctl", ["keys", "create", "--keys", f.path, "--signing-key", pem.path, "--key-id", "x",
                                            "-o", dir.appendingPathComponent("o.zip").path])
            #expect(r.status == 1, "\(json)")
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(message), "\(json): \(r.stderr)")
        }
    }
}
