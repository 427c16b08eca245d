import Foundation
import Testing
@testable import ENProtocol
import MatchingRuntime

/// Builds sightings of real keys (RPI and AEM from the key schedule) for matching tests.
struct SightingMaker {
    let schedule = try! GAENKeySchedule()

    func key(_ byte: UInt8, day: UTCDay, period: UInt32 = 144, reportType: ReportType? = .confirmedTest,
             daysSinceOnset: Int32? = nil, transmissionRisk: Int32? = nil) -> DiagnosisKey {
        DiagnosisKey(key: try! TemporaryExposureKey(bytes: Data((0..<16).map { UInt8($0) &* 17 &+ byte })),
                     rollingStartIntervalNumber: day.firstInterval, rollingPeriod: period,
                     transmissionRiskLevel: transmissionRisk, reportType: reportType, daysSinceOnsetOfSymptoms: daysSinceOnset)
    }

    /// A sighting of `key`'s RPI for interval `rpiInterval`, received at `time`.
    func sighting(_ key: DiagnosisKey, rpiInterval: ENIntervalNumber, at time: Double, rssi: Int = -60, correction: Int = 0,
                  metadata: BluetoothMetadata = .v1_1(txPower: -20, calibrationConfidence: .medium), scan: Int? = nil) throws -> Sighting {
        let rpi = try schedule.rollingProximityIdentifier(for: key.key, interval: rpiInterval)
        let aem = try GAENKeySchedule.associatedEncryptedMetadata(metadata, rpi: rpi, aemk: schedule.associatedEncryptedMetadataKey(for: key.key))
        return Sighting(time: time, rpi: rpi, aem: aem, rssi: rssi, rssiCorrection: correction, scanIndex: scan)
    }

    /// A sighting of some other device.
    func noise(_ n: Int, at time: Double) throws -> Sighting {
        var bytes = [UInt8](repeating: 0xA5, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: (n &* 2_654_435_761) >> (i * 4)) }
        for i in 0..<4 { bytes[8 + i] = UInt8(truncatingIfNeeded: n >> (8 * i)) } // distinct per n
        return Sighting(time: time, rpi: try RollingProximityIdentifier(bytes: Data(bytes)),
                        aem: try AssociatedEncryptedMetadata(bytes: Data([1, 2, 3, 4])), rssi: -80)
    }
}

/// Seconds into interval `i` (so the sighting's ENIN is exactly `i`).
func timeIn(_ i: ENIntervalNumber, plus seconds: Double = 30) -> Double { Double(i.unixSeconds) + seconds }

@Suite struct MatchingTests {
    let make = SightingMaker()
    let day = UTCDay(isoDate: "2026-11-10")!

    /// Matches on the portable path (OpenSSL) and on every faster path this CPU has; all
    /// must agree match for match and counter for counter.
    func run(_ sightings: [Sighting], _ keys: [DiagnosisKey], workers: Int = 1) throws -> (matches: [Match], statistics: MatchStatistics) {
        let index = SightingIndex(sightings: sightings, tableSeed: 0x5eed)
        let portable = try ExposureMatcher(index: index, workers: workers, threads: .system, crypto: .portable).match(keys)
        for crypto in MatchCrypto.allSupported where crypto != .portable {
            let other = try ExposureMatcher(index: index, workers: workers, threads: .system, crypto: crypto).match(keys)
            #expect(other.statistics == portable.statistics, "\(crypto)")
            #expect(other.matches.map(MatchIdentity.init) == portable.matches.map(MatchIdentity.init), "\(crypto)")
        }
        return portable
    }

    @Test func toleranceEdgesTwelveIntervalsEitherSide() throws {
        let key = make.key(1, day: day)
        let j = day.firstInterval.advanced(by: 60)
        // RPI_j seen at intervals j-13 ... j+13: only -12...+12 may match.
        var sightings: [Sighting] = []
        for offset in [-13, -12, -1, 0, 5, 12, 13] {
            sightings.append(try make.sighting(key, rpiInterval: j, at: timeIn(j.advanced(by: offset)), rssi: -60 - offset))
        }
        let (matches, stats) = try run(sightings, [key])
        #expect(matches.map { Int($0.sighting.rssi) }.sorted() == [-72, -65, -60, -59, -48].sorted())
        #expect(matches.allSatisfy { $0.interval == j })
        #expect(stats.matches == 5 && stats.keysMatched == 1 && stats.keys == 1)
        // The very first and last second of the edge intervals.
        let edges = [try make.sighting(key, rpiInterval: j, at: Double(j.advanced(by: -12).unixSeconds)),
                     try make.sighting(key, rpiInterval: j, at: Double(j.advanced(by: 13).unixSeconds) - 0.001),
                     try make.sighting(key, rpiInterval: j, at: Double(j.advanced(by: 13).unixSeconds)),
                     try make.sighting(key, rpiInterval: j, at: Double(j.advanced(by: -12).unixSeconds) - 0.001)]
        #expect(try run(edges, [key]).matches.count == 2)
    }

