import ENProtocol
import Foundation
@testable import HCIHost
import NodeTestSupport
import HCIProtocol
import Testing

@Suite struct RadioPolicyTests {
    @Test func rotationDelaysAreUniformOverTenToTwentyMinutes() throws {
        var rng = SeededRandom(seed: 3)
        let rotation = RotationPolicy()
        let delays = try (0..<20_000).map { _ in try rotation.nextDelay(using: &rng) }
        #expect(delays.allSatisfy { (600...1200).contains($0) })
        // Uniform: each of ten one-minute bins holds about a tenth of the draws.
        var bins = [Int](repeating: 0, count: 10)
        for d in delays { bins[min(9, Int((d - 600) / 60))] += 1 }
        #expect(bins.allSatisfy { abs($0 - 2000) < 200 }, "\(bins)")
    }

    @Test func beaconsPairAFreshNRPAWithTheDerivedRPIAndAEM() throws {
        let factory = try GAENBeaconFactory()
        let tek = try TemporaryExposureKey(hex: "75c734c6dd1a782de7a965da5eb93125")
        var rng = SeededRandom(seed: 9)
        var addresses = Set<BDAddress>()
        for i in 0..<50 {
            let b = try factory.beacon(tek: tek, interval: ENIntervalNumber(2_642_976 + UInt32(i)),
                                       metadata: .v1_0(txPower: 8), random: &rng)
            #expect(b.beacon.address.isNonResolvablePrivate)
            #expect(b.beacon.advertisingData.count == 31)
            let parsed = try ExposureNotificationAdvertisement(advertisingData: Data(b.beacon.advertisingData))
            #expect(parsed.rpi == b.rpi && parsed.aem == b.aem)
            addresses.insert(b.beacon.address)
        }
        #expect(addresses.count == 50)
        // The vectors' first interval (metadata 40080000) gives the published RPI and AEM.
        let first = try factory.beacon(tek: tek, interval: ENIntervalNumber(2_642_976), metadata: .v1_0(txPower: 8), random: &rng)
        #expect(first.rpi.hexString == "8be6cd371c5c891604bfbe49df845096" && first.aem.hexString == "72033874")
    }

    @Test func stallDetectorNeedsARhythmAndThenNoticesSilence() {
        var d = ScanStallDetector(minimumStall: 5, gapFactor: 10, minimumHistory: 8)
        #expect(!d.isStalled(now: 1000)) // nothing ever heard: an empty room is not a stall
        for i in 0..<5 { d.report(at: Double(i) * 0.25) }
        #expect(!d.isStalled(now: 100)) // too little history to know the rhythm
        for i in 5..<20 { d.report(at: Double(i) * 0.25) }
        let last = 19 * 0.25
        #expect(d.stallThreshold == 5) // 10 x 0.25 s is below the 5 s floor
        #expect(!d.isStalled(now: last + 4.9))
        #expect(d.isStalled(now: last + 5.1))
        d.restartWindow(at: last + 5.1)
        #expect(!d.isStalled(now: last + 9))
        var slow = ScanStallDetector()
        for i in 0..<10 { slow.report(at: Double(i) * 2) }
        #expect(slow.stallThreshold == 20) // sparse advertisers: ten of their gaps
    }

    @Test func emptyScanDetectorFiresOnlyAfterBusyHistory() {
        var quiet = EmptyScanDetector()
        var quietFired = false
        for _ in 0..<30 { quietFired = quiet.record(.empty) || quietFired }
        #expect(!quietFired) // a board alone never restarts its controller
        var d = EmptyScanDetector(emptyRun: 3, history: 6, busyNeeded: 4)
        let busy: [ScanVerdict] = [.heard, .heard, .empty, .heard, .heard, .heard]
        var fired = (busy + [.empty, .empty, .empty, .empty]).map { d.record($0) }
        // The third empty scan after a busy history fires, and every one after it until the
        // owner restarts the controller.
        #expect(fired == [false, false, false, false, false, false, false, false, true, true])
        d.restarted()
        // After a restart the episode's history stands: three more empty scans say it failed.
        fired = [ScanVerdict.empty, .empty, .empty].map { d.record($0) }
        #expect(fired == [false, false, true] && d.afterRestart)
        // A report that reached the owner after the scan ended: that scan heard.
        d.heardLate()
        #expect(!d.afterRestart && !d.record(.empty))
    }

    @Test func lateScansNeitherCountNorBreakTheRunButAskForMoreEvidence() {
        var d = EmptyScanDetector(emptyRun: 3, history: 6, busyNeeded: 4)
        for _ in 0..<6 { _ = d.record(.heard) }
        let fired = ([.empty, .late, .empty, .late, .empty, .empty, .empty] as [ScanVerdict]).map { d.record($0) }
        // Three on-time empty scans plus one per late scan in the run: five.
        #expect(fired == [false, false, false, false, false, false, true])
        // Late scans alone never fire, however many.
        var starved = EmptyScanDetector()
        for _ in 0..<6 { _ = starved.record(.heard) }
        #expect(!(0..<50).map { _ in starved.record(.late) }.contains(true))
        // A late scan whose reports came after it ended heard something: the run starts over.
        var e = EmptyScanDetector(emptyRun: 3, history: 6, busyNeeded: 4)
        for _ in 0..<6 { _ = e.record(.heard) }
        #expect(!e.record(.empty) && !e.record(.empty) && !e.record(.late))
        e.heardLate()
        #expect(!e.record(.empty) && !e.record(.empty) && e.record(.empty))
    }

    @Test func restartBackoffDoublesToItsMaximum() {
        let b = RestartBackoff(initial: 300, maximum: 3600)
        #expect((1...6).map { b.delay(after: $0) } == [300, 600, 1200, 2400, 3600, 3600])
        #expect(b.delay(after: 1000) == 3600)
    }
}
