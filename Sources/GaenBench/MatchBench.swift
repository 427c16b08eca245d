import BenchSupport
import CGaenCrypto
import COpenSSL
import ENProtocol
import Foundation
import MatchingRuntime

/// `GaenBench match`: diagnosis keys spread over 14 days against 14 days of sightings from a
/// busy site. Prints keys per second on one core and on all cores, peak memory after 100k and
/// after 1M keys (it must not grow with keys), and the machine's AES-128-ECB ceiling expressed
/// as keys per second (blocks per second / 144) with the ratio to it.
///
/// Keys reach the matcher as gaend and `gaenctl match` give them to it: encoded as export.bin
/// entries, in parts that the matcher's threads take in turn for the whole run (one barrier, at
/// the end). Each part is built from a seeded generator on the thread that takes it (a few
/// percent of the time; counted in keys/s like the matcher's own decoding) and dropped after
/// matching, as a key file's parts are.
enum MatchBench {
    struct Options {
        var keys = 1_000_000
        var smallKeys = 100_000
        var rpis = 200_000
        var days = 14
        var sightingsPerRPI = 4
        var part = ExposureMatcher.partSize
        var workers = ProcessInfo.processInfo.activeProcessorCount
        var presentKeys = 1_000
        var crypto = MatchCrypto.fastest
    }

