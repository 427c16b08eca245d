import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HCIHost

/// `gaenctl radio probe --controller ADDR`: brings the controller up and prints its facts as
/// one JSON object.
struct RadioProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Print a controller's facts as JSON: HCI/LMP version, manufacturer, address, LE features, advertising TX power."
    )

    @OptionGroup var options: RadioControllerOptions

    func run() async throws {
        let connector = try options.connector()
        let facts = try await ControllerProbe.run(connector: connector, commandTimeout: options.timeout, logger: options.logger())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(facts), as: UTF8.self))
    }
}
