import CGaenCrypto
import Foundation
import Synchronization
import Testing
@testable import ENProtocol
import MatchingRuntime

/// Every RPI-derivation path of the matcher gives the bytes OpenSSL EVP gives: the AES paths
/// (AES-NI, VAES 256/512, ARMv8, whichever this CPU has) and the lockstep HKDF (SHA-NI) against
/// EVP, OpenSSL's HKDF and Google's published vectors. Paths this CPU lacks cannot run here;
/// `availablePathsAreListed` names them in the test log (the arm64 ones are proven under
/// qemu-aarch64 by scripts/test-arm64-crypto.sh).
@Suite struct MatchCryptoTests {
    let v: CryptoVectors
    init() throws { v = try CryptoVectors.load() }

    static let fastAES = MatchCrypto.supportedAES.filter { $0 != .evp }

    @Test func availablePathsAreListed() {
        let missing = MatchCrypto.AES.allCases.filter { $0 != .evp && !MatchCrypto.supportedAES.contains($0) }
        print("MatchCrypto: fastest \(MatchCrypto.fastest); AES paths here \(MatchCrypto.supportedAES); not on this CPU (not tested here): \(missing); "
              + "lockstep HKDF \(gaen_sha_lockstep_supported() != 0 ? "yes" : "no (SHA-NI missing)")")
        #expect(MatchCrypto.portable.isSupported)
        #expect(MatchCrypto.fastest.isSupported)
    }

