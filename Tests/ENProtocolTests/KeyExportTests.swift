import Foundation
import Testing
@testable import ENProtocol

/// Fixtures and helpers shared by the key export tests.
enum KeyFixtures {
    static func url(_ name: String) -> URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("key-export/\(name)")
    }
    static var sampleZip: Data { get throws { try Data(contentsOf: url("two-keys-signed.zip")) } }
    static var samplePublicKey: P256PublicKey {
        get throws { try P256PublicKey(pem: String(contentsOf: url("two-keys-signed.public.pem"), encoding: .utf8)) }
    }

    static func trust(_ key: P256PublicKey, id: String = "some_id", version: String? = "1") -> KeyExportTrustSet {
        var t = KeyExportTrustSet()
        t.add(keyId: id, version: version, key: key)
        return t
    }

    static func key(_ byte: UInt8, start: UInt32 = 2_650_000, period: UInt32 = 144, risk: Int32? = nil,
                    report: ReportType? = nil, onset: Int32? = nil) -> DiagnosisKey {
        DiagnosisKey(key: try! TemporaryExposureKey(bytes: Data(repeating: byte, count: 16)),
                     rollingStartIntervalNumber: ENIntervalNumber(start), rollingPeriod: period,
                     transmissionRiskLevel: risk, reportType: report, daysSinceOnsetOfSymptoms: onset)
    }

    static let header = KeyExportHeader(startTimestamp: 1_590_000_000, endTimestamp: 1_590_086_400, region: "DE")

    /// export.bin bytes from raw proto messages (to build what the writer refuses to write).
    static func rawExport(keys: [ExportProto_TemporaryExposureKey]) throws -> Data {
        var p = ExportProto_TemporaryExposureKeyExport()
        p.region = "XX"; p.batchNum = 1; p.batchSize = 1
        p.keys = keys
        return Data(KeyExportFile.headerBytes) + (try p.serializedData())
    }

    static func protoKey(length: Int = 16, start: Int32 = 2_650_000, period: Int32? = nil) -> ExportProto_TemporaryExposureKey {
        var k = ExportProto_TemporaryExposureKey()
        k.keyData = Data(repeating: 7, count: length)
        k.rollingStartIntervalNumber = start
        if let period { k.rollingPeriod = period }
        return k
    }

    static func u32(_ d: Data, _ at: Int) -> Int { Int(d[at]) | Int(d[at + 1]) << 8 | Int(d[at + 2]) << 16 | Int(d[at + 3]) << 24 }
    static func u16(_ d: Data, _ at: Int) -> Int { Int(d[at]) | Int(d[at + 1]) << 8 }
    static func put32(_ d: inout Data, _ at: Int, _ v: UInt32) { for i in 0..<4 { d[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) } }

    /// Rewrites an entry's declared uncompressed size everywhere it is stored, consistently,
    /// as a zip bomb would: the archive stays well-formed but lies about the size.
    static func lieAboutSize(_ zip: Data, entry: String, size: UInt32) -> Data {
        var d = zip
        let eocd = d.count - 22
        var p = u32(d, eocd + 16)
        while p < eocd {
            let n = u16(d, p + 28), e = u16(d, p + 30), c = u16(d, p + 32)
            let name = String(decoding: d[p + 46..<p + 46 + n], as: UTF8.self)
            if name == entry {
                put32(&d, p + 24, size)
                let l = u32(d, p + 42), flags = u16(d, p + 8), csize = u32(d, p + 20)
                if flags & 8 != 0 {
                    var q = l + 30 + u16(d, l + 26) + u16(d, l + 28) + csize
                    if u32(d, q) == 0x0807_4b50 { q += 4 }
                    put32(&d, q + 8, size)
                    if u32(d, l + 22) != 0 { put32(&d, l + 22, size) }
                } else {
                    put32(&d, l + 22, size)
                }
            }
            p += 46 + n + e + c
        }
        return d
    }
}

