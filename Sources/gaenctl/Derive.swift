import ArgumentParser
import ENProtocol
import Foundation
import TrialKit

/// `gaenctl derive`: RPIK, AEMK and the RPIs (and AEMs) of a TEK, for checking by hand.
struct Derive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Derive RPIK, AEMK and the RPIs/AEMs of a temporary exposure key.",
        discussion: """
            Prints one JSON object {"tek","rpik","aemk","intervals":[{"interval","rpi","aem"}]}. \
            One of --interval or --time is required. --time starts at the first interval of that \
            instant's UTC day (a key's rolling start), so the default --count 144 covers the day.
            """
    )

    @Option(help: "The TEK as 32 hex digits.")
    var tek: String

    @Option(help: "First ENIntervalNumber to derive.")
    var interval: UInt32?

    @Option(help: "A time, ISO 8601 (e.g. 2020-04-02T10:00:00Z) or Unix seconds; derives from its UTC day's first interval.")
    var time: String?

    @Option(help: "Number of intervals (1...144).")
    var count: Int = 144

    @Option(help: "Metadata as 8 hex digits (e.g. 40080000); adds the AEM of each interval.")
    var metadata: String?

    func validate() throws {
        guard (interval == nil) != (time == nil) else {
            throw ValidationError("give exactly one of --interval or --time")
        }
        guard (1...144).contains(count) else { throw ValidationError("--count must be 1...144, got \(count)") }
    }

    func run() throws {
        let key: TemporaryExposureKey
        do { key = try TemporaryExposureKey(hex: tek) } catch { throw ValidationError("--tek: \(error)") }
        let first: ENIntervalNumber
        if let interval {
            first = ENIntervalNumber(interval)
        } else {
            let seconds: Double
            do { seconds = try TimeInput.parse(time!) } catch { throw ValidationError("--time: \(error)") }
            first = ENIntervalNumber(unixSeconds: seconds).dayStart
        }
        var meta: BluetoothMetadata? = nil
        if let metadata {
            do { meta = try BluetoothMetadata(bytes: Data(hex: metadata, count: 4)) } catch { throw ValidationError("--metadata: \(error)") }
        }
        let schedule = try GAENKeySchedule()
        let aemk = schedule.associatedEncryptedMetadataKey(for: key)
        let rpis = try schedule.rollingProximityIdentifiers(for: key, from: first, count: count)
        var intervals: [[String: JSONValue]] = []
        for (i, rpi) in rpis.enumerated() {
            var entry: [String: JSONValue] = ["interval": .int(Int64(first.rawValue) + Int64(i)), "rpi": .string(rpi.hexString)]
            if let meta {
                entry["aem"] = .string(try GAENKeySchedule.associatedEncryptedMetadata(meta, rpi: rpi, aemk: aemk).hexString)
            }
            intervals.append(entry)
        }
        let out: JSONValue = .object([
            "tek": .string(key.hexString),
            "rpik": .string(schedule.rollingProximityIdentifierKey(for: key).hexString),
            "aemk": .string(aemk.hexString),
            "intervals": .array(intervals.map { .object($0) }),
        ])
        print(out.serialized())
    }
}
