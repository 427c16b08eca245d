import BenchSupport
import ENProtocol
import Foundation
import HCIHost
import StoreFixtures
import GaenStore
#if canImport(Glibc)
import Glibc
#endif

/// Sighting ingestion into the encrypted store: one record per scan holding N reports, as the
/// scanner writes them (encode, AES-256-GCM seal, SQLite insert and commit). Single-threaded,
/// so the figure is for one core. The HCI decode and scanner stages are added in front later.
///
/// usage: GaenStoreBench ingest [--reports 1,10,50,100,300] [--seconds S] [--durability full|normal|both] [--dir DIR]
enum IngestBench {
    static func run(_ args: [String]) throws {
        var reportCounts = [1, 10, 50, 100, 300]
        var seconds = 2.0
        var durabilities: [StoreConfiguration.Durability] = [.full, .normal]
        var base = FileManager.default.temporaryDirectory.path
        try parseBenchOptions(args, [
            "--reports": { reportCounts = $0.split(separator: ",").compactMap { Int($0) } },
            "--seconds": { seconds = Double($0) ?? seconds },
            "--durability": { durabilities = $0 == "both" ? [.full, .normal] : [StoreConfiguration.Durability(rawValue: $0) ?? .full] },
            "--dir": { base = $0 },
        ])
        let dir = (base as NSString).appendingPathComponent("gaend-ingest-\(getpid())")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var random = SecureRandom()
        let key = try StoreKey.random(using: &random)
        print("ingest: one encrypted record per scan into \(dir)")
        print("durability  reports/scan     scans   reports   seconds  cpu-s    scans/s    reports/s  reports/cpu-s  read rep/s")
        for durability in durabilities {
            for n in reportCounts {
                let path = (dir as NSString).appendingPathComponent("store-\(durability.rawValue)-\(n).sqlite")
                let store = try NodeStore(configuration: StoreConfiguration(path: path, maximumBytes: nil, durability: durability), key: key)
                let records = (1...64).map { StressRecords.scan(number: $0, reports: n) }
                // Warm up (file creation, first pages).
                for r in records.prefix(4) { try store.recordScan(r) }
                let cpu0 = ProcessUsage.cpuSeconds()
                let t0 = DispatchTime.now().uptimeNanoseconds
                var scans = 0
                var elapsed = 0.0
                while elapsed < seconds {
                    for r in records.prefix(8) { try store.recordScan(r) }
                    scans += 8
                    elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
                }
                let cpu = ProcessUsage.cpuSeconds() - cpu0
                // Read-back (decrypt everything), as matching and export do.
                let r0 = DispatchTime.now().uptimeNanoseconds
                let back = try store.scans(from: -.infinity, to: .infinity)
                let readSeconds = Double(DispatchTime.now().uptimeNanoseconds - r0) / 1e9
                let readReports = back.reduce(0) { $0 + $1.sightings.count }
                try store.close()
                let reports = scans * n
                print(String(format: "%-10@  %12d  %8d  %8d  %8.2f  %5.2f  %9.0f  %11.0f  %13.0f  %11.0f",
                             durability.rawValue as NSString, n, scans, reports, elapsed, cpu,
                             Double(scans) / elapsed, Double(reports) / elapsed, Double(reports) / cpu,
                             Double(readReports) / readSeconds))
            }
        }
    }
}
