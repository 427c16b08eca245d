import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// The export fields: markers with explicit receiver/transmitter columns (the `pair:`
/// label still read), and attenuation.csv rows that carry rpi, TX power and RSSI for an exact join.
@Suite struct ExportColumnsTests {
    @Test func markersTakeReceiverAndTransmitterColumnsAndStillReadPairLabels() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("m-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: url) }
        try """
            time,label,distance,note,receiver,transmitter
            100,seated,1.5,,rx,tx
            100,pair:rx/other,3,,,
            100,everyone,9,,,
            """.write(to: url, atomically: true, encoding: .utf8)
        let markers = try MarkersFile.read(url)
        let truth = GroundTruth(markers: markers)
        #expect(truth.distance(at: 150, pair: NodePair(receiver: "rx", transmitter: "tx")) == 1.5)
        #expect(truth.distance(at: 150, pair: NodePair(receiver: "rx", transmitter: "other")) == 3)
        #expect(truth.distance(at: 150, pair: NodePair(receiver: "rx", transmitter: "third")) == 9)
        // Written back with the pair in its own columns, and read the same.
        let back = FileManager.default.temporaryDirectory.appendingPathComponent("m2-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: back) }
        try MarkersFile.csv(markers).write(to: back)
        let text = try String(contentsOf: back, encoding: .utf8)
        #expect(text.hasPrefix("time,label,distance,note,node,site,receiver,transmitter\n100,seated,1.5,,,,rx,tx\n100,pair:rx/other,3,,,,rx,other\n"))
        #expect(try MarkersFile.read(back).map(\.pair) == markers.map(\.pair))
        // Half a pair is an error.
        try "time,label,distance,receiver,transmitter\n1,x,1,rx,\n".write(to: url, atomically: true, encoding: .utf8)
        #expect(throws: CSVError.self) { try MarkersFile.read(url) }
    }

    @Test func attenuationRowsCarryTheSightingForAnExactJoin() throws {
        let obs = [Observation(time: 1_700_000_000.125, receiver: "rx", transmitter: "tx", distance: 1, attenuation: 46,
                               rpi: "00112233445566778899aabbccddeeff", txPower: -20, rssi: -70, rssiCorrection: 4)]
        let text = TrialReportWriter.attenuationCSV(obs, site: "s").text
        #expect(text == "time,receiver,transmitter,distance,attenuation,site,rpi,tx_power,rssi,rssi_correction\n"
                + "1700000000.125,rx,tx,1,46,s,00112233445566778899aabbccddeeff,-20,-70,4\n")
        let back = try TrialPipeline.observations(attenuationCSV: CSVReader(bytes: Array(text.utf8), file: "a.csv"), groundTruth: GroundTruth(markers: [])).0
        #expect(back == obs)
    }
}
