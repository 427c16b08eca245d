import PlatformSupport
import DBusCore
import GaendAPI
import HCIHost
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import PlatformSupport
import ServiceLifecycle

/// gaend's long-running parts as services (swift-service-lifecycle): a `ServiceGroup` starts
/// them in the order of `NodeServices.all` and, on SIGTERM or SIGINT, stops them in reverse:
/// the bus first (no new calls), then transfers on callers' descriptors, matching, the radio
/// (the scan in progress recorded, advertising off) and the store last (flushed, closed).
/// docs/architecture.md draws the same picture.
package enum NodeServices {
    /// The services in start order.
    package static func all(node: GaenNode, radio: RadioService, bus: NodeBus, connection: BusConnection,
                           notifier: SystemdNotifier, logger: Logger) -> [any Service] {
        [StoreService(node: node), radio, ExposureService(exposure: node.exposure),
         ResearchService(transfers: bus.transfers),
         BusEdgeService(bus: bus, node: node, radio: radio.radio, connection: connection, notifier: notifier, logger: logger),
         WatchdogService(check: RadioPathCheck(radio: radio.radio, schedule: node.heartbeat, clock: node.clock),
                         notifier: notifier, logger: logger, counters: node.counters)]
    }
}

/// The encrypted store. Opened with the node (a wrong key stops gaend before anything runs);
/// flushed and closed last.
package struct StoreService: Service {
    let node: GaenNode
    package func run() async throws {
        try? await gracefulShutdown()
        try await node.closeStore()
    }
}

// RadioService (the controller, the radio owner and the schedule): RadioService.swift.

/// Matching of provided key files (`ExposureNotifications`): each run on the daemon's
/// blocking pool (`BlockingPool`) using every core, beside the radio's path; at shutdown the run in progress is cancelled and
/// awaited, before the store it reads and writes closes.
package struct ExposureService: Service {
    let exposure: ExposureNotifications
    package func run() async throws {
        try? await gracefulShutdown()
        await exposure.stopMatching()
    }
}

/// Research exports and key-file reads on callers' descriptors (on the transfers' own threads,
/// `CallerTransfers`, non-blocking, with a deadline): at shutdown those in flight are ended and awaited.
package struct ResearchService: Service {
    let transfers: CallerTransfers
    package func run() async throws {
        try? await gracefulShutdown()
        await transfers.cancelAllAndWait()
    }
}

/// The D-Bus edge: serves gaend's interfaces until shutdown, then stops first. It tells
/// systemd gaend is ready once the bus is served and the radio's first bring-up has ended.
package struct BusEdgeService: Service {
    /// How long calls in progress have to answer once gaend stops (the unit's TimeoutStopSec
    /// is 15 s, the services after this one need a few).
    static let replyGrace: Duration = .seconds(4)
    /// The longest readiness waits for the controller's first bring-up: far above a bring-up
    /// with every command timing out (a few times the 2 s command timeout), far below the
    /// unit's TimeoutStartSec (90 s). A controller still not answering by then is a status.
    static let bringUpWait: Duration = .seconds(30)

    let bus: NodeBus
    let node: GaenNode
    let radio: RadioOwner
    let connection: BusConnection
    let notifier: SystemdNotifier
    let logger: Logger

    package func run() async throws {
        try bus.export()
        node.setObserver(bus)
        let serving = Task { await bus.service.run() }
        // READY=1 only once the controller is held (or found missing): gaend@ is ordered
        // Before=bluetooth.service, and a bluetoothd started while gaend was still opening the
        // controller could take it first. The bus answers meanwhile (status says "missing").
        let waitEnds = ContinuousClock.now + Self.bringUpWait
        while await !radio.firstBringUpEnded, ContinuousClock.now < waitEnds, !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if await !radio.firstBringUpEnded { logger.warning("ready without the controller: its first bring-up has not ended") }
        let held = await radio.snapshot.controller == .active
        try? await notifier.ready(status: held ? "serving on D-Bus; controller held" : "serving on D-Bus; controller missing, retrying")
        try? await gracefulShutdown()
        logger.info("stopping")
        try? await notifier.stopping()
        // New calls are refused from here; the calls in progress are cancelled (reads on
        // callers' descriptors, parsing and storing of key files see it) and answer with an
        // error while the connection is still open. One that has not answered within
        // `replyGrace` loses its reply rather than the stop its TimeoutStopSec.
        bus.service.beginStopping()
        serving.cancel()
        let answered = CancelFlag()
        Task { await serving.value; answered.cancel() }
        let deadline = ContinuousClock.now + Self.replyGrace
        while !answered.isCancelled, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
        bus.service.unexport(path: GaendBus.objectPath)
        connection.close()
        await serving.value
    }
}

// WatchdogService (fed while the radio path is live): WatchdogService.swift.
