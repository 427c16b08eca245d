import ArgumentParser
import BoardCommands
import NodeConfig
import Foundation
import GaendClient
import TrialKit
import TrialFormats

/// `gaenctl markers export`: the node's ground-truth markers (recorded with `gaenctl mark`) as
/// the markers CSV `gaenctl trial report --markers` reads, with the node and site labels.
struct MarkersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "markers",
        abstract: "Ground-truth markers recorded in gaend (research interface).",
        subcommands: [MarkersExport.self])
}

struct MarkersExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the node's markers as CSV: time,label,distance,note,node,site (docs/sightings-format.md).",
        discussion: """
            The node and site columns carry gaend's labels (its config's research.node and \
            research.site, published as Research1's Node and Site properties), the same labels \
            its sightings export carries. --node/--site, or the labels of another --config, \
            replace them.
            """)
    @OptionGroup var bus: BusOptions
    @OptionGroup var range: ExportRangeOptions
    @Option(help: ArgumentHelp("Take the node and site labels from this YAML config instead of gaend's.", valueName: "FILE"))
    var config: String?
    @Option(help: "Node label (default: gaend's research.node).")
    var node: String?
    @Option(help: "Site label (default: gaend's research.site).")
    var site: String?

    func run() async throws {
        var labels = (node: node, site: site)
        if let config {
            do {
                let research = try ConfigLoader.load(path: config).research
                labels.node = labels.node ?? research.node
                labels.site = labels.site ?? research.site
            } catch {
                printError("gaenctl markers export: \(error)")
                throw ExitCode(1)
            }
        }
        try await withDaemon("markers export", bus) { client in
            if labels.node == nil || labels.site == nil {
                let published = try await client.labels()
                labels.node = labels.node ?? published.node
                labels.site = labels.site ?? published.site
            }
            let marks = try await client.markers(from: range.fromMs, to: range.toMs).map {
                // gaend's markers: milliseconds, and a negative distance for "unknown".
                TrialFormats.Marker(time: Double($0.time) / 1000, label: $0.label, distance: $0.distance < 0 ? nil : $0.distance, note: $0.note)
            }
            let csv = MarkersFile.csv(marks, node: labels.node, site: labels.site)
            if let output = range.output {
                try AtomicOutputFile.write(Data(csv.text.utf8), to: output, mode: 0o600)
            } else {
                print(csv.text, terminator: "")
            }
            printError("gaenctl markers export: \(marks.count) markers\(range.output.map { " written to \($0)" } ?? "")")
        }
    }
}
