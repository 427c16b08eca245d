import ENProtocol
import Foundation
import Testing
@testable import TrialKit
import TrialFormats

/// Calibration estimated from a trial's own readings: known device offsets come back, the
/// clustered standard errors cover the truth as often as they claim, and data that cannot
/// determine the offsets are refused with the reason.
@Suite struct CalibrationEstimateTests {
    struct Truth {
        var rx: [String: Double]
        var tx: [String: Double]
    }

    static func gaussian(_ rng: inout SeededRandom) -> Double {
        let u1 = max(Double(rng.next() >> 11) * 0x1p-53, 1e-12), u2 = Double(rng.next() >> 11) * 0x1p-53
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    /// Eight boards in two sites (each its own channel), every ordered pair at a distance of
    /// its own, a persistent effect per pair (sd `pairSD`: the walls and bodies between them)
    /// and noise per reading; boards b6, b7 visit both sites so the sites are linked.
    static func trial(seed: UInt64, pairSD: Double = 2, readingsPerPair: Int = 40, corrections: [String: Int] = [:]) -> (csv: String, truth: Truth) {
        var rng = SeededRandom(seed: seed)
        let boards = (0..<8).map { "b\($0)" }
        var truth = Truth(rx: [:], tx: [:])
        for b in boards { truth.rx[b] = 4 * gaussian(&rng); truth.tx[b] = 4 * gaussian(&rng) }
        let sites: [(name: String, a: Double, s: Double, boards: [String])] = [
            ("office", 50, 20, ["b0", "b1", "b2", "b3", "b6", "b7"]), ("train", 44, 14, ["b4", "b5", "b6", "b7"])]
        var csv = "time,receiver,transmitter,distance,attenuation,site,rpi,tx_power,rssi,rssi_correction\n"
        var t = 1_800_000_000.0
        for site in sites {
            for r in site.boards {
                for x in site.boards where x != r {
                    let d = [0.5, 1, 1.5, 2, 3, 5, 8][Int(rng.next() % 7)]
                    let pair = pairSD * gaussian(&rng)
                    for _ in 0..<readingsPerPair {
                        let a = site.a + site.s * log10(d) + truth.rx[r]! + truth.tx[x]! + pair + 3 * gaussian(&rng)
                        let c = corrections[r] ?? 0
                        t += 1
                        csv += "\(t),\(r),\(x),\(d),\(Format.fixed(a, 2)),\(site.name),,-20,\(Int((-20 - a - Double(c)).rounded())),\(c)\n"
                    }
                }
            }
        }
        return (csv, truth)
    }

    static func write(_ text: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("calibration-estimate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent("attenuation.csv")
        try Data(text.utf8).write(to: url)
        return url
    }

    static func centred(_ v: [String: Double]) -> [String: Double] {
        let mean = v.values.reduce(0, +) / Double(v.count)
        return v.mapValues { $0 - mean }
    }

    @Test func knownOffsetsComeBackRelativeToTheMeanDevice() throws {
        let (csv, truth) = Self.trial(seed: 3, pairSD: 0.5, readingsPerPair: 200, corrections: ["b2": 4])
        let url = try Self.write(csv)
        let e = try CalibrationEstimate.estimate([url])
        let rx = Self.centred(truth.rx), tx = Self.centred(truth.tx)
        #expect(e.devices.map(\.name) == (0..<8).map { "b\($0)" })
        for d in e.devices {
            let r = try #require(d.receiverOffset), t = try #require(d.transmitterOffset)
            #expect(abs(r - rx[d.name]!) < 1, "\(d.name) R \(r) vs \(rx[d.name]!)")
            #expect(abs(t - tx[d.name]!) < 1, "\(d.name) T \(t) vs \(tx[d.name]!)")
            #expect(d.proposedRssiCorrection == (d.name == "b2" ? 4 : 0) + Int(r.rounded()))
            #expect(d.proposedTxPower == -20 - Int(t.rounded()))
        }
        #expect(abs(e.devices.compactMap(\.receiverOffset).reduce(0, +)) < 1e-6)
        #expect(abs(e.devices.compactMap(\.transmitterOffset).reduce(0, +)) < 1e-6)
        // Each site's channel, for the mean device.
        let office = try #require(e.channels.first { $0.site == "office" }), train = try #require(e.channels.first { $0.site == "train" })
        let shift = truth.rx.values.reduce(0, +) / 8 + truth.tx.values.reduce(0, +) / 8
        #expect(abs(office.slopePerDecade - 20) < 1.5 && abs(train.slopePerDecade - 14) < 2)
        #expect(abs(office.attenuationAt1m - (50 + shift)) < 1.5 && abs(train.attenuationAt1m - (44 + shift)) < 1.5)
        #expect(e.clusters == 6 * 5 + 4 * 3)
    }

    @Test func aReferenceDeviceIsZeroAndTheOthersAreRelativeToIt() throws {
        let (csv, truth) = Self.trial(seed: 5, pairSD: 0.5, readingsPerPair: 200)
        var options = CalibrationEstimate.Options()
        options.reference = "b6"
        let e = try CalibrationEstimate.estimate([try Self.write(csv)], options: options)
        let ref = try #require(e.devices.first { $0.name == "b6" })
        #expect(abs(ref.receiverOffset!) < 1e-9 && abs(ref.transmitterOffset!) < 1e-9 && ref.notes.contains("reference"))
        for d in e.devices {
            #expect(abs(d.receiverOffset! - (truth.rx[d.name]! - truth.rx["b6"]!)) < 1.2)
            #expect(abs(d.transmitterOffset! - (truth.tx[d.name]! - truth.tx["b6"]!)) < 1.2)
        }
    }

    /// Readings within a pair share an effect; the standard errors are clustered by pair. Over
    /// many trials the interval estimate ± 1.96 SE holds the truth about 95 % of the time; a
    /// row-level standard error would be far too small here (200 readings per pair, 2 dB
    /// shared) and cover much less often.
    @Test func clusteredStandardErrorsCoverTheTruth() throws {
        var covered = 0, total = 0
        for seed in 1...30 {
            let (csv, truth) = Self.trial(seed: UInt64(100 + seed), pairSD: 2, readingsPerPair: 30)
            let e = try CalibrationEstimate.estimate([try Self.write(csv)])
            let rx = Self.centred(truth.rx), tx = Self.centred(truth.tx)
            for d in e.devices {
                total += 2
                if abs(d.receiverOffset! - rx[d.name]!) <= 1.96 * d.receiverStandardError! { covered += 1 }
                if abs(d.transmitterOffset! - tx[d.name]!) <= 1.96 * d.transmitterStandardError! { covered += 1 }
            }
        }
        let rate = Double(covered) / Double(total)
        // 480 intervals; few clusters per device (5 to 9 pairs) make the sandwich a little liberal.
        #expect(rate > 0.82 && rate < 0.995, "coverage \(rate)")
    }

    /// Every ordered pair of `devices` at 1, 2 and 4 m in `site`.
    static func allPairs(_ devices: [String], site: String) -> String {
        var csv = ""
        for r in devices { for t in devices where t != r { for d in [1.0, 2.0, 4.0] { csv += "\(r),\(t),\(d),\(50 + 20 * log10(d) + Double(r.count)),\(site)\n" } } }
        return csv
    }

    @Test func devicesThatNeverHeardOneAnotherAreRefusedWithTheGroups() throws {
        let header = "receiver,transmitter,distance,attenuation,site\n"
        _ = try CalibrationEstimate.estimate([try Self.write(header + Self.allPairs(["a", "b", "c"], site: "hall"))])
        // Two groups: nothing says whether d hears worse than a or a transmits louder than d.
        let split = header + Self.allPairs(["a", "b", "c"], site: "hall") + Self.allPairs(["d", "e", "f"], site: "yard")
        #expect { try CalibrationEstimate.estimate([try Self.write(split)]) } throws: { error in
            "\(error)".contains("2 groups that never heard one another") && "\(error)".contains("receiver d")
        }
        // Two boards alone: a's reception cannot be told from b's transmission.
        let two = header + Self.allPairs(["a", "b"], site: "hall")
        #expect { try CalibrationEstimate.estimate([try Self.write(two)]) } throws: { "\($0)".contains("2 groups") }
        // Linked by one board that visits both sites: fine.
        let linked = split + Self.allPairs(["a", "d", "e"], site: "yard")
        let e = try CalibrationEstimate.estimate([try Self.write(linked)])
        #expect(e.devices.count == 6 && e.channels.count == 2)
    }

    @Test func rowsItCannotUseAreRefusedOrLeftOutAndSaid() throws {
        let one = "receiver,transmitter,distance,attenuation\na,b,2,50\nb,a,2,51\n"
        #expect { try CalibrationEstimate.estimate([try Self.write(one)]) } throws: { "\($0)".contains("every reading at one distance") }
        let dp3t = "receiver_model,transmitter_model,distance,attenuation,calibration_table\nA,B,1,50,\"en.csv (2020-06-13), DP-3T convention\"\n"
        var options = CalibrationEstimate.Options()
        options.grouping = .model
        #expect { try CalibrationEstimate.estimate([try Self.write(dp3t)], options: options) } throws: { "\($0)".contains("--calibration-convention dp3t") }
        #expect { try CalibrationEstimate.estimate([try Self.write(one)], options: options) } throws: { "\($0)".contains("receiver_model") }
        options.reference = "zz"
        let ok = "receiver,transmitter,distance,attenuation,site\n" + Self.allPairs(["a", "b", "c"], site: "hall") + "b,a,,60,hall\n"
        options.grouping = .board
        #expect { try CalibrationEstimate.estimate([try Self.write(ok)], options: options) } throws: { "\($0)".contains("reference 'zz'") }
        options.reference = nil
        let e = try CalibrationEstimate.estimate([try Self.write(ok)], options: options)
        #expect(e.rows == 18 && e.rowsSkipped == 1)
        #expect(e.devices.allSatisfy { $0.confidence == 0 && $0.notes.contains { $0.hasPrefix("too few readings") } })
    }

    @Test func theProposedTableIsReadBackByTheDP3TImportsTableReader() throws {
        let (csv, _) = Self.trial(seed: 9, pairSD: 0.5, readingsPerPair: 200)
        let e = try CalibrationEstimate.estimate([try Self.write(csv)])
        let table = try CalibrationTable(CSVReader(bytes: Array(e.calibrationTableCSV(oem: "gaend-trial").utf8), file: "/x/calibration.csv"))
        for d in e.devices {
            let row = try #require(table.entry(d.name), "\(d.name) not in the table")
            #expect(row.rssiCorrection == Double(d.proposedRssiCorrection!) && row.tx == Double(d.proposedTxPower!))
        }
    }

    /// Names come from the files and gaenctl prints the markdown: a terminal escape in a board's
    /// name is printed escaped, and a `|` does not split the table.
    @Test func namesFromTheFilesArePrintedEscaped() throws {
        let hostile = "a\u{1B}]0;pwned\u{07}|x"
        let csv = "receiver,transmitter,distance,attenuation,site\n" + Self.allPairs([hostile, "b", "c"], site: "hall")
        let md = try CalibrationEstimate.estimate([try Self.write(csv)]).markdown(inputs: ["f.csv"])
        #expect(!md.contains("\u{1B}") && !md.contains("\u{07}"))
        #expect(md.contains("| a\\u{1b}]0;pwned\\u{7}\\|x |"), "\(md)")
        var options = CalibrationEstimate.Options()
        options.reference = "z\u{1B}"
        #expect { try CalibrationEstimate.estimate([try Self.write(csv)], options: options) } throws: { !"\($0)".contains("\u{1B}") }
    }
}
