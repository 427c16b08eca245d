import Foundation
import Testing
@testable import ENProtocol

@Suite struct ECDSATests {
    @Test func signVerifyAndPEMRoundTrip() throws {
        let key = try P256PrivateKey.generate()
        let message = Data("EK Export v1    hello".utf8)
        let sig = try key.signature(for: message)
        #expect(sig.count <= 72 && sig.first == 0x30) // DER SEQUENCE
        #expect(try key.publicKey.isValidSignature(sig, for: message))
        #expect(try !key.publicKey.isValidSignature(sig, for: message + Data([0])))

        let reloadedPublic = try P256PublicKey(pem: try key.publicKey.pemRepresentation)
        #expect(try reloadedPublic.isValidSignature(sig, for: message))
        let reloadedPrivate = try P256PrivateKey(pem: try key.pemRepresentation)
        #expect(try reloadedPublic.isValidSignature(try reloadedPrivate.signature(for: message), for: message))
    }

    @Test func malformedSignaturesAreInvalidNotErrors() throws {
        let key = try P256PrivateKey.generate()
        let message = Data("m".utf8)
        var sig = try key.signature(for: message)
        #expect(try !key.publicKey.isValidSignature(Data(), for: message))
        #expect(try !key.publicKey.isValidSignature(Data(repeating: 0x30, count: 73), for: message))
        #expect(try !key.publicKey.isValidSignature(Data([0x30, 0x02, 0x02, 0x00]), for: message))
        sig[sig.count - 1] ^= 1
        #expect(try !key.publicKey.isValidSignature(sig, for: message))
    }

    @Test func descriptionsNeverShowKeys() throws {
        let key = try P256PrivateKey.generate()
        #expect("\(key)" == "P256PrivateKey(<redacted>)")
        #expect(String(reflecting: key) == "P256PrivateKey(<redacted>)")
    }

    @Test func rejectsOtherCurvesGarbageAndEncryptedKeys() throws {
        let p384 = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEEhdhFSz6lFCNXYVKGeS4jOPRpQ6KkAx4
        9Oj0iwuFBwIoJtNKWJ1ceMtiWzPNzE+ds5a1Ir+YR565uL2fsezUPk4wCR2YG2gC
        KUEdJpK+1GyqyYETEgQKAUqoLzRYiZ/m
        -----END PUBLIC KEY-----
        """
        #expect(throws: ECDSAError.wrongKeyType(expected: "EC P-256", actual: "EC secp384r1")) { try P256PublicKey(pem: p384) }
        #expect { try P256PublicKey(pem: "not a key") } throws: { e in
            if case ECDSAError.invalidPEM(what: "public key", _) = e { return true } else { return false }
        }
        #expect(throws: ECDSAError.inputTooLarge(what: "public key PEM", limit: 65536, actual: 70000)) {
            try P256PublicKey(pem: String(repeating: "A", count: 70000))
        }
        // Encrypted: refused, never a passphrase prompt (the test would hang).
        let encrypted = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAgQjUSERuZ16gICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEECROGL8U4iXjsgYAHIOtlngEgZA5
        96L7I/NMh3nVt2k8TasZU1PxzN3U03Q04+R3SjU3mWC6CHiIWny/JQTo1s3Fxd0+
        JeyyNEDXzwtZN3Paq1t+BqOaWXFNtK6+AR90bjZJXimfUuKCJLTR8djWB0zeQuoM
        wuwwfOf9bydFYIpGzNgXeX2uPeqX8ZNldjoKmC9Psj14VxM7RCn+jGsrdCAU9Mk=
        -----END ENCRYPTED PRIVATE KEY-----
        """
        #expect { try P256PrivateKey(pem: encrypted) } throws: { e in
            if case ECDSAError.invalidPEM(what: "private key", _) = e { return true } else { return false }
        }
        // A public key is not a private key.
        let pub = try P256PrivateKey.generate().publicKey.pemRepresentation
        #expect(throws: ECDSAError.self) { try P256PrivateKey(pem: pub) }
    }
}
