import ArgumentParser
import BoardCommands
import ENProtocol
import Foundation
import PlatformSupport
import MatchingRuntime

/// Options shared by `match` and `windows`: a sightings export, key files, trust, threads.
struct SightingsAndKeysOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Sightings export (CSV or JSON lines, docs/sightings-format.md).", valueName: "FILE"))
    var sightings: String?

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Key files: export ZIPs, bare export.bin files or JSON key lists (told apart by content).", valueName: "FILE"))
    var keys: [String] = []

    @OptionGroup var trust: TrustOptions

    // Optional so that the help shows one default, the one said in words (the core count
    // differs between the machine that generated the man page and the one reading it).
    @Option(help: "Threads to match on (default: every core).")
    var workers: Int?

    var threads: Int { workers ?? ProcessInfo.processInfo.activeProcessorCount }

    func validate() throws {
        // `windows` without --sightings and --keys asks gaend instead (WindowsCommand).
        guard sightings != nil || !keys.isEmpty else { return }
        guard sightings != nil else { throw ValidationError("give the sightings export with --sightings FILE") }
        guard !keys.isEmpty else { throw ValidationError("give at least one key file with --keys FILE...") }
        if let workers, workers < 1 { throw ValidationError("--workers must be at least 1, got \(workers)") }
    }
}

/// The matching run behind `match` and `windows`: reads the sightings and the key files, then
/// runs the one exposure computation (ENProtocol's ExposureComputation, which the daemon runs
/// too: same key order, dedup, sort and batching).
enum MatchRun {
    struct Result {
        var log: SightingsLog
        var computation: ExposureComputation
        var outcome: ExposureComputation.Outcome
        var matches: [Match] { outcome.matches }
        var statistics: MatchStatistics { outcome.statistics }
    }

    static func run(_ o: SightingsAndKeysOptions, requirement: SightingsFile.Requirement,
                    mapping: DiagnosisKeysDataMapping = .default) throws -> Result {
        guard let sightings = o.sightings else { throw CommandFailure("give the sightings export with --sightings FILE and key files with --keys FILE...") }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: sightings)) } catch {
            throw CommandFailure("\(sightings): cannot read: \(SystemCallError.reason(of: error))")
        }
        let log: SightingsLog
        do { log = try SightingsFile.parse(data, requiring: requirement) } catch { throw CommandFailure("\(sightings): \(error)") }
        let trust = try o.trust.trustSet()
        let files = try o.keys.map { try KeyFileLoader.load($0, trust: trust).file }
        let computation = try ExposureComputation(log: log, mapping: mapping, workers: o.threads, threads: .system)
        return Result(log: log, computation: computation, outcome: try computation.match(files))
    }

    /// One stderr line with the counters (stdout carries only the JSON contract).
    static func summary(_ command: String, _ r: Result) -> String {
        let s = r.statistics
        return "gaenctl \(command): \(r.log.sightings.count) sightings, \(s.keys) keys (\(s.keysSkipped) skipped: validity outside the sightings' span; "
            + "\(s.keysInvalid) invalid), \(s.keysMatched) keys matched \(s.matches) sightings (\(s.implausibleTxPower) with implausible TX power)"
    }
}