    static func run(_ arguments: [String]) throws {
        var o = Options()
        var it = arguments.makeIterator()
        while let a = it.next() {
            func value() -> Int { Int(it.next() ?? "") ?? { fatalError("\(a) needs an integer") }() }
            switch a {
            case "--keys": o.keys = value()
            case "--small-keys": o.smallKeys = value()
            case "--rpis": o.rpis = value()
            case "--days": o.days = value()
            case "--workers": o.workers = value()
            case "--part": o.part = value()
            case "--crypto":
                let name = it.next() ?? ""
                guard let c = MatchCrypto(named: name), c.isSupported else {
                    print("--crypto \(name): unknown or not supported here (portable, fastest, or one of \(MatchCrypto.allSupported))"); return
                }
                o.crypto = c
            default:
                print("usage: GaenBench match [--keys N] [--small-keys N] [--rpis N] [--days N] [--workers N] [--part N] [--crypto NAME]")
                return
            }
        }
        print("match benchmark: \(o.keys) keys over \(o.days) days, \(o.rpis) distinct RPIs (\(o.sightingsPerRPI) sightings each), parts of \(o.part) keys, \(o.workers) cores")

        let firstDay = UTCDay(isoDate: "2026-11-01")!
        let keys = KeyStream(seed: 0x6a65_6e64, days: o.days, firstDay: firstDay, presentEvery: max(1, o.keys / o.presentKeys))

        // Sightings: random RPIs plus the RPIs of the "present" keys (so that some keys match).
        var t0 = Date()
        let sightings = try makeSightings(o, keys: keys, firstDay: firstDay)
        let index = SightingIndex(sightings: sightings, tableSeed: try SightingIndex.randomTableSeed())
        print(String(format: "index: %d sightings, %d distinct RPIs, ~%.1f MB, built in %.2f s; peak RSS %.1f MB",
                     index.sightings.count, index.distinctRPICount, Double(index.approximateBytes) / 1e6,
                     Date().timeIntervalSince(t0), peakRSSMegabytes()))

        // Ceilings, per CPU-second on one core: OpenSSL's EVP over 144 blocks with one key, and
        // the fastest AES this CPU has (VAES here) with a key expansion per 144 blocks, as the
        // matcher needs it. The matcher's rates are printed as a share of both.
        let evpCeiling = aesCeilingKeysPerSecond()
        let best = MatchCrypto.fastest
        let hwCeiling = best.aes == .evp ? evpCeiling : hardwareCeilingKeysPerSecond(best.aes)
        print(String(format: "AES-128 ceilings (one core, per CPU-second): OpenSSL EVP ECB %.0f blocks/s = %.0f keys/s; %@ (key expansion + 144 blocks) %.0f keys/s",
                     evpCeiling * 144, evpCeiling, "\(best.aes)" as NSString, hwCeiling))
        for crypto in [o.crypto, .portable] {
            let deriveOnly = deriveOnlyKeysPerSecond(keys: 200_000, crypto: crypto)
            print(String(format: "key schedule only, %@ (HKDF + 144 AES blocks, one core): %.0f keys/s (%.0f%% of the %@ ceiling, %.0f%% of EVP's)",
                         crypto.description as NSString, deriveOnly, 100 * deriveOnly / hwCeiling, "\(best.aes)" as NSString, 100 * deriveOnly / evpCeiling))
        }
        let ceiling = (hardware: hwCeiling, evp: evpCeiling, name: "\(best.aes)")

        // The encoded keys are the generator's keys.
        let check = keys.encoded(from: 0, count: 100).decode()
        precondition(check.count == 100 && check.enumerated().allSatisfy { $0.element == keys.key($0.offset) }, "encoded keys differ from the generator's")

        // Memory must not grow with keys: 100k keys, then 1M keys, peak RSS after each.
        print("matcher path: \(o.crypto) (portable path: \(MatchCrypto.portable))")
        let small = try runKeys(o.smallKeys, workers: 1, keys: keys, index: index, part: o.part, crypto: o.crypto)
        report("1 core, \(o.smallKeys) keys", small, ceiling: ceiling)
        t0 = Date()
        let one = try runKeys(o.keys, workers: 1, keys: keys, index: index, part: o.part, crypto: o.crypto)
        report("1 core, \(o.keys) keys", one, ceiling: ceiling)
        let all = try runKeys(o.keys, workers: o.workers, keys: keys, index: index, part: o.part, crypto: o.crypto)
        report("\(o.workers) cores, \(o.keys) keys", all, ceiling: ceiling)
        reportThreads("1 core", one, oneCore: one)
        reportThreads("\(o.workers) cores", all, oneCore: one)
        let portable = try runKeys(o.keys, workers: 1, keys: keys, index: index, part: o.part, crypto: .portable)
        report("portable path (\(MatchCrypto.portable)), 1 core, \(o.keys) keys", portable, ceiling: ceiling)
        precondition(portable.statistics == one.statistics && all.statistics == one.statistics, "paths disagree")
        print(String(format: "all cores: %.2fx the one-core wall rate (goal >= 1.9x; on a shared machine the wall rates depend on its load: %.2f load average)",
                     all.keysPerSecond / one.keysPerSecond, loadAverage()))
        print(String(format: "goal >= 1,500,000 keys per CPU-second on one core: %@ (%.0f keys per CPU-second, %.0f%% of the %@ ceiling, %.0f%% of EVP's; %.0f wall keys/s with the machine's load); portable path %.0f keys per CPU-second",
                     one.keysPerCPUSecond >= 1_500_000 ? "met" : "NOT met", one.keysPerCPUSecond,
                     100 * one.keysPerCPUSecond / ceiling.hardware, ceiling.name as NSString, 100 * one.keysPerCPUSecond / ceiling.evp,
                     one.keysPerSecond, portable.keysPerCPUSecond))
    }

    struct RunResult {
        var seconds: Double
        /// CPU seconds of the whole process over the same calls: on a shared machine, wall time
        /// includes waiting for the core; keys per CPU-second shows what the code does per core.
        var cpuSeconds: Double
        var statistics: MatchStatistics
        var peakMB: Double
        var profile: RunProfile?
        var keysPerSecond: Double { Double(statistics.keys) / seconds }
        var keysPerCPUSecond: Double { Double(statistics.keys) / cpuSeconds }
    }

    static func report(_ label: String, _ r: RunResult, ceiling: (hardware: Double, evp: Double, name: String)) {
        let s = r.statistics
        print(String(format: "%@: %.0f keys/s wall (%.2f s), %.0f keys per CPU-second (%.2f CPU s) = %.0f%% of the one-core %@ ceiling, %.0f%% of EVP's; %d skipped, %d matched keys, %d matches (%d implausible TX); peak RSS %.1f MB",
                     label, r.keysPerSecond, r.seconds, r.keysPerCPUSecond, r.cpuSeconds, 100 * r.keysPerCPUSecond / ceiling.hardware,
                     ceiling.name as NSString, 100 * r.keysPerCPUSecond / ceiling.evp,
                     s.keysSkipped, s.keysMatched, s.matches, s.implausibleTxPower, r.peakMB))
    }

