import ArgumentParser
import BoardCommands
import ENProtocol
import Foundation
import TrialKit

/// `gaenctl match`: which sightings of an export a set of diagnosis keys explains.
struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Match diagnosis keys from key files against exported sightings.",
        discussion: """
            Prints one JSON line per matched sighting, sorted by time: \
            {"time","rpi","rssi","transmitter","keyData","interval","txPower","attenuation","metadataVersion", \
            "calibrationConfidence","txPowerPlausible"}. attenuation = txPower - (rssi + \
            rssi_correction); it is null when the decrypted TX power is outside -50...+20 dB \
            (the AEM is not authenticated, so such a value is reported, flagged, not used). \
            calibrationConfidence is null for metadata v1.0. A sighting matches RPI_j of a key \
            when its interval is within 12 of j. Counters go to stderr. See docs/matching.md.
            """
    )

    @OptionGroup var options: SightingsAndKeysOptions

    // Both inputs are required here (`windows` alone may ask gaend instead): a usage error,
    // exit 64 like every other command's.
    func validate() throws {
        guard options.sightings != nil, !options.keys.isEmpty else {
            throw ValidationError("give the sightings export with --sightings FILE and key files with --keys FILE...")
        }
    }

    func run() throws {
        try runReportingFailures("match") {
            let result = try MatchRun.run(options, requirement: .matching)
            var out = ""
            // The transmitter is named after its key file (keys/phone-1.json -> phone-1), as in `trial report`.
            let names = options.keys.map(TrialInputs.stem)
            for (m, file) in zip(result.matches, result.outcome.matchFiles) {
                out += Self.json(m, transmitter: names[file]).serialized()
                out += "\n"
                if out.utf8.count > 1 << 16 { FileHandle.standardOutput.write(Data(out.utf8)); out = "" }
            }
            FileHandle.standardOutput.write(Data(out.utf8))
            printError(MatchRun.summary("match", result))
        }
    }

    static func json(_ m: Match, transmitter: String) -> JSONValue {
        let t = m.sighting.time
        return .object([
            "transmitter": .string(transmitter),
            "time": t == t.rounded() && abs(t) < 1e15 ? .int(Int64(t)) : .double(t),
            "rpi": .string(m.sighting.rpi.hexString),
            "rssi": .int(Int64(m.sighting.rssi)),
            "keyData": .string(m.key.key.hexString),
            "interval": .int(Int64(m.interval.rawValue)),
            "txPower": .int(Int64(m.txPower)),
            "attenuation": m.attenuation.map { .int(Int64($0)) } ?? .null,
            "metadataVersion": .string(m.metadataVersion),
            "calibrationConfidence": m.calibrationConfidence.map { .int(Int64($0.rawValue)) } ?? .null,
            "txPowerPlausible": .bool(m.txPowerPlausible),
        ])
    }
}