    @Test func namesRoundTrip() {
        #expect(MatchCrypto(named: "portable") == .portable)
        #expect(MatchCrypto(named: "vaes512/sha-ni-4") == MatchCrypto(aes: .vaes512, hkdfLanes: 4))
        #expect(MatchCrypto(named: "aesni") == MatchCrypto(aes: .aesni, hkdfLanes: 0))
        #expect(MatchCrypto(named: "rot13") == nil && MatchCrypto(named: "aesni/sha-ni-x") == nil)
        for c in MatchCrypto.allSupported { #expect(MatchCrypto(named: c.description) == c, "\(c)") }
    }

    /// Raw AES-128-ECB: random keys and block counts (0...200, so every vector width's tail).
    @Test(arguments: fastAES) func ecbAgreesWithEVP(_ aes: MatchCrypto.AES) throws {
        var rng = SeededRandom(seed: 0xAE5)
        let evp = try AES128ECB()
        for n in 0..<400 {
            let key = [UInt8](try rng.bytes(16))
            let blocks = n % 201
            let input = [UInt8](try rng.bytes(max(16, blocks * 16)))
            var expected = [UInt8](repeating: 0, count: input.count), ours = expected
            try key.withUnsafeBytes { k in try input.withUnsafeBytes { i in try expected.withUnsafeMutableBytes { o in
                try evp.encrypt(key: k, input: UnsafeRawBufferPointer(rebasing: i[..<(blocks * 16)]), output: o)
            } } }
            #expect(gaen_aes128_ecb(aes.rawValue, key, input, &ours, blocks) == 0)
            #expect(ours[..<(blocks * 16)] == expected[..<(blocks * 16)], "\(aes) key \(n), \(blocks) blocks")
        }
    }

    /// RPIs from an RPIK, with the fused first-stage filter, against EVP over PaddedData and the
    /// portable filter; counts 0...144, intervals near the 32-bit wrap too.
    @Test(arguments: fastAES) func rpisAndFusedFilterAgreeWithEVP(_ aes: MatchCrypto.AES) throws {
        var rng = SeededRandom(seed: 0x5EED)
        let schedule = try GAENKeySchedule()
        var bitmap = [UInt64](repeating: 0, count: 1 << 12) // 2^18 bits
        for i in bitmap.indices { bitmap[i] = try rng.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } & (try rng.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }) }
        for n in 0..<300 {
            let rpik = [UInt8](try rng.bytes(16))
            let count = n % 145
            let first = n % 7 == 0 ? UInt32.max - UInt32(n % 150) : try rng.bytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let mask: UInt64 = n % 2 == 0 ? (1 << 18) - 1 : 1023
            var expected = [UInt8](repeating: 0, count: 144 * 16), ours = [UInt8](repeating: 0xEE, count: 145 * 16)
            if count > 0 { try expected.withUnsafeMutableBytes { try schedule.encryptRPIs(rpik: rpik, first: first, count: count, into: $0.baseAddress!) } }
            var fused = [Int32](repeating: -1, count: 160), portable = fused
            let nf = gaen_derive_rpis(aes.rawValue, rpik, first, count, &ours, bitmap, mask, &fused)
            #expect(ours[..<(count * 16)] == expected[..<(count * 16)], "\(aes): RPIs, case \(n)")
            #expect(ours[(count * 16)...].allSatisfy { $0 == 0xEE }, "\(aes): wrote past \(count) RPIs")
            let np = gaen_first_stage(expected, count, bitmap, mask, &portable)
            // The filter by its definition, in Swift.
            let reference = (0..<count).filter { k in
                let high = UInt64(expected[k * 16 + 12]) | UInt64(expected[k * 16 + 13]) << 8 | UInt64(expected[k * 16 + 14]) << 16 | UInt64(expected[k * 16 + 15]) << 24
                let a = high & mask
                return bitmap[Int(a >> 6)] >> (a & 63) & 1 == 1
            }.map(Int32.init)
            #expect(Array(portable[..<np]) == reference, "portable filter, case \(n)")
            #expect(Array(fused[..<nf]) == reference, "\(aes) fused filter, case \(n)")
            // Without a bitmap: RPIs only.
            var plain = [UInt8](repeating: 0, count: 144 * 16)
            #expect(gaen_derive_rpis(aes.rawValue, rpik, first, count, &plain, nil, 0, &fused) == 0)
            #expect(plain[..<(count * 16)] == expected[..<(count * 16)])
        }
    }

    /// Google's vectors (TestVectors.java) on every AES path and lane count.
    @Test func publishedVectorsOnEveryPath() throws {
        let tek = [UInt8](try Data(hex: v.tek)), rpik = [UInt8](try Data(hex: v.rpik)), aemk = [UInt8](try Data(hex: v.aemk))
        if gaen_sha_lockstep_supported() != 0 {
            for lanes: UInt32 in [1, 2, 4] {
                // The vector's TEK in every lane position of a group of 7 (lockstep groups and the tail).
                for position in 0..<7 {
                    var teks = [UInt8]()
                    for i in 0..<7 { teks += i == position ? tek : (0..<16).map { UInt8(truncatingIfNeeded: $0 * 31 + i) } }
                    for (info, expected) in [(GAENKeySchedule.rpikInfo, rpik), (GAENKeySchedule.aemkInfo, aemk)] {
                        var out = [UInt8](repeating: 0, count: 7 * 16)
                        #expect(gaen_hkdf16(lanes, teks, 16, 7, info, info.count, &out) == 0)
                        #expect(Array(out[(position * 16)..<(position * 16 + 16)]) == expected, "lanes \(lanes), position \(position)")
                    }
                }
            }
        }
        for aes in Self.fastAES {
            var out = [UInt8](repeating: 0, count: 144 * 16)
            _ = gaen_derive_rpis(aes.rawValue, rpik, v.en_interval_number_of_key, 144, &out, nil, 0, nil)
            for (i, expected) in v.advertised.enumerated() {
                #expect(Data(out[(i * 16)..<(i * 16 + 16)]).hexString == expected.rpi, "\(aes): RPI of interval index \(i)")
            }
        }
    }

    /// Lockstep HKDF against the one-key path and OpenSSL's EVP HKDF: random TEKs, every group
    /// size up to 37, records with a stride (as the matcher reads them), both infos.
    @Test(.enabled(if: gaen_sha_lockstep_supported() != 0, "needs SHA-NI"))
    func lockstepHKDFAgreesWithSingleAndEVP() throws {
        var rng = SeededRandom(seed: 0x4BDF)
        let schedule = try GAENKeySchedule()
        let stride = 40
        for n in 1...37 {
            let records = [UInt8](try rng.bytes(n * stride))
            for lanes: UInt32 in [1, 2, 4] {
                for info in [GAENKeySchedule.rpikInfo, GAENKeySchedule.aemkInfo] {
                    var out = [UInt8](repeating: 0, count: n * 16)
                    #expect(gaen_hkdf16(lanes, records, stride, n, info, info.count, &out) == 0)
                    for k in 0..<n {
                        let tek = Data(records[(k * stride)..<(k * stride + 16)])
                        let evp = try HKDF.sha256ViaEVP(ikm: tek, salt: Data(), info: Data(info), length: 16)
                        #expect(Data(out[(k * 16)..<(k * 16 + 16)]) == evp, "n \(n), lanes \(lanes), key \(k)")
                        if info == GAENKeySchedule.rpikInfo, lanes == 4 {
                            var single = [UInt8](repeating: 0, count: 16)
                            tek.withUnsafeBytes { schedule.deriveRPIK(tek: $0.baseAddress!, into: &single) }
                            #expect(Data(single) == evp)
                        }
                    }
                }
            }
        }
        #expect(gaen_hkdf16(3, [UInt8](repeating: 0, count: 16), 16, 1, GAENKeySchedule.rpikInfo, 7, nil) == -1)
    }

    /// The whole matcher on every path: the same matches and counters as the portable path on
    /// random keys (some crossing midnight, some clipped), several days, two workers.
    @Test func matcherAgreesOnEveryPath() throws {
        let make = SightingMaker()
        let day = UTCDay(isoDate: "2026-11-10")!
        var rng = SeededRandom(seed: 99)
        var keys: [DiagnosisKey] = [], sightings: [Sighting] = []
        for n in 0..<3000 {
            let start = day.firstInterval.advanced(by: n % 4 * 144 + (n % 3 == 0 ? 100 : 0))
            let k = DiagnosisKey(key: try TemporaryExposureKey(bytes: rng.bytes(16)), rollingStartIntervalNumber: start,
                                 rollingPeriod: UInt32(1 + n % 144))
            keys.append(k)
            if n % 37 == 0 {
                let j = start.advanced(by: Int(k.rollingPeriod) - 1)
                sightings.append(try make.sighting(k, rpiInterval: j, at: timeIn(j.advanced(by: n % 25 - 12))))
            }
        }
        sightings += try (0..<3000).map { try make.noise($0, at: timeIn(day.firstInterval, plus: Double($0 * 137))) }
        let index = SightingIndex(sightings: sightings, tableSeed: 0xfeed)
        let portable = try ExposureMatcher(index: index, workers: 1, threads: .system, crypto: .portable).match(keys)
        #expect(portable.matches.count >= 70)
        for crypto in MatchCrypto.allSupported {
            for workers in [1, 2] {
                let other = try ExposureMatcher(index: index, workers: workers, threads: .system, crypto: crypto).match(keys)
                #expect(other.statistics == portable.statistics, "\(crypto), \(workers) workers")
                #expect(other.matches.map(MatchIdentity.init) == portable.matches.map(MatchIdentity.init), "\(crypto), \(workers) workers")
            }
        }
    }
}

