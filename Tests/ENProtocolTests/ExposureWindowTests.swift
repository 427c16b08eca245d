import Foundation
import Testing
@testable import ENProtocol
import MatchingRuntime

/// Exposure windows against hand-computed cases. Each case lays out a node's scans (with the
/// scans that saw nothing), sightings of real keys in them, matches them, and builds windows.
@Suite struct ExposureWindowTests {
    let make = SightingMaker()
    let day = UTCDay(isoDate: "2026-11-10")!

    /// A sighting of `key` in scan `scan`, one second after the scan started, carrying the RPI
    /// of the interval it was received in.
    struct Seen {
        var key: DiagnosisKey
        var scan: Int
        var rssi: Int = -60
        var offset: Double = 1
        var metadata: BluetoothMetadata = .v1_1(txPower: -20, calibrationConfidence: .medium)
        var rpiInterval: ENIntervalNumber? = nil
    }

    func windows(scanStarts: [Double], _ seen: [Seen], keys: [DiagnosisKey], mapping: DiagnosisKeysDataMapping = .default)
        throws -> (windows: [ExposureWindow], statistics: ExposureWindows.Statistics) {
        let scans = scanStarts.map { Scan(start: $0, end: $0 + 4) }
        #expect(scans == scans.sorted())
        var sightings = try seen.map { s -> Sighting in
            let t = scanStarts[s.scan] + s.offset
            return try make.sighting(s.key, rpiInterval: s.rpiInterval ?? ENIntervalNumber(unixSeconds: t), at: t, rssi: s.rssi,
                                     metadata: s.metadata, scan: s.scan)
        }
        sightings.append(try make.noise(1, at: scanStarts[0] + 2))
        let matches = try ExposureMatcher(index: SightingIndex(sightings: sightings, tableSeed: 1), workers: 1, threads: .system).match(keys).matches
        return try ExposureWindows.compute(matches: matches, scans: scans, mapping: mapping)
    }

    func instances(_ w: ExposureWindow) -> [[Int]] {
        w.scanInstances.map { [$0.typicalAttenuationDb, $0.minAttenuationDb, $0.secondsSinceLastScan] }
    }

    @Test func scansThatMissedTheRPICountForSecondsSinceLastScan() throws {
        let k = make.key(1, day: day)
        let t = Double(day.unixSeconds) + 3600
        // s0 saw only another device; s3 saw nothing at all.
        let starts = [t, t + 250, t + 500, t + 1200, t + 1400]
        let seen = [Seen(key: k, scan: 1, rssi: -60), Seen(key: k, scan: 1, rssi: -63, offset: 2),
                    Seen(key: k, scan: 2, rssi: -70), Seen(key: k, scan: 4, rssi: -65)]
        let (w, _) = try windows(scanStarts: starts, seen, keys: [k])
        try #require(w.count == 1)
        // s1: attenuations 40, 43 -> typical round(41.5) = 42, min 40, 250 s after s0.
        // s2: 50, 250 s after s1. s4: 45, 200 s after s3 (which missed the key), not 900 after s2.
        #expect(instances(w[0]) == [[42, 40, 250], [50, 50, 250], [45, 45, 200]])
        #expect(w[0].dateMillisSinceEpoch == day.millisSinceEpoch)
        #expect(w[0].reportType == 1 && w[0].infectiousness == 1 && w[0].calibrationConfidence == 2)
    }

    @Test func windowsSpanAtMostThirtyMinutes() throws {
        let k = make.key(2, day: day)
        let t = Double(day.unixSeconds) + 36_000
        let starts = (0...10).map { t + Double($0 * 300) }
        let seen = (0...10).map { Seen(key: k, scan: $0) }
        let (w, _) = try windows(scanStarts: starts, seen, keys: [k])
        try #require(w.count == 2)
        // Instances at t+1, t+301, ... t+1501 share the first window; t+1801 is 30 minutes after
        // its first instance and opens the second. The very first scan has no predecessor: 120 s.
        #expect(instances(w[0]) == [[40, 40, 120]] + Array(repeating: [40, 40, 300], count: 5))
        #expect(instances(w[1]) == Array(repeating: [40, 40, 300], count: 5))
        #expect(w.allSatisfy { $0.dateMillisSinceEpoch == day.millisSinceEpoch })
    }

