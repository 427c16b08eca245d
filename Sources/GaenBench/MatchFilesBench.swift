import BenchSupport
import ENProtocol
import Foundation

/// `GaenBench match-files DIR [--keys N] [--sightings N]`: writes the inputs of the
/// whole-process `gaenctl match` benchmark: DIR/keys.zip (N signed diagnosis keys over 14 days,
/// default 1,000,000), DIR/public.pem (its key, id "bench"), DIR/sightings.csv (default 200,000
/// rows: RPIs seen four times each, one scan every ~4 minutes, with the RPIs of one key in a
/// thousand among them so that keys match). Then time, for instance:
///   gaenctl match --sightings DIR/sightings.csv --keys DIR/keys.zip --trust bench=DIR/public.pem --workers 1
enum MatchFilesBench {
    static func run(_ arguments: [String]) throws {
        guard let dir = arguments.first else { throw BenchError.usage("usage: GaenBench match-files DIR [--keys N] [--sightings N]") }
        var keyCount = 1_000_000, sightingCount = 200_000
        var it = arguments.dropFirst().makeIterator()
        while let a = it.next() {
            guard let v = it.next().flatMap(Int.init) else { throw BenchError.usage("\(a) needs an integer") }
            switch a {
            case "--keys": keyCount = v
            case "--sightings": sightingCount = v
            default: throw BenchError.usage("unknown option \(a)")
            }
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let days = 14
        let firstDay = UTCDay(isoDate: "2026-11-01")!
        let stream = MatchBench.KeyStream(seed: 0x6a65_6e64, days: days, firstDay: firstDay, presentEvery: 1000)
        let keys = stream.batch(from: 0, count: keyCount)
        let signer = try P256PrivateKey.generate()
        let zip = try KeyExportWriter.signedArchive(
            header: KeyExportHeader(startTimestamp: UInt64(firstDay.unixSeconds), endTimestamp: UInt64(firstDay.advanced(by: days).unixSeconds), region: "XX"),
            keys: keys, signingKey: signer, keyId: "bench", keyVersion: "1")
        try zip.write(to: URL(fileURLWithPath: dir + "/keys.zip"))
        try signer.publicKey.pemRepresentation.write(toFile: dir + "/public.pem", atomically: true, encoding: .utf8)

        // Sightings: per RPI four reports 230 s apart (one per scan), as a busy site records them.
        let schedule = try GAENKeySchedule()
        var rng = SeededRandom(seed: 42)
        var rows: [(time: Double, line: String)] = []
        rows.reserveCapacity(sightingCount)
        let start = Double(firstDay.unixSeconds), span = Double(days * 86_400 - 1200)
        func add(_ rpi: String, _ aem: String, _ t: Double) {
            for k in 0..<4 where rows.count < sightingCount {
                let time = t + Double(k * 230)
                let scan = (time / 230).rounded(.down) * 230
                rows.append((time, String(format: "%.3f,%@,%@,%d,%.3f,%.3f,0,bench,hall", time, rpi, aem, -60 - Int(rng.next() % 30), scan, scan + 4)))
            }
        }
        var i = 0, present = 0
        while i < keyCount && present < sightingCount / 40 {
            let key = keys[i]
            let aemk = schedule.associatedEncryptedMetadataKey(for: key.key)
            let j = key.rollingStartIntervalNumber.advanced(by: Int(rng.next() % 140))
            let rpi = try schedule.rollingProximityIdentifier(for: key.key, interval: j)
            let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_1(txPower: -20, calibrationConfidence: .medium), rpi: rpi, aemk: aemk)
            add(rpi.hexString, aem.hexString, Double(j.unixSeconds) + 30)
            present += 1
            i += stream.presentEvery
        }
        while rows.count < sightingCount {
            let rpi = String(format: "%016llx%016llx", rng.next(), rng.next())
            add(rpi, String(format: "%08x", UInt32(truncatingIfNeeded: rng.next())), start + Double(rng.next() % UInt64(span)))
        }
        rows.sort { $0.time < $1.time }
        var csv = "time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site\n"
        csv.reserveCapacity(rows.count * 110)
        for r in rows { csv += r.line; csv += "\n" }
        try csv.write(toFile: dir + "/sightings.csv", atomically: true, encoding: .utf8)
        print("match-files: \(dir)/keys.zip (\(keyCount) keys, \(zip.count) bytes), \(dir)/public.pem, \(dir)/sightings.csv (\(rows.count) rows, \(present) keys present)")
    }
}
