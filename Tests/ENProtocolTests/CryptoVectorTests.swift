import Foundation
import Testing
@testable import ENProtocol

@Suite struct CryptoVectorTests {
    let v: CryptoVectors
    init() throws { v = try CryptoVectors.load() }

    @Test func keyDerivationMatchesVectors() throws {
        let schedule = try GAENKeySchedule()
        let tek = try TemporaryExposureKey(hex: v.tek)
        #expect(schedule.rollingProximityIdentifierKey(for: tek).hexString == v.rpik)
        #expect(schedule.associatedEncryptedMetadataKey(for: tek).hexString == v.aemk)
        #expect(ENIntervalNumber(unixSeconds: v.key_generation_unix_seconds).rawValue == v.en_interval_number_of_key)
    }

    @Test func all144RPIsAndAEMsMatchVectors() throws {
        #expect(v.advertised.count == 144)
        let schedule = try GAENKeySchedule()
        let tek = try TemporaryExposureKey(hex: v.tek)
        let aemk = schedule.associatedEncryptedMetadataKey(for: tek)
        let metadata = try BluetoothMetadata(bytes: Data(hex: v.ble_metadata))
        let rpis = try schedule.rollingProximityIdentifiers(for: tek, from: ENIntervalNumber(v.en_interval_number_of_key))
        #expect(rpis.count == 144)
        for (i, expected) in v.advertised.enumerated() {
            #expect(expected.en_interval_number == v.en_interval_number_of_key + UInt32(i))
            #expect(rpis[i].hexString == expected.rpi, "RPI of interval index \(i)")
            // Single-interval derivation must agree with the bulk path.
            let single = try schedule.rollingProximityIdentifier(for: tek, interval: ENIntervalNumber(expected.en_interval_number))
            #expect(single == rpis[i])
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(metadata, rpi: rpis[i], aemk: aemk)
            #expect(aem.hexString == expected.aem, "AEM of interval index \(i)")
            let back = try GAENKeySchedule.decryptMetadata(aem, rpi: rpis[i], aemk: aemk)
            #expect(back == metadata)
        }
    }

    @Test func vectorMetadataDecodes() throws {
        let m = try BluetoothMetadata(bytes: Data(hex: v.ble_metadata))
        #expect(m.majorVersion == 1 && m.minorVersion == 0)
        #expect(m.txPower == 8)
        #expect(m.calibrationConfidence == nil)
        #expect(m.isPlausible)
    }
}

@Suite struct CryptoPrimitiveTests {
    @Test func hkdfAgreesWithOpenSSLEVPForManyInputs() throws {
        var rng = SeededRandom(seed: 7)
        for n in 0..<50 {
            let ikm = try rng.bytes(1 + n % 40)
            let salt = try rng.bytes(n % 3 == 0 ? 0 : n % 70)
            let info = try rng.bytes(n % 20)
            let length = 1 + (n * 13) % 100
            let ours = try HKDF.sha256(ikm: ikm, salt: salt, info: info, length: length)
            let openssl = try HKDF.sha256ViaEVP(ikm: ikm, salt: salt, info: info, length: length)
            #expect(ours == openssl, "case \(n)")
        }
    }

    @Test func hkdfRFC5869TestCase1() throws {
        // RFC 5869 Appendix A.1.
        let okm = try HKDF.sha256(ikm: Data(hex: "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"),
                                  salt: Data(hex: "000102030405060708090a0b0c"),
                                  info: Data(hex: "f0f1f2f3f4f5f6f7f8f9"), length: 42)
        #expect(okm.hexString == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test func sha256OfABC() {
        #expect(SHA256.hash(Data("abc".utf8)).hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func gcmRoundTripAndTamperDetection() throws {
        var rng = SeededRandom(seed: 1)
        let key = try rng.bytes(32)
        let aad = Data("scan:42".utf8)
        let plaintext = Data("sightings".utf8)
        let sealed = try AES256GCM.seal(plaintext, key: key, associatedData: aad, random: SecureRandom())
        #expect(sealed.count == plaintext.count + 28)
        #expect(try AES256GCM.open(sealed, key: key, associatedData: aad) == plaintext)
        #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(sealed, key: key, associatedData: Data("scan:43".utf8)) }
        var wrongKey = key; wrongKey[0] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(sealed, key: wrongKey, associatedData: aad) }
        for i in 0..<sealed.count {
            var t = sealed; t[i] ^= 0x80
            #expect(throws: CryptoError.authenticationFailed) { try AES256GCM.open(t, key: key, associatedData: aad) }
        }
        #expect(throws: CryptoError.self) { try AES256GCM.open(Data(count: 27), key: key, associatedData: aad) }
        // Empty plaintext is legal and still authenticated.
        let empty = try AES256GCM.seal(Data(), key: key, associatedData: aad, random: SecureRandom())
        #expect(try AES256GCM.open(empty, key: key, associatedData: aad) == Data())
    }

    @Test func gcmKnownAnswer() throws {
        // NIST GCM test case 14 (AES-256, zero key, zero IV, one zero block).
        let sealed = try AES256GCM.seal(Data(count: 16), key: Data(count: 32), nonce: Data(count: 12), associatedData: Data())
        #expect(sealed.dropFirst(12).hexString == "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919")
    }

    @Test func secureRandomIsNotConstant() throws {
        var r = SecureRandom()
        let a = try r.bytes(16), b = try r.bytes(16)
        #expect(a != b && a.count == 16)
    }

    @Test func keysRedactThemselves() throws {
        let tek = try TemporaryExposureKey(hex: "75c734c6dd1a782de7a965da5eb93125")
        #expect(!"\(tek)".contains("75c7"))
        #expect(!String(reflecting: tek).contains("75c7"))
        let rpik = try GAENKeySchedule().rollingProximityIdentifierKey(for: tek)
        #expect(!"\(rpik)".contains(rpik.hexString.prefix(6)))
        #expect(throws: KeyMaterialError.wrongLength(what: "temporary exposure key", expected: 16, actual: 15)) {
            try TemporaryExposureKey(bytes: Data(count: 15))
        }
    }
}