    @Test func clockSkewAcrossTheDayBoundary() throws {
        let key = make.key(2, day: day)
        let last = day.firstInterval.advanced(by: 143), first = day.firstInterval
        let sightings = [
            // The key's last RPI, received 2 hours into the next day (a receiver clock 2 h behind).
            try make.sighting(key, rpiInterval: last, at: timeIn(last.advanced(by: 12))),
            // The key's first RPI, received the evening before.
            try make.sighting(key, rpiInterval: first, at: timeIn(first.advanced(by: -12))),
            // One interval further: no match.
            try make.sighting(key, rpiInterval: last, at: timeIn(last.advanced(by: 13))),
        ]
        let (matches, _) = try run(sightings, [key])
        #expect(Set(matches.map(\.interval)) == [first, last])
        #expect(matches.count == 2)
    }

    @Test func severalKeysAmongNoiseWithMetadata() throws {
        let a = make.key(3, day: day), b = make.key(4, day: day.advanced(by: 1)), c = make.key(5, day: day)
        var sightings = try (0..<500).map { try make.noise($0, at: timeIn(day.firstInterval, plus: Double($0 * 300))) }
        let ja = day.firstInterval.advanced(by: 10), jb = day.advanced(by: 1).firstInterval.advanced(by: 100)
        sightings.append(try make.sighting(a, rpiInterval: ja, at: timeIn(ja), rssi: -70, correction: 5,
                                           metadata: .v1_0(txPower: -20)))
        sightings.append(try make.sighting(b, rpiInterval: jb, at: timeIn(jb), rssi: -50,
                                           metadata: .v1_1(txPower: -30, calibrationConfidence: .high)))
        let (matches, stats) = try run(sightings, [a, b, c])
        #expect(matches.count == 2 && stats.keysMatched == 2 && stats.keys == 3)
        let ma = try #require(matches.first { $0.key == a })
        // attenuation = TX power - (RSSI + correction) = -20 - (-70 + 5)
        #expect(ma.attenuation == 45 && ma.txPower == -20 && ma.metadataVersion == "1.0" && ma.calibrationConfidence == nil)
        let mb = try #require(matches.first { $0.key == b })
        #expect(mb.attenuation == 20 && mb.metadataVersion == "1.1" && mb.calibrationConfidence == .high && mb.interval == jb)
        #expect(mb.sighting.rpi == (try make.schedule.rollingProximityIdentifier(for: b.key, interval: jb)))
    }

    @Test func implausibleTxPowerIsFlaggedNotTrusted() throws {
        let key = make.key(6, day: day)
        let j = day.firstInterval.advanced(by: 20)
        let sightings = [try make.sighting(key, rpiInterval: j, at: timeIn(j), metadata: .v1_0(txPower: 21)),
                         try make.sighting(key, rpiInterval: j.advanced(by: 1), at: timeIn(j.advanced(by: 1)), metadata: .v1_0(txPower: -51)),
                         try make.sighting(key, rpiInterval: j.advanced(by: 2), at: timeIn(j.advanced(by: 2)), metadata: .v1_0(txPower: 20)),
                         try make.sighting(key, rpiInterval: j.advanced(by: 3), at: timeIn(j.advanced(by: 3)), metadata: .v1_0(txPower: -50))]
        let (matches, stats) = try run(sightings, [key])
        #expect(matches.count == 4 && stats.implausibleTxPower == 2)
        let byTx = Dictionary(uniqueKeysWithValues: matches.map { ($0.txPower, $0) })
        #expect(byTx[21]?.txPowerPlausible == false && byTx[21]?.attenuation == nil)
        #expect(byTx[-51]?.txPowerPlausible == false && byTx[-51]?.attenuation == nil)
        #expect(byTx[20]?.attenuation == 80 && byTx[-50]?.attenuation == 10)
    }

    @Test func keysOutsideTheSightingsSpanAreSkippedWithoutDeriving() throws {
        let j = day.firstInterval.advanced(by: 72)
        let inside = make.key(7, day: day)
        let sightings = [try make.sighting(inside, rpiInterval: j, at: timeIn(j))]
        // Two days later: widened by 12 intervals it still cannot reach the sightings.
        let later = make.key(8, day: day.advanced(by: 2))
        let earlier = make.key(9, day: day.advanced(by: -3))
        // The previous day reaches 12 intervals into this one, but the sighting is at interval 72.
        let previous = make.key(10, day: day.advanced(by: -1))
        // Validity [j-20, j-11): its last RPI, j-12, is exactly at the tolerance edge of the
        // sighting at j, so that one RPI is derived; one interval shorter and it is skipped.
        let atEdge = DiagnosisKey(key: make.key(11, day: day).key, rollingStartIntervalNumber: j.advanced(by: -20), rollingPeriod: 9)
        let beforeEdge = DiagnosisKey(key: make.key(16, day: day).key, rollingStartIntervalNumber: j.advanced(by: -20), rollingPeriod: 8)
        let invalid = make.key(12, day: day, period: 0), tooLong = make.key(13, day: day, period: 145)
        let (matches, stats) = try run(sightings, [inside, later, earlier, previous, atEdge, beforeEdge, invalid, tooLong])
        #expect(matches.count == 1 && matches.first?.key == inside)
        #expect(stats.keys == 8 && stats.keysSkipped == 4 && stats.keysInvalid == 2)
        // inside: only j-12 ... j+12 (25 RPIs) can meet the sighting; atEdge: one.
        #expect(stats.rpisDerived == 25 + 1)
    }