/// Keys decoded on the workers straight from export.bin match as the same keys handed in as
/// DiagnosisKeys: same matches, same key positions, same counters, on every path.
@Suite struct EncodedMatchingTests {
    /// 5,000 keys over five days (some crossing midnight), a sighting for every 53rd, noise.
    static func fixture() throws -> (keys: [DiagnosisKey], file: KeyExportFile, index: SightingIndex) {
        let make = SightingMaker()
        let day = UTCDay(isoDate: "2026-11-10")!
        var rng = SeededRandom(seed: 4242)
        var keys: [DiagnosisKey] = [], sightings: [Sighting] = []
        for n in 0..<5000 {
            let start = day.firstInterval.advanced(by: n % 5 * 144 - 144 + (n % 7 == 0 ? 90 : 0))
            let k = DiagnosisKey(key: try TemporaryExposureKey(bytes: rng.bytes(16)), rollingStartIntervalNumber: start,
                                 rollingPeriod: UInt32(1 + n % 144), transmissionRiskLevel: Int32(n % 8),
                                 reportType: ReportType(rawValue: n % 6), daysSinceOnsetOfSymptoms: Int32(n % 29) - 14)
            keys.append(k)
            if n % 53 == 0 {
                let j = start.advanced(by: Int(k.rollingPeriod) / 2)
                sightings.append(try make.sighting(k, rpiInterval: j, at: timeIn(j)))
            }
        }
        sightings += try (0..<2000).map { try make.noise($0, at: timeIn(day.firstInterval, plus: Double($0 * 211))) }
        let file = try KeyExportFile(parsing: KeyExportWriter.exportBin(header: KeyFixtures.header, keys: keys))
        return (keys, file, SightingIndex(sightings: sightings, tableSeed: 3))
    }

