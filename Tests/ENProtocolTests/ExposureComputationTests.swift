import Foundation
import Testing
@testable import ENProtocol
import MatchingRuntime

/// The one exposure computation's rules: key order, dedup (a TEK counts once, its last
/// occurrence wins), the sort order, and per-file attribution.
@Suite struct ExposureComputationTests {
    let make = SightingMaker()
    let day = UTCDay(isoDate: "2026-11-10")!

    func file(_ keys: [DiagnosisKey]) throws -> KeyExportFile {
        let header = KeyExportHeader(startTimestamp: UInt64(day.unixSeconds), endTimestamp: UInt64(day.unixSeconds) + 86_400, region: "test")
        return try KeyExportFile(parsing: KeyExportWriter.exportBin(header: header, keys: keys))
    }

    /// Two scans 250 s apart; `a` seen in both, `b` in the second, plus another device.
    func log(_ a: DiagnosisKey, _ b: DiagnosisKey) throws -> SightingsLog {
        let t = Double(day.unixSeconds) + 3600
        let scans = [Scan(start: t, end: t + 4), Scan(start: t + 250, end: t + 254)]
        let i0 = ENIntervalNumber(unixSeconds: t), i1 = ENIntervalNumber(unixSeconds: t + 250)
        let sightings = [
            try make.sighting(b, rpiInterval: i1, at: t + 251, rssi: -70, scan: 1),
            try make.sighting(a, rpiInterval: i0, at: t + 1, rssi: -60, scan: 0),
            try make.noise(7, at: t + 2),
            try make.sighting(a, rpiInterval: i1, at: t + 251, rssi: -62, scan: 1),
        ]
        return SightingsLog(sightings: sightings, scans: scans, hasScanColumns: true)
    }

    @Test func theSameFileTwiceCountsOnce() throws {
        let a = make.key(1, day: day), b = make.key(2, day: day)
        let c = try ExposureComputation(log: log(a, b), workers: 1, threads: .system, tableSeed: 1)
        let once = try c.run([file([a, b])])
        let twice = try c.run([file([a, b]), file([a, b])])
        #expect(once.outcome.matches.count == 3 && once.outcome.matchedKeys == 2)
        #expect(twice.outcome.matches.count == 3 && twice.outcome.matchedKeys == 2)
        #expect(twice.windows == once.windows)
        #expect(twice.outcome.statistics.matches == 3 && twice.outcome.statistics.keysMatched == 2)
        // The later copy is the one that counts: both keys are attributed to file 1.
        #expect(twice.outcome.matchedKeys(fromFile: 1) == 2)
    }

    @Test func theLastOccurrenceOfATEKWins() throws {
        let a = make.key(1, day: day), b = make.key(2, day: day)
        var revoked = a
        revoked.reportType = .revoked
        let c = try ExposureComputation(log: log(a, b), workers: 1, threads: .system, tableSeed: 1)
        // Listed twice in one file: the later entry (revoked) counts; a's sightings give no window.
        let r = try c.run([file([a, b, revoked])])
        #expect(r.outcome.matches.count == 3)
        #expect(Set(r.outcome.matches.map(\.key.reportType)) == [.revoked, .confirmedTest])
        #expect(r.windows.count == 1 && r.statistics.revokedKeys == 1)
        // Across files: a later file with the key as confirmed makes it count again.
        let again = try c.run([file([revoked, b]), file([a])])
        #expect(again.windows.count == 2)
        #expect(again.outcome.matchedKeys(fromFile: 1) == 1 && again.outcome.matchedKeys(fromFile: 0) == 2)
        #expect(try c.windows(again.outcome.matches(fromFile: 1)).windows.count == 1)
    }

    @Test func matchesComeInOneOrderWhateverTheKeyOrderAndWorkers() throws {
        let a = make.key(1, day: day), b = make.key(2, day: day)
        let one = try ExposureComputation(log: log(a, b), workers: 1, threads: .system, tableSeed: 1).run([file([a, b])])
        let other = try ExposureComputation(log: log(a, b), workers: 4, threads: .system, tableSeed: 99).run([file([b]), file([a])])
        #expect(one.outcome.matches.map(\.sighting) == other.outcome.matches.map(\.sighting))
        #expect(one.windows == other.windows)
        let times = one.outcome.matches.map(\.sighting.time)
        #expect(times == times.sorted())
    }

    @Test func cancellationStopsBetweenBatches() throws {
        let a = make.key(1, day: day), b = make.key(2, day: day)
        let c = try ExposureComputation(log: log(a, b), workers: 1, threads: .system, tableSeed: 1)
        #expect(throws: CancellationError.self) { try c.run([file([a, b])], isCancelled: { true }) }
    }
}