    @Test func secondsSinceLastScanIsCappedAtFiveMinutes() throws {
        let k = make.key(3, day: day)
        let t = Double(day.unixSeconds) + 7200
        let (w, _) = try windows(scanStarts: [t, t + 299.6, t + 1000], [Seen(key: k, scan: 1), Seen(key: k, scan: 2)], keys: [k])
        #expect(w.count == 1 && w.first.map(instances) == [[40, 40, 300], [40, 40, 300]])
    }

    @Test func revokedAndRecursiveKeysYieldNothing() throws {
        let revoked = make.key(4, day: day, reportType: .revoked)
        let missingRevoked = make.key(5, day: day, reportType: nil)
        let recursive = make.key(6, day: day, reportType: .recursive)
        let selfReport = make.key(7, day: day, reportType: .selfReport)
        let t = Double(day.unixSeconds) + 40_000
        let starts = (0..<4).map { t + Double($0 * 250) }
        let seen = [Seen(key: revoked, scan: 0), Seen(key: missingRevoked, scan: 1), Seen(key: recursive, scan: 2), Seen(key: selfReport, scan: 3)]
        let mapping = try DiagnosisKeysDataMapping(reportTypeWhenMissing: .revoked)
        let (w, stats) = try windows(scanStarts: starts, seen, keys: [revoked, missingRevoked, recursive, selfReport], mapping: mapping)
        #expect(w.count == 1 && w.first?.reportType == ReportType.selfReport.rawValue)
        #expect(stats.revokedKeys == 2 && stats.recursiveKeys == 1)
        // With the default mapping the key without report type is CONFIRMED_TEST.
        let (w2, _) = try windows(scanStarts: starts, seen, keys: [missingRevoked])
        #expect(w2.map(\.reportType) == [ReportType.confirmedTest.rawValue])
    }

    @Test func dataMappingGivesInfectiousnessAndReportType() throws {
        let high = make.key(8, day: day, reportType: nil, daysSinceOnset: 3)
        let unmapped = make.key(9, day: day, reportType: nil, daysSinceOnset: 5)
        let missing = make.key(10, day: day, reportType: nil, daysSinceOnset: nil)
        let outOfRange = make.key(11, day: day, reportType: nil, daysSinceOnset: 20)
        let t = Double(day.unixSeconds) + 50_000
        let starts = (0..<4).map { t + Double($0 * 4000) }
        let keys = [high, unmapped, missing, outOfRange]
        let seen = keys.enumerated().map { Seen(key: $1, scan: $0) }
        let mapping = try DiagnosisKeysDataMapping(daysSinceOnsetToInfectiousness: [3: .high, -2: .standard],
                                                   reportTypeWhenMissing: .confirmedClinicalDiagnosis,
                                                   infectiousnessWhenDaysSinceOnsetMissing: .standard)
        let (w, stats) = try windows(scanStarts: starts, seen, keys: keys, mapping: mapping)
        // unmapped day 5 -> NONE: dropped as the framework does.
        #expect(w.map(\.infectiousness) == [2, 1, 1])
        #expect(w.allSatisfy { $0.reportType == ReportType.confirmedClinicalDiagnosis.rawValue })
        #expect(stats.noInfectiousnessKeys == 1)
        // No mapping set: every key STANDARD.
        let (w2, _) = try windows(scanStarts: starts, seen, keys: keys)
        #expect(w2.map(\.infectiousness) == [1, 1, 1, 1])
    }

    @Test func windowsAreDatedByTheirFirstSightingInUTC() throws {
        let k = make.key(12, day: day)
        let next = make.key(13, day: day.advanced(by: 1))
        let midnight = Double(day.advanced(by: 1).unixSeconds)
        // 23:55 and 00:05: the key's last RPI, still on air after midnight (within tolerance).
        let last = day.firstInterval.advanced(by: 143)
        let starts = [midnight - 300, midnight + 300]
        let seen = [Seen(key: k, scan: 0, rpiInterval: last), Seen(key: k, scan: 1, rpiInterval: last),
                    Seen(key: next, scan: 1)]
        let (w, _) = try windows(scanStarts: starts, seen, keys: [k, next])
        try #require(w.count == 2)
        #expect(w[0].dateMillisSinceEpoch == day.millisSinceEpoch && instances(w[0]) == [[40, 40, 120], [40, 40, 300]])
        #expect(w[1].dateMillisSinceEpoch == day.advanced(by: 1).millisSinceEpoch && instances(w[1]) == [[40, 40, 300]])
    }

