import ArgumentParser
import ENProtocol
import Foundation

/// Options shared by `match` and `windows`: a sightings export, key files, trust, threads.
struct SightingsAndKeysOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Sightings export (CSV or JSON lines, docs/sightings-format.md).", valueName: "FILE"))
    var sightings: String?

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Key export files (ZIP or bare export.bin); repeatable.", valueName: "FILE"))
    var keys: [String] = []

    @OptionGroup var trust: TrustOptions

    @Option(help: "Threads to match on (default: every core).")
    var workers: Int = ProcessInfo.processInfo.activeProcessorCount

    func validate() throws {
        // `windows` without --sightings and --keys asks gaend instead (WindowsCommand).
        guard sightings != nil || !keys.isEmpty else { return }
        guard sightings != nil else { throw ValidationError("give the sightings export with --sightings FILE") }
        guard !keys.isEmpty else { throw ValidationError("give at least one key file with --keys FILE...") }
        guard workers >= 1 else { throw ValidationError("--workers must be at least 1") }
    }
}

/// The matching run behind `match` and `windows`: reads the sightings, indexes them, then
/// streams each key file's keys (then its revised keys) through the matcher in batches.
enum MatchRun {
    struct Result {
        var log: SightingsLog
        var matches: [Match]
        var statistics: MatchStatistics
    }

    static func run(_ o: SightingsAndKeysOptions, requirement: SightingsFile.Requirement) throws -> Result {
        guard let sightings = o.sightings else { throw CommandFailure("give the sightings export with --sightings FILE and key files with --keys FILE...") }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: sightings)) } catch {
            throw CommandFailure("\(sightings): cannot read: \(error.localizedDescription)")
        }
        let log: SightingsLog
        do { log = try SightingsFile.parse(data, requiring: requirement) } catch { throw CommandFailure("\(sightings): \(error)") }
        let matcher = ExposureMatcher(index: SightingIndex(sightings: log.sightings, tableSeed: try SightingIndex.randomTableSeed()), workers: o.workers)
        let trust = try o.trust.trustSet()
        var matches: [Match] = []
        var stats = MatchStatistics()
        for path in o.keys {
            let file = try KeyFileLoader.load(path, trust: trust).file
            // Revised keys come after the file's keys, so their report type wins in windows.
            // 50,000 keys (~5 MB) per batch: large enough that handing parts to threads is cheap.
            for batches in [file.keyBatches(size: 50_000), file.revisedKeyBatches(size: 50_000)] {
                for batch in batches {
                    let r = try matcher.match(batch)
                    matches += r.matches
                    stats += r.statistics
                }
            }
        }
        matches.sort { ($0.sighting.time, $0.sighting.rpiLow, $0.sighting.rpiHigh) < ($1.sighting.time, $1.sighting.rpiLow, $1.sighting.rpiHigh) }
        return Result(log: log, matches: matches, statistics: stats)
    }

    /// One stderr line with the counters (stdout carries only the JSON contract).
    static func summary(_ command: String, _ r: Result) -> String {
        let s = r.statistics
        return "gaenctl \(command): \(r.log.sightings.count) sightings, \(s.keys) keys (\(s.keysSkipped) skipped: validity outside the sightings' span; "
            + "\(s.keysInvalid) invalid), \(s.keysMatched) keys matched \(s.matches) sightings (\(s.implausibleTxPower) with implausible TX power)"
    }
}
