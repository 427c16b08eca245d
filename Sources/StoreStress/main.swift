// Test helper for the kill -9 test (Tests/BLEDaemonTests/StoreCrashTests.swift): writes
// numbered scan records (and a key per simulated day) into a store in a loop and prints
// "committed N" after each commit, until it is killed. Not installed; not a tool.
//
// usage: StoreStress STORE KEYFILE
//
// Also writes and reads the compatibility fixture store (scripts/gen-store-fixture.sh):
// usage: StoreStress --fixture DIR       (a new store DIR/store.sqlite with StoreFixture's contents; TEKs to DIR/teks.txt)
//        StoreStress --fixture-read DIR  (opens it and reads every scan: a tampered one is quarantined)
import ENProtocol
import Foundation
import StoreFixtures
import GaenStore

let args = CommandLine.arguments
if args.count == 3, args[1] == "--fixture" || args[1] == "--fixture-read" {
    do {
        let key = try StoreKey(bytes: Data(hex: StoreFixture.keyHex))
        let store = try NodeStore(configuration: StoreConfiguration(path: args[2] + "/store.sqlite", maximumBytes: nil), key: key)
        if args[1] == "--fixture" {
            let keys = try StoreFixture.write(to: store)
            let text = keys.map { "\($0.day.rawValue) \($0.key.bytes.hexString)\n" }.joined()
            try Data(text.utf8).write(to: URL(fileURLWithPath: args[2] + "/teks.txt"))
        } else {
            let scans = try store.scans(from: -.infinity, to: .infinity)
            print("read \(scans.count) scans; quarantined \(store.losses().quarantined)")
        }
        try store.close()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("StoreStress: \(error)\n".utf8))
        exit(1)
    }
}
guard args.count == 3 else {
    FileHandle.standardError.write(Data("usage: StoreStress STORE KEYFILE\n".utf8))
    exit(2)
}
do {
    let store = try NodeStore(configuration: StoreConfiguration(path: args[1]), key: StoreKey.load(file: args[2]))
    var n = try store.counts().scans
    while true {
        n += 1
        let record = StressRecords.scan(number: n)
        try store.recordScan(record)
        if n % 10 == 0 { _ = try store.key(for: UTCDay(Int32(20_000 + n / 10)), now: record.start) }
        FileHandle.standardOutput.write(Data("committed \(n)\n".utf8)) // unbuffered: the parent reads it before the kill
    }
} catch {
    FileHandle.standardError.write(Data("StoreStress: \(error)\n".utf8))
    exit(1)
}