    @Test func implausibleTxPowerAndReplaysAreLeftOut() throws {
        let k = make.key(14, day: day)
        let t = Double(day.unixSeconds) + 60_000
        let j = ENIntervalNumber(unixSeconds: t)
        let starts = [t, t + 200, t + 1300]
        let seen = [Seen(key: k, scan: 0, rpiInterval: j),
                    Seen(key: k, scan: 1, metadata: .v1_0(txPower: 40), rpiInterval: j),
                    // The same RPI 1300 s after it was first seen: a suspected replay.
                    Seen(key: k, scan: 2, rpiInterval: j)]
        let (w, stats) = try windows(scanStarts: starts, seen, keys: [k])
        #expect(w.count == 1 && w.first.map(instances) == [[40, 40, 120]])
        #expect(stats.implausibleTxPower == 1 && stats.suspectedReplays == 1)
    }

    @Test func metadataV10HasLowestConfidenceAndAttenuationFloorsAtZero() throws {
        let k = make.key(15, day: day)
        let t = Double(day.unixSeconds) + 70_000
        let (w, _) = try windows(scanStarts: [t], [Seen(key: k, scan: 0, rssi: -10, metadata: .v1_0(txPower: -20))], keys: [k])
        #expect(w.first?.calibrationConfidence == 0 && w.first.map(instances) == [[0, 0, 120]])
    }

    @Test func typicalAttenuationRoundsHalfUp() {
        #expect(ExposureWindows.scanInstance([40, 41], 300).typicalAttenuationDb == 41)
        #expect(ExposureWindows.scanInstance([40, 41, 41], 300).typicalAttenuationDb == 41)
        #expect(ExposureWindows.scanInstance([40, 40, 41], 300).typicalAttenuationDb == 40)
        #expect(ExposureWindows.scanInstance([0, 1], 300).minAttenuationDb == 0)
    }

    @Test func sightingsWithoutScanAreRejected() throws {
        let k = make.key(16, day: day)
        let t = Double(day.unixSeconds) + 3000
        let s = try make.sighting(k, rpiInterval: ENIntervalNumber(unixSeconds: t), at: t)
        let matches = try ExposureMatcher(index: SightingIndex(sightings: [s], tableSeed: 1), workers: 1, threads: .system).match([k]).matches
        #expect(throws: ExposureWindowError.sightingWithoutScan(time: t)) {
            try ExposureWindows.compute(matches: matches, scans: [])
        }
    }

    @Test func mappingFile() throws {
        let m = try DiagnosisKeysDataMapping(json: Data("""
            {"daysSinceOnsetToInfectiousness": {"-14": 0, "0": "HIGH", "3": 1},
             "reportTypeWhenMissing": "SELF_REPORT", "infectiousnessWhenDaysSinceOnsetMissing": 2}
            """.utf8))
        #expect(m.daysSinceOnsetToInfectiousness == [-14: .none, 0: .high, 3: .standard])
        #expect(m.reportTypeWhenMissing == .selfReport && m.infectiousnessWhenDaysSinceOnsetMissing == .high)
        #expect(m.infectiousness(daysSinceOnsetOfSymptoms: 1) == Infectiousness.none)
        #expect(m.infectiousness(daysSinceOnsetOfSymptoms: 15) == .high)
        #expect(try DiagnosisKeysDataMapping(json: Data("{}".utf8)) == .default)
        for (bad, reason) in [("{\"daysSinceOnsetToInfectiousness\": {\"15\": 1}}", "day 15 outside -14...14"),
                              ("{\"reportTypeWhenMissing\": 0}", "must not be UNKNOWN"),
                              ("{\"reportTypeWhen\": 1}", "unknown field 'reportTypeWhen'"),
                              ("{\"infectiousnessWhenDaysSinceOnsetMissing\": 3}", "expected 0, 1, 2"),
                              ("{\"daysSinceOnsetToInfectiousness\": {\"x\": 1}}", "not a day number"),
                              ("[1]", "expected a JSON object")] {
            do {
                _ = try DiagnosisKeysDataMapping(json: Data(bad.utf8))
                Issue.record("accepted \(bad)")
            } catch {
                #expect("\(error)".contains(reason), "\(error)")
            }
        }
    }
}