/// Asserts that `body` throws a KeyExportError matching `matches`.
func expectKeyExportError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation,
                          _ matches: (KeyExportError) -> Bool) {
    do {
        try body()
        Issue.record("expected a KeyExportError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let e as KeyExportError {
        #expect(matches(e), "unexpected error: \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a KeyExportError, got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct KeyExportSampleTests {
    @Test func sampleParsesAsItsInputKeys() throws {
        let file = try KeyExportFile(parsing: try KeyFixtures.sampleZip)
        #expect(file.container == .zip)
        #expect(file.header.region == "US")
        #expect(file.header.batchNum == 1 && file.header.batchSize == 1)
        #expect(file.header.startTimestamp == 0x5ec7_e8f0 && file.header.endTimestamp == 0x5ec9_3a70)
        #expect(file.header.signatureInfos == [KeyExportSignatureInfo(keyId: "some_id", keyVersion: "1")])
        #expect(file.keyCount == 2 && file.revisedKeyCount == 0)

        struct Input: Decodable {
            struct K: Decodable { var key: String; var rollingStartNumber: UInt32; var rollingPeriod: UInt32; var transmissionRisk: Int32 }
            var temporaryExposureKeys: [K]
        }
        let input = try JSONDecoder().decode(Input.self, from: Data(contentsOf: KeyFixtures.url("two-keys-signed.input.json")))
        let keys = file.keyBatches().flatMap { $0 }
        #expect(keys.count == input.temporaryExposureKeys.count)
        for (k, want) in zip(keys, input.temporaryExposureKeys) {
            #expect(k.key.bytes == Data(base64Encoded: want.key))
            #expect(k.rollingStartIntervalNumber.rawValue == want.rollingStartNumber)
            #expect(k.rollingPeriod == want.rollingPeriod)
            #expect(k.transmissionRiskLevel == want.transmissionRisk)
            #expect(k.reportType == nil && k.daysSinceOnsetOfSymptoms == nil)
        }
    }

    @Test func sampleVerifiesWithItsKey() throws {
        let file = try KeyExportFile(parsing: try KeyFixtures.sampleZip)
        let trust = KeyFixtures.trust(try KeyFixtures.samplePublicKey)
        #expect(try file.requireTrustedSignature(trust) == KeyExportSignatureInfo(keyId: "some_id", keyVersion: "1"))
        #expect(file.verify(against: trust).verified == [true])
        // A key trusted for any version of the id verifies too.
        #expect(throws: Never.self) { try file.requireTrustedSignature(KeyFixtures.trust(try KeyFixtures.samplePublicKey, version: nil)) }
    }

    @Test func sampleFailsWithAnotherKey() throws {
        let file = try KeyExportFile(parsing: try KeyFixtures.sampleZip)
        let other = try P256PrivateKey.generate().publicKey
        #expect(throws: KeyExportError.badSignature(keyId: "some_id", keyVersion: "1")) {
            try file.requireTrustedSignature(KeyFixtures.trust(other))
        }
        #expect(file.verify(against: KeyFixtures.trust(other)).verified == [false])
        // The right key under another id or version is not trusted for this file.
        let sample = try KeyFixtures.samplePublicKey
        #expect(throws: KeyExportError.noTrustedSignature(present: ["some_id:1"])) {
            try file.requireTrustedSignature(KeyFixtures.trust(sample, id: "other_id"))
        }
        #expect(throws: KeyExportError.noTrustedSignature(present: ["some_id:1"])) {
            try file.requireTrustedSignature(KeyFixtures.trust(sample, version: "2"))
        }
    }

    /// Every byte of the archive flipped (XOR 0xff), one at a time: each altered file must be
    /// rejected by the reader or fail verification, never accepted.
    @Test func everyFlippedByteIsRejected() throws {
        let zip = try KeyFixtures.sampleZip
        let trust = KeyFixtures.trust(try KeyFixtures.samplePublicKey)
        var rejectedByReader = 0, failedVerification = 0
        var accepted: [Int] = []
        for i in zip.indices {
            var altered = zip
            altered[i] ^= 0xff
            let file: KeyExportFile
            do { file = try KeyExportFile(parsing: altered) } catch { rejectedByReader += 1; continue }
            do { try file.requireTrustedSignature(trust); accepted.append(i) } catch { failedVerification += 1 }
        }
        #expect(accepted.isEmpty, "altered archives accepted at offsets \(accepted)")
        #expect(rejectedByReader + failedVerification == zip.count)
    }

    /// The archive's CRC catches most flips before the signature is checked; re-zipping each
    /// altered export.bin (as an attacker would) shows the signature catches every one too.
    @Test func everyFlippedByteOfExportBinFailsVerification() throws {
        let original = try KeyExportFile(parsing: try KeyFixtures.sampleZip)
        let sigFile = try Self.signatureFile(original)
        let trust = KeyFixtures.trust(try KeyFixtures.samplePublicKey)
        var parsedButUnverified = 0
        for i in original.exportBin.indices {
            var bin = original.exportBin
            bin[i] ^= 0xff
            let zip = try KeyExportWriter.zip([("export.bin", bin), ("export.sig", sigFile)])
            guard let file = try? KeyExportFile(parsing: zip) else { continue }
            #expect(throws: KeyExportError.self, "flip at export.bin offset \(i) verified") { try file.requireTrustedSignature(trust) }
            parsedButUnverified += 1
        }
        #expect(parsedButUnverified >= 40) // 49 of 135 flips (key bytes, timestamps, strings) still parse: the signature is what rejects them
    }

    static func signatureFile(_ file: KeyExportFile) throws -> Data {
        var list = ExportProto_TEKSignatureList()
        list.signatures = file.signatures.map { s in
            var p = ExportProto_TEKSignature()
            p.signatureInfo = s.info.proto; p.batchNum = s.batchNum; p.batchSize = s.batchSize; p.signature = s.signature
            return p
        }
        return try list.serializedData()
    }
}

