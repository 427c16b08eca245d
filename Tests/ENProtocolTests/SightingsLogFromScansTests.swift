import Foundation
import Testing
@testable import ENProtocol

/// The node's one sighting and scan type, and the one conversion of recorded scans that
/// matching and the research export share.
@Suite("Recorded scans")
struct SightingsLogFromScansTests {
    static let rpi = try! RollingProximityIdentifier(hex: "00112233445566778899aabbccddeeff")
    static let aem = try! AssociatedEncryptedMetadata(hex: "01020304")

    static func sighting(_ time: Double, rssi: Int = -60, correction: Int = 0, address: UInt64? = nil) -> Sighting {
        Sighting(time: time, rpi: rpi, aem: aem, rssi: rssi, rssiCorrection: correction, address: address)
    }

    @Test("a sighting stays 40 bytes: the matcher keeps millions of them")
    func compact() {
        #expect(MemoryLayout<Sighting>.stride == 40)
    }

    @Test("RPI, AEM, scan index and the 48-bit address read back as given; an all-zero address is none")
    func fields() {
        var s = Self.sighting(100.25, rssi: -127, correction: 100, address: 0xBC9A_7856_3412)
        #expect(s.rpi == Self.rpi && s.aem == Self.aem && s.rssi == -127 && s.rssiCorrection == 100)
        #expect(s.address == 0xBC9A_7856_3412 && s.addressText == "BC:9A:78:56:34:12")
        #expect(s.scanIndex == nil)
        s.scanIndex = 7
        #expect(s.scanIndex == 7 && s.address == 0xBC9A_7856_3412)
        s.address = 0
        #expect(s.address == nil && s.addressText == nil && s.scanIndex == 7)
        s.address = 0xFFFF_FFFF_FFFF
        #expect(s.addressText == "FF:FF:FF:FF:FF:FF" && s.scanIndex == 7 && s.rssi == -127)
    }

    @Test("the log of recorded scans: times in whole ms, each scan's correction (the current one where none was kept), empty scans kept")
    func log() {
        let scans = [
            Scan(start: 10.0004, end: 14.0006, rssiCorrection: 3, sightings: [Self.sighting(11.0004, correction: 3, address: 1)]),
            Scan(start: 20, end: 24), // saw nothing, recorded before corrections were kept
            Scan(start: 30, end: 34, sightings: [Self.sighting(31), Self.sighting(32.5)]),
        ]
        let log = SightingsLog(recorded: scans, currentCorrection: -5)
        #expect(log.hasScanColumns)
        #expect(log.scans == [Scan(start: 10, end: 14.001, rssiCorrection: 3), Scan(start: 20, end: 24, rssiCorrection: -5),
                              Scan(start: 30, end: 34, rssiCorrection: -5)])
        #expect(log.sightings.map(\.time) == [11, 31, 32.5])
        #expect(log.sightings.map(\.rssiCorrection) == [3, -5, -5])
        #expect(log.sightings.map(\.scanIndex) == [0, 2, 2])
        #expect(log.sightings[0].address == 1)
    }

    @Test("a time range keeps the sightings in it, empty scans that started in it, and no scan whose sightings all fall outside")
    func range() {
        let scans = [
            Scan(start: 10, end: 14, sightings: [Self.sighting(11), Self.sighting(13)]),
            Scan(start: 15, end: 19), // empty, starts in range
            Scan(start: 20, end: 24, sightings: [Self.sighting(25)]), // only sighting outside
            Scan(start: 25, end: 29), // empty, starts outside
        ]
        let log = SightingsLog(recorded: scans, currentCorrection: 0, from: 12, to: 25)
        #expect(log.scans.map(\.start) == [10, 15])
        #expect(log.sightings.map(\.time) == [13] && log.sightings.map(\.scanIndex) == [0])
    }

    @Test("the log's rows for the export: one per sighting, one per empty scan, in order, with node, site and address")
    func rows() {
        let scans = [
            Scan(start: 10, end: 14, rssiCorrection: 2, sightings: [Self.sighting(11, rssi: -70, correction: 2, address: 0xBC9A_7856_3412)]),
            Scan(start: 20, end: 24),
        ]
        var rows: [SightingsRecord] = []
        SightingsLog(recorded: scans, currentCorrection: -1).forEachRecord(node: "n1", site: "lab") { rows.append($0) }
        #expect(rows == [
            SightingsRecord(time: 11, rpi: Self.rpi, aem: Self.aem, rssi: -70, scanStart: 10, scanEnd: 14, rssiCorrection: 2,
                            node: "n1", site: "lab", address: "BC:9A:78:56:34:12"),
            SightingsRecord(time: 20, rpi: nil, aem: nil, rssi: nil, scanStart: 20, scanEnd: 24, rssiCorrection: -1, node: "n1", site: "lab"),
        ])
    }

    @Test("rows written and read back (both readers, either format) give the log matching reads, addresses included", arguments: [true, false])
    func roundTripThroughFile(csv: Bool) throws {
        let scans = [
            Scan(start: 10, end: 14, rssiCorrection: 2, sightings: [Self.sighting(11.5, correction: 2, address: 0x5A12_3456_789A),
                                                                    Self.sighting(12, correction: 2)]),
            Scan(start: 20, end: 24, rssiCorrection: 2),
        ]
        let log = SightingsLog(recorded: scans, currentCorrection: 0)
        let writer = SightingsFileWriter(format: csv ? .csv : .jsonl)
        var text = writer.header
        log.forEachRecord { text += writer.row($0) }
        let read = try SightingsFile.parse(Data(text.utf8))
        #expect(read.sightings == log.sightings)
        #expect(read.scans.map { [$0.start, $0.end] } == log.scans.map { [$0.start, $0.end] })
    }
}
