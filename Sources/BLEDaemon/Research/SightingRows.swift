import ENProtocol
import HCIHost
import HCIProtocol

/// The one conversion of stored scans into rows of the sightings format
/// (docs/sightings-format.md): `ExportSightings` writes these rows and matching reads them, so
/// `gaenctl windows` on an export gives the node's own windows. Times in whole milliseconds
/// (the format's precision); every scan, an empty one as one row without a sighting (exposure
/// windows need every scan); each scan's own RSSI correction, and for scans stored before it
/// was recorded per scan, the current one.
package enum SightingRows {
    /// Calls `body` with each row and the index of its scan in `scans`, oldest first. Only the
    /// rows whose sighting (or empty scan's start) lies in `from..<to` are kept; `addresses: false`
    /// skips formatting the advertiser's address, which matching does not read.
    package static func forEach(_ scans: [StoredScan], currentCorrection: Int, from: Double = -.infinity, to: Double = .infinity,
                                node: String? = nil, site: String? = nil, addresses: Bool = true,
                                _ body: (_ scanIndex: Int, _ row: SightingsRecord) throws -> Void) rethrows {
        for (index, stored) in scans.enumerated() {
            let scan = stored.record
            let correction = scan.rssiCorrection ?? currentCorrection
            let start = milliseconds(scan.start), end = milliseconds(scan.end)
            if scan.sightings.isEmpty {
                guard scan.start >= from, scan.start < to else { continue }
                try body(index, SightingsRecord(time: start, rpi: nil, aem: nil, rssi: nil, scanStart: start, scanEnd: end,
                                                rssiCorrection: correction, node: node, site: site))
                continue
            }
            for s in scan.sightings {
                guard s.time >= from, s.time < to else { continue }
                try body(index, SightingsRecord(time: milliseconds(s.time), rpi: s.rpi, aem: s.aem, rssi: Int(s.rssi),
                                                scanStart: start, scanEnd: end, rssiCorrection: correction,
                                                node: node, site: site, address: addresses ? s.address?.description : nil))
            }
        }
    }

    static func milliseconds(_ t: Double) -> Double { (t * 1000).rounded() / 1000 }
}