@Suite struct KeyExportRoundTripTests {
    let keys = [
        KeyFixtures.key(1, start: 2_650_032, period: 144, risk: 3, report: .confirmedTest, onset: -3),
        KeyFixtures.key(2, start: 2_650_176, period: 1, report: .selfReport, onset: 0),
        KeyFixtures.key(3, start: 2_650_320, period: 72, report: .revoked, onset: 14),
        KeyFixtures.key(4, start: 2_650_464),
    ]

    @Test func createThenReadGivesTheSameKeys() throws {
        let signer = try P256PrivateKey.generate()
        let zip = try KeyExportWriter.signedArchive(header: KeyFixtures.header, keys: keys, signingKey: signer, keyId: "262", keyVersion: "v7")
        let file = try KeyExportFile(parsing: zip)
        #expect(file.header.region == "DE")
        #expect(file.header.startTimestamp == 1_590_000_000 && file.header.endTimestamp == 1_590_086_400)
        #expect(file.header.batchNum == 1 && file.header.batchSize == 1)
        #expect(file.header.signatureInfos == [KeyExportSignatureInfo(keyId: "262", keyVersion: "v7")])
        #expect(file.signatures.count == 1 && file.signatures[0].batchNum == 1)
        #expect(try file.requireTrustedSignature(KeyFixtures.trust(signer.publicKey, id: "262", version: "v7")).keyId == "262")
        #expect(Array(file.keyBatches().joined()) == keys)
    }

