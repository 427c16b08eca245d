import ArgumentParser
import ENProtocol
import Foundation

/// `gaenctl windows`: the ExposureWindows the framework would give an app for these sightings.
struct WindowsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "windows",
        abstract: "Compute exposure windows (Android API semantics) from exported sightings and key files.",
        discussion: """
            Prints a JSON array of windows with the Android API field names:
            [{"dateMillisSinceEpoch","reportType","infectiousness","calibrationConfidence",
            "scanInstances":[{"typicalAttenuationDb","minAttenuationDb","secondsSinceLastScan"}],
            "transmissionRiskLevel"}] (the last only when the key has one; v1-style engines use it).
            The sightings file needs the scan_start/scan_end columns and its empty-scan rows.
            --mapping is a DiagnosisKeysDataMapping JSON file; see docs/matching.md.
            """
    )

    @OptionGroup var options: SightingsAndKeysOptions

    @Option(help: ArgumentHelp("DiagnosisKeysDataMapping JSON (default: report type CONFIRMED_TEST when missing, infectiousness STANDARD).",
                               valueName: "FILE"))
    var mapping: String?

    func run() throws {
        try runReportingFailures("windows") {
            var dataMapping = DiagnosisKeysDataMapping.default
            if let mapping {
                let data: Data
                do { data = try Data(contentsOf: URL(fileURLWithPath: mapping)) } catch {
                    throw CommandFailure("\(mapping): cannot read: \(error.localizedDescription)")
                }
                do { dataMapping = try DiagnosisKeysDataMapping(json: data) } catch { throw CommandFailure("\(mapping): \(error)") }
            }
            let result = try MatchRun.run(options, requirement: .windows)
            let (windows, stats) = try ExposureWindows.compute(matches: result.matches, scans: result.log.scans, mapping: dataMapping)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            FileHandle.standardOutput.write(try encoder.encode(windows))
            FileHandle.standardOutput.write(Data("\n".utf8))
            printError(MatchRun.summary("windows", result))
            printError("gaenctl windows: \(windows.count) windows; left out: \(stats.implausibleTxPower) sightings with implausible TX power, "
                       + "\(stats.suspectedReplays) suspected replays, \(stats.revokedKeys) revoked and \(stats.recursiveKeys) recursive keys, "
                       + "\(stats.noInfectiousnessKeys) keys with infectiousness NONE")
        }
    }
}
