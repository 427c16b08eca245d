import Foundation
import Testing
@testable import ENProtocol

/// What a node accepts from an app beyond the format: keys checked against the clock, keys per
/// file and per day bounded, fields outside the framework's ranges refused by name, and
/// export.bin's size known (and refused) before anything is inflated.
@Suite("Key file acceptance")
struct KeyAcceptanceTests {
    /// 2023-11-14T22:13:20Z, and its day's first interval.
    static let now: Double = 1_700_000_000
    static let today = UTCDay(unixSeconds: now)

    static func file(_ keys: [DiagnosisKey]) throws -> KeyExportFile {
        try KeyExportFile(parsing: KeyExportWriter.exportBin(header: KeyFixtures.header, keys: keys))
    }

    static func start(_ dayOffset: Int32) -> UInt32 { UTCDay(today.rawValue + dayOffset).firstInterval.rawValue }

    @Test("a key starting after 00:00 UTC tomorrow is refused, naming the key's index; tomorrow's start is the latest accepted")
    func futureKeyRefused() throws {
        var perDay: [UInt32: Int] = [:]
        let ok = try Self.file([KeyFixtures.key(1, start: Self.start(-3)), KeyFixtures.key(2, start: Self.start(1))])
        try ok.checkAcceptable(now: Self.now, keysPerDay: &perDay)
        perDay = [:]
        let far = try Self.file([KeyFixtures.key(1, start: Self.start(0)), KeyFixtures.key(2, start: Self.start(0)),
                                 KeyFixtures.key(3, start: Self.start(0) + 145)])
        #expect(throws: KeyAcceptanceError.startsInFuture(list: "keys", index: 2, start: Self.start(0) + 145, latest: Self.start(1))) {
            try far.checkAcceptable(now: Self.now, keysPerDay: &perDay)
        }
        // The hostile report's value: rolling start 2^31-1.
        perDay = [:]
        let max = try Self.file([KeyFixtures.key(9, start: UInt32(Int32.max))])
        #expect(throws: KeyAcceptanceError.startsInFuture(list: "keys", index: 0, start: UInt32(Int32.max), latest: Self.start(1))) {
            try max.checkAcceptable(now: Self.now, keysPerDay: &perDay)
        }
        #expect("\(KeyAcceptanceError.startsInFuture(list: "keys", index: 0, start: 2_147_483_647, latest: 2_833_344))".contains("keys[0]"))
    }

    @Test("gaend refuses a transmission risk outside 0...8 by the same rule the publisher applies (KeyRules)")
    func transmissionRiskRefused() throws {
        var bad = KeyFixtures.key(1, start: Self.start(-2))
        bad.transmissionRiskLevel = 99
        var ok = KeyFixtures.key(2, start: Self.start(-2))
        ok.transmissionRiskLevel = 8
        var perDay: [UInt32: Int] = [:]
        #expect(throws: KeyAcceptanceError.refused(list: "keys", index: 1, reason: .transmissionRisk(99))) {
            try Self.file([ok, bad]).checkAcceptable(now: Self.now, keysPerDay: &perDay)
        }
        #expect(KeyRules.refusal(of: bad, now: Self.now) == .transmissionRisk(99))
        #expect(KeyRules.refusal(of: ok, now: Self.now) == nil)
        #expect(KeyRules.refusal(of: ok, now: Self.now, earliestStart: Self.start(-1)) == .tooOld(start: Self.start(-2), earliest: Self.start(-1)))
    }

    @Test("a file with no keys is refused")
    func emptyFileRefused() throws {
        var perDay: [UInt32: Int] = [:]
        #expect(throws: KeyAcceptanceError.noKeys) { try Self.file([]).checkAcceptable(now: Self.now, keysPerDay: &perDay) }
    }

    @Test("keys per file and keys per day (across the files of one call) are bounded")
    func keyCountsBounded() throws {
        let limits = KeyAcceptanceLimits(maxKeysPerFile: 3, maxKeysPerDay: 4)
        var perDay: [UInt32: Int] = [:]
        let four = try Self.file((0..<4).map { KeyFixtures.key(UInt8($0), start: Self.start(-1)) })
        #expect(throws: KeyAcceptanceError.tooManyKeys(count: 4, limit: 3)) {
            try four.checkAcceptable(now: Self.now, limits: limits, keysPerDay: &perDay)
        }
        perDay = [:]
        let three = try Self.file((0..<3).map { KeyFixtures.key(UInt8($0), start: Self.start(-1)) })
        try three.checkAcceptable(now: Self.now, limits: limits, keysPerDay: &perDay)
        // A second file of the same call adds to the same day: 6 > 4.
        #expect(throws: KeyAcceptanceError.tooManyKeysForDay(day: UTCDay(Self.today.rawValue - 1), count: 6, limit: 4)) {
            try three.checkAcceptable(now: Self.now, limits: limits, keysPerDay: &perDay)
        }
    }

    @Test("report_type outside 0...5 and days_since_onset outside -14...14 are refused by name, on both decoders")
    func outOfRangeFieldsRefused() throws {
        // key_data, rolling_start, rolling_period, then the field under test, as raw protobuf.
        func entry(_ tail: [UInt8]) -> Data {
            var key: [UInt8] = [0x0A, 16] + [UInt8](repeating: 5, count: 16) + [0x18, 0x80, 0x80, 0x80, 0x01, 0x20, 0x90, 0x01] + tail
            key = [0x3A, UInt8(key.count)] + key
            return Data(KeyExportFile.headerBytes) + Data(key)
        }
        #expect(throws: KeyExportError.reportType(list: "keys", index: 0, value: 99)) { try KeyExportFile(parsing: entry([0x28, 99])) }
        // sint32 2^31-1 (zigzag 0xFFFFFFFE)
        #expect(throws: KeyExportError.daysSinceOnset(list: "keys", index: 0, value: Int32.max)) {
            try KeyExportFile(parsing: entry([0x30, 0xFE, 0xFF, 0xFF, 0xFF, 0x0F]))
        }
        #expect(throws: KeyExportError.daysSinceOnset(list: "keys", index: 0, value: -15)) { try KeyExportFile(parsing: entry([0x30, 29])) }
        // In range: accepted, with the values kept.
        let ok = try KeyExportFile(parsing: entry([0x28, 5, 0x30, 28]))
        var batches = ok.keyBatches().makeIterator()
        let k = try #require(batches.next()?.first)
        #expect(k.reportType == .revoked && k.daysSinceOnsetOfSymptoms == 14)
    }

    @Test("export.bin's declared size is known from the ZIP's directory before anything is inflated")
    func declaredSize() throws {
        let keys = (0..<100).map { KeyFixtures.key(UInt8($0), start: Self.start(-1)) }
        let bin = try KeyExportWriter.exportBin(header: KeyFixtures.header, keys: keys)
        let zip = try KeyExportWriter.zip([("export.bin", bin), ("export.sig", Data())])
        #expect(try KeyExportFile.declaredExportSize(zip) == bin.count)
        #expect(try KeyExportFile.declaredExportSize(bin) == bin.count)
        // A bomb: 16 MiB of zeros deflate to a few KB, and the directory says so.
        let bomb = try KeyExportWriter.zip([("export.bin", Data(KeyExportFile.headerBytes) + Data(count: 16 << 20)), ("export.sig", Data())])
        #expect(bomb.count < 64 << 10)
        #expect(try KeyExportFile.declaredExportSize(bomb) == 16 + (16 << 20))
    }
}
