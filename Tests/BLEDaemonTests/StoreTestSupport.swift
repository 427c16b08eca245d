import ENProtocol
import Foundation
@testable import BLEDaemon
@testable import GaenStore

/// A throwaway directory with a store key file, removed at deinit.
final class TempStoreDir {
    let url: URL
    let keyPath: String
    let key: StoreKey
    var storePath: String { url.appendingPathComponent("store.sqlite").path }

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-store-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        keyPath = url.appendingPathComponent("store-key").path
        var rng = SecureRandom()
        key = try StoreKey.createFile(at: keyPath, using: &rng)
    }

    func open(_ configure: (inout StoreConfiguration) -> Void = { _ in }) throws -> NodeStore {
        var config = StoreConfiguration(path: storePath, durability: .normal)
        configure(&config)
        return try NodeStore(configuration: config, key: key)
    }

    /// Bytes of the store's files (main file, and the WAL while one exists).
    func storeBytes() throws -> Data {
        var d = try Data(contentsOf: URL(fileURLWithPath: storePath))
        if let wal = try? Data(contentsOf: URL(fileURLWithPath: storePath + "-wal")) { d.append(wal) }
        return d
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

extension Data {
    func contains(_ needle: Data) -> Bool { range(of: needle) != nil }
}
