// Test helper for the kill -9 test (Tests/BLEDaemonTests/StoreCrashTests.swift): writes
// numbered scan records (and a key per simulated day) into a store in a loop and prints
// "committed N" after each commit, until it is killed. Not installed; not a tool.
//
// usage: StoreStress STORE KEYFILE
import BLEDaemon
import ENProtocol
import Foundation

let args = CommandLine.arguments
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
