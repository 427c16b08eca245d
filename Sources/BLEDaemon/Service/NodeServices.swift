import DBusCore
import GaendAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

/// gaend's long-running parts as services (swift-service-lifecycle): a `ServiceGroup` starts
/// them in the order of `NodeServices.all` and, on SIGTERM or SIGINT, stops them in reverse:
/// the bus first (no new calls), then transfers on callers' descriptors, matching, the radio
/// (the scan in progress recorded, advertising off) and the store last (flushed, closed).
/// docs/architecture.md draws the same picture.
public enum NodeServices {
    /// The services in start order.
    public static func all(node: GaenNode, radio: RadioService, exposure: ExposureRuns, bus: NodeBus, connection: BusConnection,
                           notifier: SystemdNotifier, logger: Logger) -> [any Service] {
        [StoreService(node: node), radio, ExposureService(runs: exposure),
         ResearchService(transfers: bus.transfers),
         BusEdgeService(bus: bus, node: node, connection: connection, notifier: notifier, logger: logger),
         WatchdogService(check: RadioPathCheck(radio: radio.radio, schedule: node.heartbeat, clock: node.clock),
                         notifier: notifier, logger: logger)]
    }
}

/// The encrypted store. Opened with the node (a wrong key stops gaend before anything runs);
/// flushed and closed last.
public struct StoreService: Service {
    let node: GaenNode
    public func run() async throws {
        try? await gracefulShutdown()
        await node.closeStore()
    }
}

// RadioService (the controller, the radio owner and the schedule): RadioService.swift.

/// Matching of provided key files: each run on a thread of its own using every core, beside
/// the radio's path; at shutdown the run in progress is cancelled and awaited.
public struct ExposureService: Service {
    let runs: ExposureRuns
    public func run() async throws {
        try? await gracefulShutdown()
        await runs.stop()
    }
}

/// The exposure service's matching runs: one at a time (the node refuses a second call as
/// Busy while `matching`), each running `GaenNode.runMatching` (a thread of its own with every
/// core, beside the radio's path) and reporting its end; at shutdown the run in progress is
/// cancelled (it stops between batches) and awaited, before the store it reads and writes
/// closes.
public actor ExposureRuns {
    let node: GaenNode
    private var task: Task<Void, Never>?

    public init(node: GaenNode) { self.node = node }

    /// Starts matching the files the node just accepted and reports the run's end.
    public func begin(report: @escaping @Sendable (Result<(matchedKeys: Int, windows: Int), Error>) async -> Void) async {
        let node = self.node
        task = Task {
            do { await report(.success(try await node.runMatching())) } catch { await report(.failure(error)) }
            // `matching` is false again (runMatching's end): the Matching property says so.
            await node.notifyStatus()
        }
        await node.notifyStatus()
    }

    /// Cancels the run in progress and waits for its end.
    public func stop() async {
        guard let task else { return }
        task.cancel()
        await task.value
        self.task = nil
    }
}

/// Research exports and key-file reads on callers' descriptors (each on a thread of its own,
/// non-blocking, with a deadline): at shutdown those in flight are ended and awaited.
public struct ResearchService: Service {
    let transfers: CallerTransfers
    public func run() async throws {
        try? await gracefulShutdown()
        await transfers.cancelAllAndWait()
    }
}

/// The D-Bus edge: serves gaend's interfaces until shutdown, then stops first.
public struct BusEdgeService: Service {
    let bus: NodeBus
    let node: GaenNode
    let connection: BusConnection
    let notifier: SystemdNotifier
    let logger: Logger

    public func run() async throws {
        try bus.export()
        await node.setObserver(bus)
        let serving = Task { await bus.service.run() }
        try? notifier.ready(status: "serving on D-Bus")
        try? await gracefulShutdown()
        logger.info("stopping")
        try? notifier.stopping()
        bus.service.unexport(path: GaendBus.objectPath)
        connection.close()
        serving.cancel()
        await serving.value
    }
}

// WatchdogService (fed while the radio path is live): WatchdogService.swift.