    @Test func batchesAreBoundedAndInOrder() throws {
        let many = (0..<25).map { KeyFixtures.key(UInt8($0), start: 2_650_000 + UInt32($0) * 144) }
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: many)
        let file = try KeyExportFile(parsing: bin)
        #expect(file.container == .bareExport && file.signatures.isEmpty)
        let batches = Array(file.keyBatches(size: 10))
        #expect(batches.map(\.count) == [10, 10, 5])
        #expect(Array(batches.joined()) == many)
    }

    @Test func encodedBatchesDecodeIndependentlyToTheSameKeys() throws {
        let many = (0..<25).map { KeyFixtures.key(UInt8($0), start: 2_650_000 + UInt32($0) * 144, onset: Int32($0) - 12) }
        let file = try KeyExportFile(parsing: try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: many))
        let encoded = file.encodedKeyBatches(size: 10)
        #expect(encoded.map(\.count) == [10, 10, 5])
        // Decoded out of order, each batch is its own slice of the keys.
        var decoded = [[DiagnosisKey]](repeating: [], count: encoded.count)
        for i in encoded.indices.reversed() { decoded[i] = encoded[i].decode() }
        #expect(Array(decoded.joined()) == many)
        #expect(file.encodedRevisedKeyBatches().isEmpty)
    }

    @Test func revisedKeysAreCountedAndStreamedApart() throws {
        var p = ExportProto_TemporaryExposureKeyExport()
        p.keys = [KeyFixtures.protoKey()]
        var revised = KeyFixtures.protoKey(start: 2_650_144)
        revised.reportType = .revoked
        p.revisedKeys = [revised]
        let file = try KeyExportFile(parsing: Data(KeyExportFile.headerBytes) + p.serializedData())
        #expect(file.keyCount == 1 && file.revisedKeyCount == 1)
        #expect(file.revisedKeyBatches().flatMap { $0 }.map(\.reportType) == [.revoked])
        #expect(file.encodedRevisedKeyBatches().flatMap { $0.decode() }.map(\.reportType) == [.revoked])
        #expect(file.encodedKeyBatches().flatMap { $0.decode() }.count == 1)
        #expect(file.keyBatches().flatMap { $0 }.map(\.rollingStartIntervalNumber.rawValue) == [2_650_000])
    }

    @Test func writerRefusesInvalidKeys() {
        #expect(throws: KeyExportWriteError.invalidKey(index: 1, reason: "rolling period 0 is outside 1...144")) {
            try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: [KeyFixtures.key(1), KeyFixtures.key(2, period: 0)])
        }
    }
}

@Suite struct KeyExportHostileInputTests {
    func signedZip(_ keys: [DiagnosisKey] = [KeyFixtures.key(1)]) throws -> (Data, P256PrivateKey) {
        let signer = try P256PrivateKey.generate()
        return (try KeyExportWriter.signedArchive(header: KeyFixtures.header, keys: keys, signingKey: signer, keyId: "id", keyVersion: "1"), signer)
    }

