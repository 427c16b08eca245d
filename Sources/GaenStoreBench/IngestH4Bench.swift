import BLEDaemon
import BenchSupport
import ENProtocol
import Foundation
import HCIHost
import HCIProtocol
import GaenStore

/// The whole sighting path on one core, fed from a recorded H4 stream: the H4 framer, the HCI
/// event decoder, the scanner's GAEN filter (0xFD6F parse into a Sighting), grouping into scans
/// and one encrypted store record per scan. The stream is recorded once in memory (LE
/// Advertising Report events, one report each as controllers send them, from 200 advertisers,
/// with a non-GAEN advertiser mixed in that the filter must drop), then replayed in 4 KiB reads.
///
/// usage: GaenStoreBench ingest-h4 [--reports-per-scan N] [--seconds S]
enum IngestH4Bench {
    static func run(_ args: [String]) throws {
        var perScan = 300
        var seconds = 3.0
        try parseBenchOptions(args, [
            "--reports-per-scan": { perScan = Int($0) ?? perScan },
            "--seconds": { seconds = Double($0) ?? seconds },
        ])
        let stream = try recordedStream(events: 20_000)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-ingest-h4-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var random = SecureRandom()
        let store = try NodeStore(configuration: StoreConfiguration(path: dir + "/store.sqlite", maximumBytes: nil, durability: .full),
                                  key: try StoreKey.random(using: &random))
        print("ingest-h4: H4 framer -> event decoder -> GAEN filter -> one encrypted record per \(perScan) reports")
        let cpu0 = ProcessUsage.cpuSeconds()
        let t0 = DispatchTime.now().uptimeNanoseconds
        var reports = 0, kept = 0, scans = 0, elapsed = 0.0
        var framer = H4Framer()
        var current: [Sighting] = []
        var clock = 1_795_000_000.0
        while elapsed < seconds {
            var offset = 0
            while offset < stream.count {
                let end = min(offset + 4096, stream.count)
                framer.append(stream[offset..<end])
                offset = end
                while case let .packet(packet) = try framer.next() {
                    guard case let .leMeta(meta) = try HCIEvent(packet: packet) else { continue }
                    for report in LEAdvertisingReport.reports(in: meta) {
                        reports += 1
                        clock += 0.001
                        guard let s = Sighting(report: report, time: clock) else { continue }
                        kept += 1
                        current.append(s)
                        if current.count == perScan {
                            _ = try store.recordScan(Scan(start: current[0].time, end: clock, sightings: current))
                            current.removeAll(keepingCapacity: true)
                            scans += 1
                        }
                    }
                }
            }
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        }
        let cpu = ProcessUsage.cpuSeconds() - cpu0
        try store.close()
        print(String(format: "reports %d (GAEN %d, dropped %d), scans stored %d, wall %.2f s, cpu %.2f s", reports, kept, reports - kept, scans, elapsed, cpu))
        print(String(format: "reports/s (wall) %.0f   reports per cpu-second %.0f   goal >= 50000/s", Double(reports) / elapsed, Double(reports) / cpu))
    }

    /// LE Advertising Report events (Core spec Vol 4 Part E 7.7.65.2) as a controller sends them.
    static func recordedStream(events: Int) throws -> [UInt8] {
        let schedule = try GAENKeySchedule()
        var rng = SeededRandom(seed: 42)
        var advertisers: [(address: [UInt8], data: [UInt8])] = []
        for n in 0..<200 {
            let tek = try TemporaryExposureKey(bytes: rng.bytes(16))
            let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: ENIntervalNumber(2_992_000 + UInt32(n)))
            let aem = try AssociatedEncryptedMetadata(bytes: rng.bytes(4))
            let data = [UInt8](ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData)
            var address = [UInt8](try rng.bytes(6)); address[5] &= 0x3F
            advertisers.append((address, data))
        }
        // Someone else's beacon (flags + a manufacturer structure): decoded, then filtered out.
        advertisers.append(([1, 2, 3, 4, 5, 0x46], [0x02, 0x01, 0x06, 0x05, 0xFF, 0x4C, 0x00, 0x01, 0x02]))
        var stream: [UInt8] = []
        for e in 0..<events {
            let a = advertisers[e % advertisers.count]
            let rssi = UInt8(bitPattern: Int8(-40 - (e % 50)))
            let parameters: [UInt8] = [0x02, 0x01, 0x03, 0x01] + a.address + [UInt8(a.data.count)] + a.data + [rssi]
            stream += [0x04, 0x3E, UInt8(parameters.count)] + parameters
        }
        return stream
    }
}
