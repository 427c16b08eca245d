// Fuzz target for the sightings-file reader: exports researchers pass between tools and boards
// (docs/sightings-format.md), read by `gaenctl match`, `windows`, `trial report` and `calibrate`.
import ENProtocol
import Foundation
import FuzzSupport

/// The matcher's log (`parse`) and the toolkit's rows (`records`) come from one validator: on
/// any input they must fail with the same error, or agree row for row (a divergence would let
/// one tool read a file another rejects, or read it differently).
func fuzzOne(_ data: Data) {
    let log: Result<SightingsLog, SightingsFormatError>
    let records: Result<[SightingsRecord], SightingsFormatError>
    do { log = .success(try SightingsFile.parse(data)) } catch let e as SightingsFormatError { log = .failure(e) } catch {
        fatalError("parse threw an unnamed error: \(error)")
    }
    do { records = .success(try SightingsFile.records(data)) } catch let e as SightingsFormatError { records = .failure(e) } catch {
        fatalError("records threw an unnamed error: \(error)")
    }
    switch (log, records) {
    case (.failure(let a), .failure(let b)):
        guard a == b else { fatalError("parse and records fail differently: \(a) / \(b)") }
    case (.success(let l), .success(let r)):
        let reports = r.filter { !$0.isEmptyScan }
        guard reports.count == l.sightings.count else { fatalError("\(l.sightings.count) sightings vs \(reports.count) report rows") }
        for (s, row) in zip(l.sightings, reports) {
            guard s.time == row.time, s.rpi == row.rpi, s.aem == row.aem, Int(s.rssi) == row.rssi,
                  Int(s.rssiCorrection) == row.rssiCorrection,
                  // An all-zero address is no advertiser's: the sighting keeps none.
                  s.addressText == (row.address == "00:00:00:00:00:00" ? nil : row.address) else {
                fatalError("a sighting differs from its row")
            }
            if let i = s.scanIndex {
                let scan = l.scans[Int(i)]
                guard scan.start == row.scanStart, scan.end == row.scanEnd else { fatalError("a sighting's scan differs from its row") }
            } else if row.scanStart != nil {
                fatalError("a row's scan was lost")
            }
        }
    default:
        fatalError("one reader accepted what the other rejected: \(log) / \(records)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSightingsFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzEntry.run(data, size, fuzzOne) }

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer's own main() calls LLVMFuzzerTestOneInput and an
// entry point of ours would collide with it; only the ordinary build gets one, the corpus replayer.
#if !FUZZING
@main struct FuzzSightingsFileMain { static func main() { FuzzEntry.main(name: "FuzzSightingsFile", fuzzSightingsFile) } }
#endif