    @Test func encodedBatchesMatchAsDecodedKeys() throws {
        let (keys, file, index) = try Self.fixture()
        let reference = try ExposureMatcher(index: index, workers: 1, threads: .system, crypto: .portable).match(keys)
        #expect(reference.matches.count >= 90)
        for crypto in [MatchCrypto.portable, .fastest] {
            for (workers, part) in [(1, 5000), (2, 333), (2, 4096)] {
                let r = try ExposureMatcher(index: index, workers: workers, threads: .system, crypto: crypto).match(encoded: file.encodedKeyBatches(size: part))
                #expect(r.statistics == reference.statistics, "\(crypto), \(workers) workers, parts of \(part)")
                #expect(r.matches.map { MatchIdentity($0.match) } == reference.matches.map(MatchIdentity.init))
                #expect(r.matches.allSatisfy { keys[$0.position] == $0.match.key })
            }
        }
    }

    /// A whole run of parts that the threads take in turn, each part made on the thread that
    /// takes it: the same matches, positions and counters as the keys handed in at once, with
    /// any number of threads (more threads than parts too), and one barrier per run.
    @Test func runOfPartsMatchesAsOneBatch() throws {
        let (keys, file, index) = try Self.fixture()
        let reference = try ExposureMatcher(index: index, workers: 1, threads: .system, crypto: .portable).match(keys)
        for (workers, part) in [(1, 700), (2, 700), (2, 97), (3, 4096), (8, 2500)] {
            let batches = file.encodedKeyBatches(size: part)
            var firsts: [Int] = [], total = 0
            for b in batches { firsts.append(total); total += b.count }
            let starts = firsts
            let matcher = ExposureMatcher(index: index, workers: workers, threads: .system)
            let made = Mutex(0)
            let r = try matcher.match(parts: batches.count) { i in
                made.withLock { $0 += 1 }
                return (batches[i], starts[i])
            }
            #expect(r.statistics == reference.statistics, "\(workers) workers, parts of \(part)")
            #expect(r.matches.map { MatchIdentity($0.match) } == reference.matches.map(MatchIdentity.init))
            #expect(r.matches.allSatisfy { keys[$0.position] == $0.match.key })
            #expect(made.withLock { $0 } == batches.count)
            let profile = try #require(matcher.lastRun)
            #expect(profile.parts == batches.count && profile.threads.reduce(0) { $0 + $1.parts } == batches.count)
            #expect(profile.threads.count == min(workers, batches.count))
            #expect(profile.barriers == (profile.threads.count > 1 ? 1 : 0))
        }
    }

    /// A part that fails stops the run: no thread takes another part, and the error comes out.
    @Test func failingPartStopsTheRun() throws {
        let (_, file, index) = try Self.fixture()
        let batches = file.encodedKeyBatches(size: 50)
        struct Broken: Error {}
        for workers in [1, 2] {
            let taken = Mutex(0)
            #expect(throws: Broken.self) {
                _ = try ExposureMatcher(index: index, workers: workers, threads: .system).match(parts: batches.count) { i in
                    taken.withLock { $0 += 1 }
                    if i == 3 { throw Broken() }
                    return (batches[i], i * 50)
                }
            }
            // One thread stops at once; with two, how many parts the other took meanwhile
            // depends on the scheduler.
            if workers == 1 { #expect(taken.withLock { $0 } == 4) }
        }
    }

    /// Cancellation is asked before each part the caller's thread takes; once it says yes no
    /// thread takes another part and the run throws CancellationError.
    @Test func cancelledRunStops() throws {
        let (_, file, index) = try Self.fixture()
        let batches = file.encodedKeyBatches(size: 50)
        // One thread: parts 0 and 1 are matched, the third question stops the run.
        var asked = 0
        #expect(throws: CancellationError.self) {
            _ = try ExposureMatcher(index: index, workers: 1, threads: .system).match(encoded: batches, isCancelled: {
                asked += 1
                return asked > 2
            })
        }
        #expect(asked == 3)
        // Two threads: the caller asks before its first part, whatever the other thread does.
        #expect(throws: CancellationError.self) {
            _ = try ExposureMatcher(index: index, workers: 2, threads: .system).match(encoded: batches, isCancelled: { true })
        }
    }
}
