import ArgumentParser
import BoardCommands
import ENProtocol
import GaendClient
import Foundation
import PlatformSupport
import TrialKit
import NodeConfig
import TrialFormats

/// `gaenctl windows`: the ExposureWindows the framework would give an app for these sightings.
struct WindowsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "windows",
        abstract: "Compute exposure windows (Android API semantics) from exported sightings and key files.",
        discussion: """
            Prints a JSON array of windows with the Android API field names: \
            [{"dateMillisSinceEpoch","reportType","infectiousness","calibrationConfidence", \
            "scanInstances":[{"typicalAttenuationDb","minAttenuationDb","secondsSinceLastScan"}], \
            "transmissionRiskLevel"}] (the last only when the key has one; v1-style engines use it). \
            The sightings file needs the scan_start/scan_end columns and its empty-scan rows. \
            --mapping is a DiagnosisKeysDataMapping JSON file; see docs/matching.md. \
            Without --sightings and --keys, asks gaend (GetExposureWindows) instead: text by \
            default, the same JSON array (without transmissionRiskLevel) with --json.
            """
    )

    @OptionGroup var options: SightingsAndKeysOptions

    @Option(help: ArgumentHelp("DiagnosisKeysDataMapping JSON (default: report type CONFIRMED_TEST when missing, infectiousness STANDARD).",
                               valueName: "FILE"))
    var mapping: String?

    @OptionGroup var bus: BusOptions

    @Flag(help: "With gaend: print the JSON array instead of text.")
    var json = false

    func run() async throws {
        guard options.sightings != nil else { return try await daemonWindows() }
        try runReportingFailures("windows") {
            var dataMapping = DiagnosisKeysDataMapping.default
            if let mapping {
                let data: Data
                do { data = try Data(contentsOf: URL(fileURLWithPath: mapping)) } catch {
                    throw CommandFailure("\(mapping): cannot read: \(SystemCallError.reason(of: error))")
                }
                do { dataMapping = try DiagnosisKeysDataMapping(json: data) } catch { throw CommandFailure("\(mapping): \(error)") }
            }
            let result = try MatchRun.run(options, requirement: .windows, mapping: dataMapping)
            let (windows, stats) = try result.computation.windows(result.matches)
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

extension WindowsCommand {
    /// The windows gaend has computed from provided keys (GetExposureWindows).
    func daemonWindows() async throws {
        try await withDaemon("windows", bus) { client in
            let windows = try await client.exposureWindows()
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                FileHandle.standardOutput.write(try encoder.encode(windows))
                FileHandle.standardOutput.write(Data("\n".utf8))
                return
            }
            if windows.isEmpty { print("no exposure windows") }
            for w in windows {
                let day = Date(timeIntervalSince1970: Double(w.dateMillisSinceEpoch) / 1000).formatted(.iso8601.year().month().day())
                let seconds = w.scanInstances.reduce(0) { $0 + Int($1.secondsSinceLastScan) }
                // The framework's constant names (the JSON keeps the numbers), and the confidence
                // by the name status and the config use.
                let report = ReportType(rawValue: Int(w.reportType)).map(Self.name) ?? "\(w.reportType)"
                let infectiousness = Infectiousness(rawValue: Int(w.infectiousness)).map { "\($0)".uppercased() } ?? "\(w.infectiousness)"
                print("\(day)  report type \(report)  infectiousness \(infectiousness)  calibration confidence \(CalibrationConfidence.name(ofLevel: w.calibrationConfidence))  "
                      + "\(w.scanInstances.count) scans, \(seconds) s (\(Format.fixed(Double(seconds) / 60, 1) + " min"))")
                for s in w.scanInstances {
                    print("    typical attenuation \(s.typicalAttenuationDb) dB, minimum \(s.minAttenuationDb) dB, \(s.secondsSinceLastScan) s since last scan")
                }
            }
        }
    }
}

extension WindowsCommand {
    /// ReportType as the framework's constants are spelled (CONFIRMED_TEST, SELF_REPORT, ...).
    static func name(_ t: ReportType) -> String {
        switch t {
        case .unknown: "UNKNOWN"
        case .confirmedTest: "CONFIRMED_TEST"
        case .confirmedClinicalDiagnosis: "CONFIRMED_CLINICAL_DIAGNOSIS"
        case .selfReport: "SELF_REPORT"
        case .recursive: "RECURSIVE"
        case .revoked: "REVOKED"
        }
    }
}
