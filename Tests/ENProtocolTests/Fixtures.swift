import Foundation

/// Test fixtures copied into the repository (tests must pass without ../shared).
enum Fixtures {
    static func url(_ path: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent("Fixtures").appendingPathComponent(path)
    }
    static func data(_ path: String) throws -> Data { try Data(contentsOf: url(path)) }
}

/// The published GAEN crypto vectors (Google's exposure-notifications-internals TestVectors.java).
struct CryptoVectors: Decodable {
    struct Advertised: Decodable {
        var interval_index: Int
        var en_interval_number: UInt32
        var rpi: String
        var aem: String
    }
    var tek: String
    var rpik: String
    var aemk: String
    var ble_metadata: String
    var en_interval_number_of_key: UInt32
    var key_generation_unix_seconds: Int64
    var advertised: [Advertised]

    static func load() throws -> CryptoVectors {
        try JSONDecoder().decode(CryptoVectors.self, from: Fixtures.data("gaen-crypto-vectors.json"))
    }
}
