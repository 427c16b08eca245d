import ENProtocol
import Foundation
import Testing
@testable import KeyDistribution

@Suite struct PublicationPlanTests {
    static let day: Int64 = 86_400
    // 15:20 UTC on some day: complete hours exist today.
    static let now: Int64 = 20_400 * day + 15 * 3600 + 1_200

    static func key(_ byte: UInt8, day: Int64) -> DiagnosisKey {
        DiagnosisKey(key: try! TemporaryExposureKey(bytes: Data(repeating: byte, count: 16)),
                     rollingStartIntervalNumber: ENIntervalNumber(UInt32(day * 144)))
    }

    @Test func embargoAndCurrentHourHoldKeysBack() {
        let today = Self.now / Self.day
        // Yesterday's key expired at midnight: available at 02:00 today, in hour 2's package.
        let yesterday = SubmittedKey(key: Self.key(1, day: today - 1), submittedAt: today * Self.day + 60)
        // Submitted in the current hour: waits.
        let late = SubmittedKey(key: Self.key(2, day: today - 1), submittedAt: Self.now - 10)
        // Still valid: its hour (tomorrow 02:00) is not complete.
        let valid = SubmittedKey(key: Self.key(3, day: today), submittedAt: Self.now - 7200)
        var o = PublishOptions(country: "DE", region: "DE")
        o.minimumKeysPerPackage = 1
        let plan = PublicationPlan.plan([yesterday, late, valid], now: Self.now, options: o)
        #expect(plan.keysPublished == 1)
        #expect(plan.keysWaiting == 2)
        #expect(plan.days.isEmpty) // nothing complete yet for a day package of today
        #expect(plan.hours[UTCDay(Int32(today))] == [2])
        #expect(plan.googlePackages.map(\.path) == ["DE/\(today * Self.day + 7200)-\(today * Self.day + 10800)-00001.zip"])
    }

    @Test func thinHoursShiftAndBigHoursSplitIntoBatches() {
        let today = Self.now / Self.day
        var keys: [SubmittedKey] = []
        for h in 0..<5 {
            for i in 0..<3 {
                // Keys of 4 days ago, available long before these submissions: the submission hour counts.
                keys.append(SubmittedKey(key: Self.key(UInt8(h * 10 + i), day: today - 4), submittedAt: (today - 2) * Self.day + Int64(h) * 3600))
            }
        }
        var o = PublishOptions(country: "DE", region: "R")
        o.minimumKeysPerPackage = 5
        o.maximumKeysPerFile = 4
        let plan = PublicationPlan.plan(keys, now: Self.now, options: o)
        // 3 -> 6 at hour 1; 3 -> 6 at hour 3; the last 3 wait.
        #expect(plan.keysPublished == 12 && plan.keysWaiting == 3)
        #expect(plan.googlePackages.map { "\($0.batchNum)/\($0.batchSize):\($0.keys.count)" } == ["1/2:4", "2/2:2", "1/2:4", "2/2:2"])
        #expect(plan.googlePackages[1].path.hasSuffix("-00002.zip"))
        #expect(plan.hours.isEmpty) // two days ago: a day package only
        #expect(plan.cwaPackages.count == 1 && plan.cwaPackages[0].keys.count == 12)
    }

    @Test func indexesRejectPathsOutsideTheTree() throws {
        #expect(throws: DistributionError.self) { try GoogleLayout.decodeIndex(Data("R/../../etc/passwd\n".utf8), url: "u") }
        #expect(throws: DistributionError.self) { try GoogleLayout.decodeIndex(Data("http://elsewhere/x.zip\n".utf8), url: "u") }
        #expect(try GoogleLayout.decodeIndex(Data("R/1-2-00001.zip\n\nR/2-3-00001.zip\n".utf8), url: "u") == ["R/1-2-00001.zip", "R/2-3-00001.zip"])
        #expect(throws: DistributionError.self) { try CWALayout.decodeHours(Data("[1, 24]".utf8), url: "u") }
        #expect(try CWALayout.decodeHours(Data("[0,1,23]".utf8), url: "u") == [0, 1, 23])
    }
}