    static func runKeys(_ n: Int, workers: Int, keys: KeyStream, index: SightingIndex, part: Int, crypto: MatchCrypto) throws -> RunResult {
        let matcher = ExposureMatcher(index: index, workers: workers, threads: .system, crypto: crypto)
        let parts = (n + part - 1) / part
        let start = DispatchTime.now().uptimeNanoseconds, cpuStart = ProcessUsage.cpuSeconds()
        let result = try matcher.match(parts: parts) { i in
            let first = i * part
            return (keys.encoded(from: first, count: min(part, n - first)), first)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = ProcessUsage.cpuSeconds() - cpuStart
        return RunResult(seconds: seconds, cpuSeconds: cpu, statistics: result.statistics, peakMB: peakRSSMegabytes(), profile: matcher.lastRun)
    }

    /// Where the threads of a run spent it: on a core, waiting for one (the machine's load),
    /// and idle (nothing to do: a late start, or waiting at the end for the last part). Idle
    /// time is what the run's structure costs; waiting is what the other processes cost.
    static func reportThreads(_ label: String, _ r: RunResult, oneCore: RunResult) {
        guard let p = r.profile, let p1 = oneCore.profile else { return }
        func ms(_ x: Double) -> String { String(format: "%.1f", x * 1000) }
        let t = p.threads
        print("\(label): \(p.parts) parts, \(t.count) threads, \(p.barriers) barrier; per thread (ms): on a core \(t.map { ms($0.onCPU) }.joined(separator: " / ")), waiting for a core \(t.map { ms($0.waitingForCPU) }.joined(separator: " / ")), idle \(t.map { ms($0.idle(runWall: p.wall)) }.joined(separator: " / ")) (of which late start \(t.map { ms($0.startDelay) }.joined(separator: " / ")), done before the last part \(t.map { ms(max($0.idleAtEnd, $0.barrierWait)) }.joined(separator: " / "))); parts taken \(t.map { String($0.parts) }.joined(separator: " / "))")
        // Without other processes the waiting disappears: each thread's time is its time on a
        // core plus its idle time, and the run lasts their mean.
        let one = p1.onCPU + p1.idle
        let all = (p.onCPU + p.idle) / Double(t.count)
        print(String(format: "%@: idle %.1f%% of the threads' time; extra time on a core vs one core %+.1f%%; without the machine's load this run would take %.3f s against %.3f s on one core: %.2fx (the wall ratio the goal asks for, projected from the kernel's per-thread accounting)",
                     label as NSString, 100 * p.idle / (p.wall * Double(t.count)), 100 * (p.onCPU / p1.onCPU - 1), all, one, one / all))
    }

    /// A reproducible stream of diagnosis keys: key i is a function of (seed, i), so batches can
    /// be regenerated without keeping any. Every `presentEvery`-th key belongs to a visitor whose
    /// RPIs are in the sightings.
    struct KeyStream {
        var seed: UInt64
        var days: Int
        var firstDay: UTCDay
        var presentEvery: Int

        /// Key i's TEK words and day.
        func words(_ i: Int) -> (UInt64, UInt64, UTCDay) {
            var rng = SeededRandom(seed: seed ^ UInt64(i) &* 0x9E37_79B9_7F4A_7C15)
            let a = rng.next(), b = rng.next()
            return (a, b, firstDay.advanced(by: Int(rng.next() % UInt64(days))))
        }

        func key(_ i: Int) -> DiagnosisKey {
            let (a, b, day) = words(i)
            var bytes = Data(count: 16)
            bytes.withUnsafeMutableBytes { p in
                p.storeBytes(of: a, toByteOffset: 0, as: UInt64.self)
                p.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
            }
            return DiagnosisKey(key: try! TemporaryExposureKey(bytes: bytes), rollingStartIntervalNumber: day.firstInterval,
                                rollingPeriod: 144, reportType: .confirmedTest, daysSinceOnsetOfSymptoms: 0)
        }

        func batch(from start: Int, count: Int) -> [DiagnosisKey] { (start..<(start + count)).map(key) }

        /// Keys start..<start+count as export.bin `keys` entries, in the field order servers
        /// write: key_data (1), rolling_start_interval_number (3), rolling_period (4),
        /// report_type (5), days_since_onset_of_symptoms (6).
        func encoded(from start: Int, count: Int) -> EncodedKeyBatch {
            // Written through a raw pointer: the bench's own work should stay small beside
            // the matcher's (about 20 ns a key).
            var data = Data(count: count * 40)
            let used = data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) -> Int in
                let out = raw.bindMemory(to: UInt8.self).baseAddress!
                var n = 0
                func varint(_ v: UInt64) {
                    var v = v
                    while v >= 0x80 { out[n] = UInt8(v & 0x7f) | 0x80; n += 1; v >>= 7 }
                    out[n] = UInt8(v); n += 1
                }
                for i in start..<(start + count) {
                    let (a, b, day) = words(i)
                    let interval = UInt64(day.firstInterval.rawValue)
                    var length = 18 + 1 + 3 + 2 + 2 // fields 1, 4, 5, 6 and the tag of 3
                    var v = interval
                    repeat { length += 1; v >>= 7 } while v > 0
                    out[n] = 0x3a; n += 1; varint(UInt64(length)) // keys (7), length-delimited
                    out[n] = 0x0a; out[n + 1] = 16; n += 2
                    UnsafeMutableRawPointer(out + n).storeBytes(of: a.littleEndian, as: UInt64.self)
                    UnsafeMutableRawPointer(out + n + 8).storeBytes(of: b.littleEndian, as: UInt64.self)
                    n += 16
                    out[n] = 0x18; n += 1; varint(interval)
                    out[n] = 0x20; out[n + 1] = 0x90; out[n + 2] = 0x01 // rolling_period 144
                    out[n + 3] = 0x28; out[n + 4] = 1 // report_type CONFIRMED_TEST
                    out[n + 5] = 0x30; out[n + 6] = 0 // days_since_onset_of_symptoms 0
                    n += 7
                }
                return n
            }
            data.count = used
            return EncodedKeyBatch(keyEntries: data, count: count)
        }
    }

    static func makeSightings(_ o: Options, keys: KeyStream, firstDay: UTCDay) throws -> [Sighting] {
        var rng = SeededRandom(seed: 42)
        var out: [Sighting] = []
        out.reserveCapacity(o.rpis * o.sightingsPerRPI)
        let schedule = try GAENKeySchedule()
        let start = Double(firstDay.unixSeconds), span = Double(o.days * 86_400)
        func add(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, at t: Double) {
            for k in 0..<o.sightingsPerRPI {
                // A scan every ~4 minutes while the RPI is on air (about 15 minutes).
                out.append(Sighting(time: t + Double(k * 230), rpi: rpi, aem: aem, rssi: -60 - Int(rng.next() % 30)))
            }
        }
        var present = 0
        var i = 0
        while i < o.keys && present < o.rpis / 10 {
            let key = keys.key(i)
            let aemk = schedule.associatedEncryptedMetadataKey(for: key.key)
            // Three consecutive intervals of the visitor's day.
            let j = key.rollingStartIntervalNumber.advanced(by: Int(rng.next() % 140))
            for k in 0..<3 {
                let rpi = try schedule.rollingProximityIdentifier(for: key.key, interval: j.advanced(by: k))
                let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_1(txPower: -20, calibrationConfidence: .medium), rpi: rpi, aemk: aemk)
                add(rpi: rpi, aem: aem, at: Double(j.advanced(by: k).unixSeconds) + 30)
                present += 1
            }
            i += keys.presentEvery
        }
        for _ in present..<o.rpis {
            var b = Data(count: 16)
            b.withUnsafeMutableBytes { p in
                p.storeBytes(of: rng.next(), toByteOffset: 0, as: UInt64.self)
                p.storeBytes(of: rng.next(), toByteOffset: 8, as: UInt64.self)
            }
            let aem = try AssociatedEncryptedMetadata(bytes: Data([UInt8(rng.next() & 0xff), 1, 2, 3]))
            add(rpi: try RollingProximityIdentifier(bytes: b), aem: aem, at: start + Double(rng.next() % UInt64(span - 1200)))
        }
        return out
    }

    /// Raw OpenSSL AES-128-ECB throughput on one core over 144-block buffers (one key), in keys/s.
    static func aesCeilingKeysPerSecond() -> Double {
        guard let ctx = EVP_CIPHER_CTX_new() else { return .nan }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var key = [UInt8](repeating: 7, count: 16)
        EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nil, &key, nil)
        EVP_CIPHER_CTX_set_padding(ctx, 0)
        var input = [UInt8](repeating: 1, count: 144 * 16)
        var output = [UInt8](repeating: 0, count: 144 * 16)
        var n = 0
        var written: Int32 = 0
        // Timed in CPU seconds, like the matcher figures, so that the ratio holds on a shared machine.
        let start = ProcessUsage.cpuSeconds()
        var elapsed = 0.0
        repeat {
            for _ in 0..<1000 { EVP_EncryptUpdate(ctx, &output, &written, &input, Int32(input.count)) }
            n += 1000
            elapsed = ProcessUsage.cpuSeconds() - start
        } while elapsed < 1
        return Double(n) / elapsed
    }

    /// The fastest AES path's rate on one core over 144 blocks with a key expansion per key, in keys/s.
    static func hardwareCeilingKeysPerSecond(_ aes: MatchCrypto.AES) -> Double {
        var key = [UInt8](repeating: 7, count: 16)
        let input = [UInt8](repeating: 1, count: 144 * 16)
        var output = [UInt8](repeating: 0, count: 144 * 16)
        var n = 0
        let start = ProcessUsage.cpuSeconds()
        var elapsed = 0.0
        repeat {
            for i in 0..<1000 {
                key[0] = UInt8(truncatingIfNeeded: i)
                _ = gaen_aes128_ecb(aes.rawValue, key, input, &output, 144)
            }
            n += 1000
            elapsed = ProcessUsage.cpuSeconds() - start
        } while elapsed < 1
        return Double(n) / elapsed
    }

    /// The key schedule alone (RPIK + 144 RPIs per key) on `crypto`'s path, one core.
    static func deriveOnlyKeysPerSecond(keys n: Int, crypto: MatchCrypto) -> Double {
        let schedule = try! GAENKeySchedule()
        var out = [UInt8](repeating: 0, count: 144 * 16)
        let group = 16
        var teks = [UInt8](repeating: 3, count: 16 * group), rpiks = [UInt8](repeating: 0, count: 16 * group)
        let info = Array("EN-RPIK".utf8)
        let start = ProcessUsage.cpuSeconds()
        for i in stride(from: 0, to: n, by: group) {
            for k in 0..<group { teks[16 * k] = UInt8(truncatingIfNeeded: i + k) }
            if crypto == .portable {
                for k in 0..<group {
                    teks.withUnsafeBytes { t in
                        out.withUnsafeMutableBytes { o in
                            try! schedule.deriveRPIs(tek: UnsafeRawBufferPointer(rebasing: t[(16 * k)..<(16 * k + 16)]),
                                                     first: ENIntervalNumber(2_900_000), count: 144, into: o)
                        }
                    }
                }
            } else {
                if crypto.hkdfLanes > 0 {
                    _ = gaen_hkdf16(UInt32(crypto.hkdfLanes), teks, 16, group, info, info.count, &rpiks)
                } else {
                    for k in 0..<group {
                        let tek = try! TemporaryExposureKey(bytes: Data(teks[(16 * k)..<(16 * k + 16)]))
                        rpiks.replaceSubrange((16 * k)..<(16 * k + 16), with: schedule.rollingProximityIdentifierKey(for: tek).bytes)
                    }
                }
                for k in 0..<group {
                    rpiks.withUnsafeBufferPointer { r in
                        _ = gaen_derive_rpis(crypto.aes.rawValue, r.baseAddress! + 16 * k, 2_900_000, 144, &out, nil, 0, nil)
                    }
                }
            }
        }
        return Double(n) / (ProcessUsage.cpuSeconds() - start)
    }

    static func loadAverage() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return .nan }
        return Double(text.split(separator: " ").first ?? "") ?? .nan
    }

    static func peakRSSMegabytes() -> Double { Double(ProcessUsage.peakKiB()) / 1024 }
}
