import ENProtocol
import Synchronization
import GaenStore

/// The wall time that has held (`HeldTime`, docs/schedule.md), kept in the store as its
/// high-water mark: the schedule's readings move it, retention reads the trusted time from it,
/// and it is written back to the store at each rotation and when the schedule stops. Read and
/// written without awaiting anyone (a lock).
package final class ClockMark: Sendable {
    private let held: Mutex<HeldTime>
    let store: NodeStore
    /// How long a jump ahead must hold before retention follows it.
    let confirmationMinutes: Double

    init(store: NodeStore, stepBoundHours: Double, confirmationMinutes: Double) throws {
        self.store = store
        self.confirmationMinutes = confirmationMinutes
        do {
            held = Mutex(HeldTime(highWater: try store.highWaterMark(), stepBound: stepBoundHours * 3_600,
                                  confirmation: confirmationMinutes * 60))
        } catch { throw NodeError.storage("cannot read the store's clock mark: \(error)") }
    }

    /// Follows a synchronised reading; returns whether the mark is suspect now, and whether
    /// that changed.
    func observe(_ reading: ClockReading) -> (suspect: Bool, changed: Bool) {
        held.withLock { h in
            let was = h.suspect
            _ = h.observe(wall: reading.wall, monotonic: reading.monotonic)
            return (h.suspect, h.suspect != was)
        }
    }

    /// The clock jumped far ahead of the time that held: retention waits.
    var suspect: Bool { held.withLock { $0.suspect } }
    var highWater: Double? { held.withLock { $0.highWater } }
    /// The time retention may trust at wall time `wall`.
    func trustedNow(wall: Double) -> Double { held.withLock { $0.trustedNow(wall: wall) } }

    /// Writes the mark to the store (it only ever rises there).
    func save() async throws {
        if let mark = highWater { try await store.clockMarkStore.raise(to: mark) }
    }
}