    @Test func oversizedFile() throws {
        let zip = try KeyFixtures.sampleZip
        #expect(throws: KeyExportError.fileTooLarge(size: zip.count, limit: 500)) {
            try KeyExportFile(parsing: zip, limits: KeyExportLimits(maxFileSize: 500))
        }
    }

    @Test func declaredSizeOverTheLimit() throws {
        let zip = try KeyFixtures.sampleZip
        #expect(throws: KeyExportError.entryTooLarge(name: "export.bin", limit: 100, size: 135)) {
            try KeyExportFile(parsing: zip, limits: KeyExportLimits(maxExportSize: 100))
        }
    }

    /// A zip bomb that declares a small size: the limit must hold while inflating.
    @Test func zipBombLyingAboutItsSize() throws {
        let bomb = Data(KeyExportFile.headerBytes) + Data(repeating: 0, count: 4 << 20)
        let zip = try KeyExportWriter.zip([("export.bin", bomb), ("export.sig", Data())])
        #expect(zip.count < 64 << 10) // 4 MiB of zeros deflate to a few KiB
        let lying = KeyFixtures.lieAboutSize(zip, entry: "export.bin", size: 1000)
        expectKeyExportError({ _ = try KeyExportFile(parsing: lying, limits: KeyExportLimits(maxExportSize: 1 << 20)) }) {
            if case .entryTooLarge("export.bin", 1 << 20, let size) = $0 { return size > 1 << 20 } else { return false }
        }
        // Within the limit, the lie is still caught: the inflated size differs from the declared one.
        expectKeyExportError({ _ = try KeyExportFile(parsing: lying) }) {
            if case .malformedArchive(let r) = $0 { return r.contains("inflates to") } else { return false }
        }
    }

    @Test func missingDuplicateAndUnexpectedEntries() throws {
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: [KeyFixtures.key(1)])
        #expect(throws: KeyExportError.missingEntry(name: "export.sig")) {
            try KeyExportFile(parsing: try KeyExportWriter.zip([("export.bin", bin)]))
        }
        #expect(throws: KeyExportError.missingEntry(name: "export.bin")) {
            try KeyExportFile(parsing: try KeyExportWriter.zip([("export.sig", Data())]))
        }
        #expect(throws: KeyExportError.duplicateEntry(name: "export.bin")) {
            try KeyExportFile(parsing: try KeyExportWriter.zip([("export.bin", bin), ("export.sig", Data()), ("export.bin", bin)]))
        }
        #expect(throws: KeyExportError.unexpectedEntry(name: "README")) {
            try KeyExportFile(parsing: try KeyExportWriter.zip([("export.bin", bin), ("export.sig", Data()), ("README", Data("hi".utf8))]))
        }
    }

    @Test func wrongHeader() throws {
        var bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: [KeyFixtures.key(1)])
        bin[11] = UInt8(ascii: "2")
        #expect(throws: KeyExportError.wrongHeader(found: "\"EK Export v2    \"")) {
            try KeyExportFile(parsing: try KeyExportWriter.zip([("export.bin", bin), ("export.sig", Data())]))
        }
        #expect(throws: KeyExportError.unrecognizedFormat(firstBytes: "454b204578706f72")) { try KeyExportFile(parsing: bin) }
    }

    @Test func trailingGarbage() throws {
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: [KeyFixtures.key(1)])
        #expect(throws: KeyExportError.trailingGarbage(entry: "export.bin", offset: bin.count, count: 3)) {
            try KeyExportFile(parsing: bin + Data([0xff, 0xff, 0xff]))
        }
        // Field number 0 can never start a field.
        #expect(throws: KeyExportError.trailingGarbage(entry: "export.bin", offset: bin.count, count: 2)) {
            try KeyExportFile(parsing: bin + Data([0x00, 0x00]))
        }
        let (zip, _) = try signedZip()
        #expect(throws: KeyExportError.trailingGarbage(entry: "archive", offset: zip.count, count: 5)) {
            try KeyExportFile(parsing: zip + Data("junk!".utf8))
        }
    }

    @Test func truncatedExport() throws {
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: [KeyFixtures.key(1)])
        expectKeyExportError({ _ = try KeyExportFile(parsing: bin.dropLast(1)) }) {
            if case .truncated(entry: "export.bin", _) = $0 { return true } else { return false }
        }
    }

    @Test func keyDataNot16Bytes() throws {
        for length in [0, 15, 17] {
            let bin = try KeyFixtures.rawExport(keys: [KeyFixtures.protoKey(), KeyFixtures.protoKey(length: length)])
            #expect(throws: KeyExportError.keyDataLength(list: "keys", index: 1, actual: length)) { try KeyExportFile(parsing: bin) }
        }
    }

    @Test func rollingPeriodOutOfRange() throws {
        for period: Int32 in [0, 145, -1] {
            let bin = try KeyFixtures.rawExport(keys: [KeyFixtures.protoKey(period: period)])
            #expect(throws: KeyExportError.rollingPeriod(list: "keys", index: 0, value: period)) { try KeyExportFile(parsing: bin) }
        }
        // Absent means the proto default, 144.
        let file = try KeyExportFile(parsing: try KeyFixtures.rawExport(keys: [KeyFixtures.protoKey()]))
        #expect(file.keyBatches().flatMap { $0 }.first?.rollingPeriod == 144)
    }

    @Test func negativeRollingStart() throws {
        let bin = try KeyFixtures.rawExport(keys: [KeyFixtures.protoKey(start: -5)])
        #expect(throws: KeyExportError.rollingStartInterval(list: "keys", index: 0, value: -5)) { try KeyExportFile(parsing: bin) }
    }

    func withSignature(_ mutate: (inout ExportProto_TEKSignatureList) -> Void) throws -> (KeyExportFile, P256PrivateKey) {
        let (zip, signer) = try signedZip()
        let file = try KeyExportFile(parsing: zip)
        var list = try ExportProto_TEKSignatureList(serializedBytes: try KeyExportSampleTests.signatureFile(file))
        mutate(&list)
        let rebuilt = try KeyExportWriter.zip([("export.bin", file.exportBin), ("export.sig", try list.serializedData())])
        return (try KeyExportFile(parsing: rebuilt), signer)
    }

    @Test func emptySignature() throws {
        let (file, signer) = try withSignature { $0.signatures[0].signature = Data() }
        #expect(throws: KeyExportError.emptySignature(keyId: "id", keyVersion: "1")) {
            try file.requireTrustedSignature(KeyFixtures.trust(signer.publicKey, id: "id"))
        }
    }

    @Test func badSignature() throws {
        let (file, signer) = try withSignature { $0.signatures[0].signature = try! P256PrivateKey.generate().signature(for: Data("x".utf8)) }
        #expect(throws: KeyExportError.badSignature(keyId: "id", keyVersion: "1")) {
            try file.requireTrustedSignature(KeyFixtures.trust(signer.publicKey, id: "id"))
        }
    }

    @Test func noSignaturesAtAll() throws {
        let (file, signer) = try withSignature { $0.signatures = [] }
        #expect(throws: KeyExportError.noSignatures) { try file.requireTrustedSignature(KeyFixtures.trust(signer.publicKey, id: "id")) }
    }

    @Test func otherAlgorithmOrBatch() throws {
        let (a, signer) = try withSignature { $0.signatures[0].signatureInfo.signatureAlgorithm = "1.2.840.10045.4.3.3" }
        #expect(throws: KeyExportError.unsupportedAlgorithm(keyId: "id", algorithm: "1.2.840.10045.4.3.3")) {
            try a.requireTrustedSignature(KeyFixtures.trust(signer.publicKey, id: "id"))
        }
        let (b, signer2) = try withSignature { $0.signatures[0].batchNum = 2 }
        #expect(throws: KeyExportError.signatureBatchMismatch(keyId: "id", expected: "1/1", actual: "2/1")) {
            try b.requireTrustedSignature(KeyFixtures.trust(signer2.publicKey, id: "id"))
        }
    }

    @Test func notAKeyFileAtAll() {
        #expect(throws: KeyExportError.unrecognizedFormat(firstBytes: "68656c6c6f")) { try KeyExportFile(parsing: Data("hello".utf8)) }
        #expect(throws: KeyExportError.unrecognizedFormat(firstBytes: "")) { try KeyExportFile(parsing: Data()) }
    }
}

