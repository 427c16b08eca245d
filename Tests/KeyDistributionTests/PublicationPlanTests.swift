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

@Suite struct PublicationStabilityTests {
    static let day: Int64 = 86_400
    static let now: Int64 = 20_400 * day + 15 * 3600 + 1_200

    static func key(_ n: Int, day: Int64) -> DiagnosisKey {
        var bytes = Data(repeating: 0, count: 16)
        withUnsafeBytes(of: UInt64(n).bigEndian) { bytes.replaceSubrange(8..<16, with: $0) }
        return DiagnosisKey(key: try! TemporaryExposureKey(bytes: bytes), rollingStartIntervalNumber: ENIntervalNumber(UInt32(day * 144)))
    }

    @Test("a package inside the retention keeps its keys while the hours shifted into it leave the retention")
    func retentionMovingOnMovesNoKey() {
        var o = PublishOptions(country: "DE", region: "DE")
        o.minimumKeysPerPackage = 4
        o.retentionDays = 14
        let today = Self.now / Self.day
        // Two thin hours across midnight (2 keys each): 23:00 of today-15 and 00:00 of today-14,
        // shifted together into the second one.
        let midnight = (today - 14) * Self.day
        let keys = (0..<4).map { i in
            SubmittedKey(key: Self.key(i, day: today - 17), submittedAt: midnight - 3600 + Int64(i / 2) * 3600 + 60)
        }
        let dayPath = CWALayout.day("DE", UTCDay(Int32(today - 14)))
        // Yesterday both hours were inside the retention.
        let before = PublicationPlan.plan(keys, now: Self.now - Self.day, options: o)
        let package = before.cwaPackages.first { $0.path == dayPath }
        #expect(package?.keys.count == 4)
        // Today 23:00 of today-15 has left the retention; 00:00 of today-14 has not: its
        // package keeps its four keys, and none waits or moves.
        let after = PublicationPlan.plan(keys, now: Self.now, options: o)
        #expect(after.cwaPackages.first { $0.path == dayPath } == package)
        #expect(after.keysWaiting == 0 && after.keysPublished == 4)
    }

    @Test("a day's packages hold at most maximumKeysPerDay keys; the rest go to the next day, none is lost")
    func dayCapDefersToTheNextDay() {
        var o = PublishOptions(country: "DE", region: "DE")
        o.minimumKeysPerPackage = 1
        o.maximumKeysPerDay = 10
        o.maximumKeysPerFile = 4
        let today = Self.now / Self.day
        // 25 keys available at 03:00 three days ago.
        let keys = (0..<25).map { SubmittedKey(key: Self.key($0, day: today - 5), submittedAt: (today - 3) * Self.day + 3 * 3600 + 60) }
        let plan = PublicationPlan.plan(keys, now: Self.now, options: o)
        #expect(plan.keysPublished == 25 && plan.keysWaiting == 0)
        #expect(plan.keysDeferred == 15)
        let days = plan.cwaPackages.filter { !$0.path.contains("/hour/") }
        #expect(days.map(\.keys.count) == [10, 10, 5])
        #expect(plan.cwaPackages.allSatisfy { $0.keys.count <= 10 })
        #expect(plan.googlePackages.allSatisfy { $0.keys.count <= 4 })
        #expect(Set(plan.googlePackages.flatMap(\.keys)) == Set(keys.map(\.key)))
        // Deterministic: the same keys in another order give the same packages.
        #expect(PublicationPlan.plan(keys.reversed(), now: Self.now, options: o) == plan)
    }

    @Test("a full package of the largest keys the rules accept stays within gaend's share of a call and the app's download limit")
    func packageLimitsHold() throws {
        let n = PackageLimits.maxKeysPerPackage
        #expect(n <= KeyAcceptanceLimits.default.maxKeysPerFile)
        let keys = (0..<n).map { i in
            DiagnosisKey(key: try! TemporaryExposureKey(bytes: Data((0..<16).map { _ in UInt8.random(in: 0...255) })),
                         rollingStartIntervalNumber: ENIntervalNumber(UInt32(Int32.max) - UInt32(i % 144)), rollingPeriod: 144,
                         transmissionRiskLevel: 8, reportType: .recursive, daysSinceOnsetOfSymptoms: -14)
        }
        let signer = KeyExportSigner(key: try P256PrivateKey.generate(), info: KeyExportSignatureInfo(keyId: String(repeating: "K", count: 64), keyVersion: "v1"))
        let header = KeyExportHeader(startTimestamp: 1, endTimestamp: 2, region: String(repeating: "R", count: 32), batchNum: 1, batchSize: 1,
                                     signatureInfos: Array(repeating: signer.info, count: 4))
        let bin = try KeyExportWriter.exportBin(header: header, keys: keys)
        #expect(bin.count <= PackageLimits.maxExportBytes, "\(bin.count)")
        let zip = try KeyExportWriter.signedZip(exportBin: bin, signers: [signer, signer, signer, signer])
        #expect(zip.count <= PackageLimits.appMaxPackageBytes)
        #expect(bin.count <= KeyAcceptanceLimits.default.maxExportSize)
    }
}