    @Test func derivationIsClippedToTheSightingsSpan() throws {
        let key = make.key(14, day: day)
        let j = day.firstInterval.advanced(by: 50)
        let (_, stats) = try run([try make.sighting(key, rpiInterval: j, at: timeIn(j))], [key])
        // Only intervals j-12 ... j+12 can meet a sighting.
        #expect(stats.rpisDerived == 25)
    }

    @Test func manyWorkersFindTheSameMatchesAsOne() throws {
        var keys: [DiagnosisKey] = []
        var sightings: [Sighting] = []
        for n in 0..<1200 {
            let d = day.advanced(by: n % 5)
            let tek = (0..<16).map { UInt8(truncatingIfNeeded: (UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64($0) &* 0xBF58_476D_1CE4_E5B9) >> 29) }
            let k = DiagnosisKey(key: try TemporaryExposureKey(bytes: Data(tek)),
                                 rollingStartIntervalNumber: d.firstInterval)
            keys.append(k)
            if n % 97 == 0 {
                let j = d.firstInterval.advanced(by: n % 144)
                sightings.append(try make.sighting(k, rpiInterval: j, at: timeIn(j)))
            }
        }
        sightings += try (0..<2000).map { try make.noise($0, at: timeIn(day.firstInterval, plus: Double($0 * 200))) }
        let one = try run(sightings, keys, workers: 1), four = try run(sightings, keys, workers: 4)
        func ids(_ m: [Match]) -> [String] { m.map { "\($0.key.key.hexString)/\($0.interval)/\($0.sighting.time)" }.sorted() }
        #expect(ids(one.matches) == ids(four.matches))
        #expect(one.matches.count == 13)
        #expect(one.statistics == four.statistics)
    }

    @Test func emptySightingsSkipEveryKey() throws {
        let (matches, stats) = try run([], [make.key(15, day: day)])
        #expect(matches.isEmpty && stats.keysSkipped == 1 && stats.rpisDerived == 0)
    }

    @Test func indexFindsEveryRPIAndRejectsOthers() throws {
        let sightings = try (0..<5000).map { try make.noise($0, at: timeIn(day.firstInterval, plus: Double($0 % 144) * 600)) }
        let index = SightingIndex(sightings: sightings, tableSeed: 0x5eed)
        #expect(index.distinctRPICount == 5000)
        for s in sightings.prefix(500) {
            let p = try #require(index.partition(forInterval: s.interval.rawValue))
            let r = index.lookup(low: s.rpiLow, high: s.rpiHigh, in: p)
            #expect(r >= 0 && index.rpiLow[r] == s.rpiLow && index.rpiHigh[r] == s.rpiHigh)
            #expect(index.lookup(low: s.rpiLow, high: s.rpiHigh ^ 1, in: p) == -1)
        }
    }

    /// RPIs come off the air: an advertiser can send thousands that share their first 8 bytes.
    /// Slots mixed from both words under the seed keep them out of one probe chain (before, the
    /// chain was as long as the crafted set, and building and probing it quadratic).
    @Test func craftedRPIsSharingTheirFirstBytesDoNotFormOneProbeChain() throws {
        let t = timeIn(day.firstInterval, plus: 3600)
        let crafted = try (0..<4096).map { i -> Sighting in
            var bytes = [UInt8](repeating: 0xab, count: 8)
            withUnsafeBytes(of: UInt64(i).bigEndian) { bytes += $0 }
            return Sighting(time: t, rpi: try RollingProximityIdentifier(bytes: Data(bytes)),
                            aem: try AssociatedEncryptedMetadata(bytes: Data([1, 2, 3, 4])), rssi: -60)
        }
        for seed: UInt64 in [0, 0x5eed, 0xdead_beef_cafe_f00d] {
            let index = SightingIndex(sightings: crafted, tableSeed: seed)
            let p = try #require(index.partition(forInterval: crafted[0].interval.rawValue))
            // 4096 RPIs in 8192 slots: random placement gives runs of a few tens at most.
            #expect(p.longestProbeRun < 100, "seed \(seed): longest run \(p.longestProbeRun)")
            for s in crafted.prefix(256) {
                let r = index.lookup(low: s.rpiLow, high: s.rpiHigh, in: p)
                #expect(r >= 0 && index.rpiHigh[r] == s.rpiHigh)
            }
        }
    }
}

/// What two matching paths must agree on for one match.
struct MatchIdentity: Equatable {
    var sighting: Sighting
    var key: DiagnosisKey
    var interval: ENIntervalNumber
    var metadata: BluetoothMetadata
    init(_ m: Match) { sighting = m.sighting; key = m.key; interval = m.interval; metadata = m.metadata }
}