@Suite struct KeyExportWriterCompatibilityTests {
    /// The strict ZIP check must still accept what common writers produce for the same two
    /// files: Info-ZIP (Unix host, extra fields, regular-file mode), Python's zipfile with
    /// deflate from files, and Python's writestr (stored, bare permissions without a file type).
    @Test(arguments: ["infozip.zip", "python-zipfile.zip", "python-writestr-stored.zip"])
    func acceptsCommonWriters(_ name: String) throws {
        let file = try KeyExportFile(parsing: try Data(contentsOf: KeyFixtures.url("writers/\(name)")))
        #expect(file.keyCount == 3)
        #expect(file.header.region == "DE")
        #expect(file.signatures.map(\.info.keyId) == ["262"])
        #expect(file.keyBatches().flatMap { $0 }.map(\.key.hexString).first == "000102030405060708090a0b0c0d0e0f")
    }
}

@Suite struct KeyExportWriterZipTests {
    /// The writer's archive (zlib, our own since ZIPFoundation left) is read back by an
    /// independent reader, Python's zipfile, which checks every CRC, with the same bytes.
    @Test func independentReaderReadsTheWriter() throws {
        let bin = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 5) })
        let entries: [(name: String, data: Data)] = [("export.bin", bin), ("export.sig", Data("signature".utf8)), ("empty", Data())]
        let zip = try KeyExportWriter.zip(entries)
        #expect(try KeyExportWriter.zip(entries) == zip) // reproducible
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UInt64.random(in: 0...UInt64.max)).zip")
        try zip.write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None
            for i in z.infolist():
                print(i.filename, i.compress_type, z.read(i).hex())
            """, path.path]
        let pipe = Pipe()
        python.standardOutput = pipe
        try python.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        #expect(python.terminationStatus == 0)
        #expect(output == entries.map { "\($0.name) 8 \($0.data.map { String(format: "%02x", $0) }.joined())\n" }.joined())
        // And our own strict reader takes it.
        let file = try KeyExportContainer.extract(zip: try KeyExportWriter.zip(Array(entries.prefix(2))), limits: KeyExportLimits())
        #expect(file.export == bin && file.signature == Data("signature".utf8))
    }
}
