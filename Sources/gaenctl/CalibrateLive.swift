import BoardCommands
import DBusCore
import GaendAPI
import ENProtocol
import Foundation
import GaendClient
import TrialKit
import TrialFormats

/// The scans gaend reported since the live calibration subscribed, each reduced to the
/// reference's readings as it arrives.
actor CalibrationScanBuffer {
    private(set) var scans: [[CalibrationReading]] = []
    private(set) var ended = false

    func append(_ readings: [CalibrationReading]) { scans.append(readings) }
    func end() { ended = true }
    var count: Int { scans.count }
    func scans(from index: Int) -> ArraySlice<[CalibrationReading]> { scans[min(index, scans.count)...] }
}

/// Readings of the reference through the running gaend, from Research1.ScanFinished. The
/// signal carries each sighting's RSSI as the controller reported it (the node stores raw RSSI
/// and applies its rssi_correction only when computing attenuation; docs/dbus.md), so the
/// readings need no un-correcting.
///
/// An orientation lasts `secondsPerOrientation` from when it starts (after the prompt), longer
/// (up to 5 times) until it has `minimumSamples` readings. The first scan that ends after it
/// starts is not counted: it was under way while the reference may still have been moving.
struct LiveCalibrationSource: CalibrationSource {
    let buffer: CalibrationScanBuffer
    let consumer: Task<Void, Never>
    let secondsPerOrientation: Double
    let minimumSamples: Int

    /// Subscribes to the signal (before the first prompt, so no scan is missed) and keeps the
    /// reference's sightings: those whose RPI belongs to `reference`'s keys (TX power from the
    /// AEM), or every sighting without `reference`.
    static func start(client: GaendClient, reference: TransmitterKeys?, secondsPerOrientation: Double,
                      minimumSamples: Int) async throws -> LiveCalibrationSource {
        // The reference's RPIs are derived once, not for every scan.
        let matcher = try reference.map { try KeyScheduleMatcher().prepare([$0]) }
        let stream = try await client.scanFinished()
        let buffer = CalibrationScanBuffer()
        let consumer = Task {
            for await scan in stream {
                await buffer.append(readings(of: scan, reference: matcher))
            }
            await buffer.end()
        }
        return LiveCalibrationSource(buffer: buffer, consumer: consumer, secondsPerOrientation: secondsPerOrientation,
                                     minimumSamples: minimumSamples)
    }

    static func readings(of scan: GaendScanFinished, reference: KeyScheduleMatcher.Prepared?) -> [CalibrationReading] {
        // The wire decoder already checked the sizes (16-byte RPI, 4-byte AEM).
        let rows = scan.sightings.compactMap { s -> SightingRow? in
            guard let rpi = try? RollingProximityIdentifier(bytes: s.rpi), let aem = try? AssociatedEncryptedMetadata(bytes: s.aem) else { return nil }
            return SightingRow(time: Double(s.time) / 1000, rpi: rpi, aem: aem, rssi: Int(s.rssi))
        }
        guard let reference else { return rows.map { CalibrationReading(time: $0.time, rssi: $0.rssi!) } }
        guard let matched = try? reference.match(rows) else { return [] }
        return matched.matches.map { m in
            CalibrationReading(time: rows[m.sightingIndex].time, rssi: rows[m.sightingIndex].rssi!, txPower: m.txPower)
        }
    }

    func stop() { consumer.cancel() }

    mutating func measure(orientation name: String, index: Int, of count: Int) async throws -> [CalibrationReading] {
        let clock = ContinuousClock()
        let start = clock.now
        let first = await buffer.count
        let span = Duration.seconds(secondsPerOrientation), limit = span * 5
        var readings: [CalibrationReading] = []
        var seen = 0
        var waitingSaid = false
        while true {
            try await Task.sleep(for: .milliseconds(100))
            let scans = await buffer.scans(from: first)
            if scans.count != seen {
                seen = scans.count
                readings = scans.dropFirst().flatMap { $0 }
            }
            let elapsed = clock.now - start
            if elapsed >= span && readings.count >= minimumSamples { break }
            if elapsed >= limit { break }
            if await buffer.ended { throw CommandFailure("gaend's ScanFinished signals stopped (did gaend exit?)") }
            if elapsed >= span && !waitingSaid {
                waitingSaid = true
                printError("  \(name): \(readings.count) readings of the reference from \(max(0, seen - 1)) scans so far, "
                           + "waiting for \(minimumSamples) (up to \(Format.fixed(secondsPerOrientation * 5, 0)) s)"
                           + (seen < 2 ? "; few scans finish: set scanning.mode continuous in gaend's config while calibrating" : ""))
            }
        }
        printError("  \(name): \(readings.count) readings from \(max(0, seen - 1)) scans")
        return readings
    }
}
