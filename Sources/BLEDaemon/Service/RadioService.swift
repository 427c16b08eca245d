#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HCIHost
import Logging
import NodeConfig
import ServiceLifecycle

/// The controller and the radio: owns the node's one LE radio owner (`RadioOwner`: controller
/// session, advertising, scanning, random address, stall detectors). At start the controller
/// session (in the background: a missing controller is a status, retried), then the node's
/// schedule when the node is enabled; at stop, in reverse: the schedule (the scan in progress
/// recorded, advertising off), the controller session, the capture file. It holds the node
/// only for that order (a service group does not wait for one service to have started before
/// it runs the next); the radio's changes reach the node through the node's own subscription.
package struct RadioService: Service {
    package let radio: RadioOwner
    let node: GaenNode
    let connector: any HCITransportConnector
    /// The HCI capture (`--capture`), shared by every reconnect.
    let capture: BTSnoopWriter?

    /// The radio owner of a node: on the node's clock, with the settings' advertising timing,
    /// stall limits and probe period.
    package static func makeRadio(settings: GaendSettings, clock: any NodeClock, logger: Logger) -> RadioOwner {
        RadioOwner(clock: clock, configuration: RadioOwner.Configuration(settings: settings), logger: logger)
    }

    /// The node's radio owner, on the node's settings. Fails (before anything runs) when the
    /// capture file cannot be opened.
    package init(node: GaenNode) throws {
        let s = node.settings
        self.radio = node.radio
        self.node = node
        do { capture = try s.capture.map { try BTSnoopWriter(settings: $0) } } catch {
            throw NodeError.invalidArgs("capture \(s.capture?.path ?? ""): \(error)")
        }
        let plain = SystemTransportConnector(address: s.controller)
        connector = capture.map { CapturingConnector(plain, writer: $0) } ?? plain
    }

    package func run() async throws {
        var configuration = HCISessionConfiguration()
        configuration.reconnectAttemptLimit = 20
        await radio.start(connector: connector, configuration: configuration)
        await node.startScheduleIfEnabled()
        try? await gracefulShutdown()
        await node.stopSchedule()
        await radio.stop()
        capture?.close()
    }
}
