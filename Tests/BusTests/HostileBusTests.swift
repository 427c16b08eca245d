import BLEDaemon
import DBusCore
import GaendAPI
import Foundation
import GaendClient
import Testing

/// A caller that holds its calls open, or that forges the daemon's signals, costs only
/// itself: calls are admitted per uid and in total with property reads apart, and the client
/// takes a signal only from the daemon's unique name.
@Suite("Hostile callers on the bus")
struct HostileBusTests {
    @Test("admission: a uid's limit, the share kept for other uids, and reads apart")
    func admissionRules() {
        let a = CallAdmission(limits: DBusCallLimits(maxConcurrentCalls: 16, maxCallsPerUID: 4, reservedForOtherCallers: 4, maxConcurrentReads: 2))
        // Four uids with four calls each: the first three fill 12; the fourth gets one slot
        // (12 of 16 used, and a uid with calls may not take the last 4).
        for uid: UInt32 in 1...3 { for _ in 0..<4 { #expect(a.claimCall(uid: uid) == nil) } }
        #expect(a.claimCall(uid: 1) != nil) // its own limit
        #expect(a.claimCall(uid: 4) == nil)
        #expect(a.claimCall(uid: 4)?.contains("kept for other callers") == true)
        // A fifth uid (root, say) still gets in, and so do two more new ones.
        #expect(a.claimCall(uid: 0) == nil)
        #expect(a.claimCall(uid: 5) == nil)
        #expect(a.claimCall(uid: 6) == nil)
        #expect(a.claimCall(uid: 8)?.contains("16 calls in progress (at most 16)") == true) // full
        // Reads have their own lane.
        #expect(a.claimRead() == nil && a.claimRead() == nil && a.claimRead() != nil)
        a.releaseCall(uid: 1)
        #expect(a.claimCall(uid: 8) == nil)
        #expect(a.inProgress.calls == 16)
    }

    @Test("calls that stall fill their uid's slots only: a property read answers at once, an extra call is refused at once")
    func stalledCallsDoNotHoldReads() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let connection = try BusConnection.connect(.address(bus.address))
        defer { connection.close() }
        let service = BusService(connection: connection, callLimits: DBusCallLimits(maxConcurrentCalls: 16, maxCallsPerUID: 4))
        let decl = DBusInterfaceDecl(name: "org.gaend.Stall1", methods: [DBusMethodDecl("Stall")], properties: [DBusPropertyDecl("A", "i", .read)])
        let impl = try DBusInterfaceImplementation(decl, methods: ["Stall": { _ in
            try? await Task.sleep(for: .seconds(30)) // until cancelled
            return []
        }], getters: ["A": { .int32(1) }])
        try service.export(path: "/stall", [impl])
        let task = Task { await service.run() }
        let client = try BusClient(bus: .address(bus.address), timeout: .seconds(40))
        defer { client.close() }
        // 16 stalled calls: four run, twelve are refused at once (same uid here).
        let refused = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    let started = ContinuousClock.now
                    let e = await namedError { _ = try await client.call(connection.uniqueName, "/stall", "org.gaend.Stall1", "Stall") }
                    // A refusal comes at once; a stalled call only when the service stops.
                    return e?.name == "org.freedesktop.DBus.Error.LimitsExceeded" && started.duration(to: .now) < .seconds(5) ? e?.message : nil
                }
            }
            var out: [String] = []
            for _ in 0..<12 { if let m = await group.next() ?? nil { out.append(m) } }
            // Meanwhile, reads answer without waiting for a stalled call: those end only when the
            // service stops, so a read held behind them would not answer at all before that. The
            // bound leaves room for a loaded machine (1.6 s was seen beside a second test run).
            for _ in 0..<5 {
                let t0 = ContinuousClock.now
                let value = try? await client.getProperty(connection.uniqueName, "/stall", "org.gaend.Stall1", "A")
                #expect(value == .int32(1))
                #expect(t0.duration(to: .now) < .seconds(10))
            }
            #expect(service.admission.inProgress.calls == 4)
            // Stopping: the stalled calls are cancelled and answered, not left without a reply.
            service.beginStopping()
            task.cancel()
            for await _ in group {}
            return out
        }
        #expect(refused.count == 12)
        #expect(refused.allSatisfy { $0.contains("calls in progress (at most 4 per uid)") })
        await task.value
    }

    @Test("a signal sent straight to the client by another connection is dropped; the daemon's is taken")
    func forgedSignalsDropped() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try await CannedDaemon(address: bus.address)
        defer { daemon.close() }
        let client = GaendClient(bus: try BusClient(bus: .address(bus.address), timeout: .seconds(10)))
        defer { client.bus.close() }
        let updates = try await client.exposureStateUpdates()
        let scans = try await client.scanFinished()
        // The forger: its own connection, sending the daemon's signals to the client's unique name.
        let forger = try BusConnection.connect(.address(bus.address))
        defer { forger.close() }
        let forged = GaendExposureStateUpdate(token: "t", matchedKeys: 77, windows: 5, error: "")
        _ = try await forger.send(.signal(path: GaendBus.objectPath, interface: GaendExposureStateUpdate.interface, member: GaendExposureStateUpdate.member,
                                          body: forged.args, destination: client.bus.connection.uniqueName))
        let fake = GaendScanFinished(start: 1, end: 2, sightings: [GaendSighting(time: 1, rpi: Data(count: 16), aem: Data(count: 4), rssi: -1, address: "FA:KE:00:00:00:01")])
        _ = try await forger.send(.signal(path: GaendBus.objectPath, interface: GaendScanRecorded.interface, member: GaendScanRecorded.member,
                                          body: GaendScanRecorded(fake).args, destination: client.bus.connection.uniqueName))
        // Then the daemon's own: the first (and only) update the client yields.
        try await daemon.service.emit(path: GaendBus.objectPath, interface: GaendExposureStateUpdate.interface, signal: GaendExposureStateUpdate.member,
                                      GaendExposureStateUpdate(token: "t", matchedKeys: 1, windows: 1, error: "").args)
        var it = updates.makeAsyncIterator()
        #expect(await it.next() == GaendExposureStateUpdate(token: "t", matchedKeys: 1, windows: 1, error: ""))
        try await daemon.service.emit(path: GaendBus.objectPath, interface: GaendScanRecorded.interface, signal: GaendScanRecorded.member,
                                      GaendScanRecorded(GaendScanFinished(start: 3, end: 4, sightings: [])).args)
        var scanIt = scans.makeAsyncIterator()
        #expect(await scanIt.next()?.start == 3)
    }
}
