import DBusCore
import Foundation
import Synchronization
@testable import BLEDaemon
@testable import HCIHost
import Testing

/// A stand-in for systemd-timedated: answers Properties.Get of NTPSynchronized with `synced`.
final class FakeTimedated: @unchecked Sendable {
    let connection: BusConnection
    private let state = Mutex((synced: false, silent: false))
    var synced: Bool {
        get { state.withLock { $0.synced } }
        set { state.withLock { $0.synced = newValue } }
    }
    /// Calls get no reply at all while set (a bus activation that has not finished).
    var silent: Bool {
        get { state.withLock { $0.silent } }
        set { state.withLock { $0.silent = newValue } }
    }

    init(address: String) async throws {
        connection = try BusConnection.connect(.address(address))
        connection.setMethodCallHandler { [weak self] call in
            guard let self, !self.silent else { return }
            let reply: BusMessage
            if call.interface == "org.freedesktop.DBus.Properties", call.member == "Get",
               call.body == [.string("org.freedesktop.timedate1"), .string("NTPSynchronized")] {
                reply = .methodReturn(to: call, body: [.variant(.boolean(self.synced))])
            } else {
                reply = .error(to: call, DBusNamedError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no"))
            }
            let connection = self.connection
            Task { _ = try? await connection.send(reply) }
        }
        try await connection.requestName("org.freedesktop.timedate1")
    }
}

@Suite("Clock sync inside the unit's sandbox (adjtimex refused)", .serialized)
struct ClockSyncBusTests {
    func waitFor(_ source: LinuxClockSync, _ what: (ClockSyncStatus) -> Bool) async throws -> ClockSyncStatus {
        var last = source.status()
        for _ in 0..<200 where !what(last) {
            try await Task.sleep(for: .milliseconds(50))
            last = source.status()
        }
        return last
    }

    @Test("with adjtimex refused (EPERM), systemd-timedated's NTPSynchronized decides, both ways, without waiting on the bus")
    func timedatedDecides() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeTimedated(address: bus.address)
        let timedated = TimedatedClockSync(bus: .address(bus.address), interval: .milliseconds(100))
        let sync = LinuxClockSync(kernelState: { -EPERM }, timedated: timedated, timesyncFlagPath: "/nonexistent/flag")
        var s = try await waitFor(sync) { if case .unsynchronized(let r) = $0 { r.contains("NTPSynchronized=false") } else { false } }
        #expect(!s.isUsable)
        fake.synced = true
        s = try await waitFor(sync) { $0.isUsable }
        #expect(s == .synchronized(source: "systemd-timedated (NTPSynchronized)"))
        fake.synced = false
        s = try await waitFor(sync) { !$0.isUsable }
        #expect(!s.isUsable)
        timedated.stop()
        fake.connection.close()
        bus.stop()
    }

    @Test("timedated that has not answered yet: the state is unknown (not unsynchronised) until it does, and its answer is taken within a second or two")
    func slowTimedatedIsUnknownNotUnsynchronised() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeTimedated(address: bus.address)
        fake.synced = true
        fake.silent = true
        let timedated = TimedatedClockSync(bus: .address(bus.address), interval: .seconds(10), callTimeout: .milliseconds(300))
        let sync = LinuxClockSync(kernelState: { -EPERM }, timedated: timedated, timesyncFlagPath: "/nonexistent/flag")
        await sync.prepare()
        // The first call timed out: still not known, and said so as such.
        let s = try await waitFor(sync) { if case .unknown(let r) = $0 { r.contains("NoReply") } else { false } }
        guard case .unknown(let reason) = s else { Issue.record("expected unknown, got \(s)"); return }
        #expect(!s.isUsable)
        #expect(s.description.hasPrefix("not known yet: "), "\(s)")
        #expect(reason.contains("adjtimex() failed with errno \(EPERM)"))
        // Once timedated answers, it is asked again soon (not after the 10 s interval).
        fake.silent = false
        let started = ContinuousClock.now
        let answered = try await waitFor(sync) { $0.isUsable }
        #expect(answered == .synchronized(source: "systemd-timedated (NTPSynchronized)"))
        #expect(ContinuousClock.now - started < .seconds(5))
        timedated.stop()
        fake.connection.close()
        bus.stop()
    }

    @Test("no timedated on the bus: unsynchronised with every reason named; the timesyncd flag still counts")
    func noTimedated() async throws {
        let bus = try PrivateBus()
        let timedated = TimedatedClockSync(bus: .address(bus.address), interval: .milliseconds(100))
        let flag = FileManager.default.temporaryDirectory.appendingPathComponent("gaend-sync-\(UUID().uuidString)").path
        let sync = LinuxClockSync(kernelState: { -EPERM }, timedated: timedated, timesyncFlagPath: flag)
        let s = try await waitFor(sync) { if case .unsynchronized(let r) = $0 { r.contains("systemd-timedated: ") && !r.contains("not asked yet") } else { false } }
        guard case .unsynchronized(let reason) = s else { Issue.record("expected unsynchronised, got \(s)"); return }
        #expect(reason.contains("adjtimex() failed with errno \(EPERM)"))
        #expect(reason.contains("org.freedesktop.timedate1") || reason.contains("ServiceUnknown") || reason.contains("NameHasNoOwner"))
        _ = FileManager.default.createFile(atPath: flag, contents: Data())
        #expect(sync.status() == .synchronized(source: flag))
        try? FileManager.default.removeItem(atPath: flag)
        // The kernel's own answer wins when adjtimex works: timedated is not even asked.
        let kernel = LinuxClockSync(kernelState: { 0 }, timedated: nil, timesyncFlagPath: flag)
        #expect(!kernel.status().isUsable)
        timedated.stop()
        bus.stop()
    }

    @Test("prepare() waits for timedated's first answer, so the very first check is already its answer")
    func primedBeforeTheFirstCheck() async throws {
        let bus = try PrivateBus()
        let fake = try await FakeTimedated(address: bus.address)
        fake.synced = true
        let timedated = TimedatedClockSync(bus: .address(bus.address), interval: .seconds(10))
        let sync = LinuxClockSync(kernelState: { -EPERM }, timedated: timedated, timesyncFlagPath: "/nonexistent/flag")
        await sync.prepare()
        #expect(sync.status() == .synchronized(source: "systemd-timedated (NTPSynchronized)"))
        timedated.stop()
        // Without timedated on the bus prepare() returns with its error as the answer (no 5 s wait).
        fake.connection.close()
        let absent = TimedatedClockSync(bus: .address(bus.address), interval: .seconds(10))
        let lone = LinuxClockSync(kernelState: { -EPERM }, timedated: absent, timesyncFlagPath: "/nonexistent/flag")
        let started = ContinuousClock.now
        await lone.prepare()
        #expect(ContinuousClock.now - started < .seconds(4))
        guard case .unsynchronized(let reason) = lone.status() else { Issue.record("expected unsynchronised"); return }
        #expect(!reason.contains("not asked yet"), "\(reason)")
        absent.stop()
        bus.stop()
    }
}
