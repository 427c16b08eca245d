import ENProtocol
import Foundation
import PlatformSupport
import NodeTestSupport
import StoreFixtures
import Synchronization
import Testing
@testable import BLEDaemon
@testable import GaenStore

/// A one-shot gate a blocked thread waits at (the "slow disk" of these tests): a condition
/// variable, which a `Mutex` cannot wait on.
private final class Gate: @unchecked Sendable {
    private let lock = NSCondition()
    private var open = false
    func wait() { lock.lock(); while !open { lock.wait() }; lock.unlock() }
    func release() { lock.lock(); open = true; lock.broadcast(); lock.unlock() }
    var isOpen: Bool { lock.lock(); defer { lock.unlock() }; return open }
}

private final class SetOnce: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Jobs running at once, and the most seen.
private final class Counts: Sendable {
    private let state = Mutex((running: 0, highest: 0))
    func enter() { state.withLock { $0.running += 1; $0.highest = max($0.highest, $0.running) } }
    func leave() { state.withLock { $0.running -= 1 } }
    var peak: Int { state.withLock { $0.highest } }
}

@Suite("Store executor")
struct StoreExecutorTests {
    @Test("with the store's thread stalled (a slow disk) and more store calls waiting than the pool has threads, the pool still runs other tasks and status reads answer")
    func storeCallsNeverBlockThePool() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        let disk = Gate()
        store.executor.thread.submit { disk.wait() }
        // Far more calls than the cooperative pool has threads: if a store call held its thread
        // while it waited for the disk, the pool would be exhausted and nothing else would run.
        let calls = 8 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        let writers = (1...calls).map { n in
            Task { try await store.scanStore.record(StressRecords.scan(number: n, reports: 3)) }
        }
        let readers = (1...calls).map { _ in Task { try await store.scanStore.scans(from: 0, to: .infinity).count } }
        // Releases the disk after 20 s whatever happens, so a failure ends as a failure, not a hang.
        let releasedByWatchdog = SetOnce(), probeRan = SetOnce()
        NamedThread.start("test.watchdog") {
            for _ in 0..<200 where !probeRan.isSet { usleep(100_000) }
            if !probeRan.isSet { releasedByWatchdog.set() }
            disk.release()
        }
        // Wait until every call is queued on the store's thread (none has run: the disk is stalled).
        let queuedAll = await Task.detached { () -> Bool in
            for _ in 0..<200 {
                if store.executor.thread.backlog.queued >= 2 * calls { return true }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return false
        }.value
        // What the node's status snapshot reads from the store, from a task on the pool.
        let snapshot = await Task { () -> (StoreLosses, Bool, Int64) in
            (store.losses(), store.isFull, store.fileBytes())
        }.value
        probeRan.set()
        #expect(queuedAll, "the store calls did not all reach the store's queue")
        #expect(!releasedByWatchdog.isSet, "the pool ran nothing while the store was stalled")
        #expect(!disk.isOpen || !releasedByWatchdog.isSet)
        #expect(snapshot.0.pendingScans == 0 && !snapshot.1 && snapshot.2 > 0)
        disk.release()
        var ids: [Int64] = []
        for w in writers { ids.append(try await w.value) }
        for r in readers { _ = try await r.value }
        #expect(Set(ids).count == calls)
        #expect(try await store.scanStore.counts().scans == calls)
        try await store.closing()
    }

    @Test("every statement runs on the store's own thread, whoever calls")
    func statementsRunOnTheStoreThread() async throws {
        let dir = try TempStoreDir()
        let store = try dir.open()
        #expect(!store.executor.isCurrent)
        // From a test's task (the synchronous API) and from the async one.
        #expect(try store.withWriterForTesting { _ in store.executor.isCurrent })
        #expect(try await store.perform { s in try s.withWriterForTesting { _ in s.executor.isCurrent } })
        try store.close()
    }

    @Test("the blocking pool runs at most its threads at once; the rest wait their turn and all finish")
    func blockingPoolIsBounded() async throws {
        let pool = WorkThreads(name: "test.pool", threads: 3)
        let gate = Gate()
        let counts = Counts()
        let jobs = (0..<12).map { n in
            Task {
                try await pool.run { _ -> Int in
                    counts.enter()
                    gate.wait()
                    counts.leave()
                    return n
                }
            }
        }
        for _ in 0..<100 where pool.backlog.running < 3 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(pool.backlog.running == 3)
        #expect(pool.backlog.queued == 9)
        gate.release()
        var done: [Int] = []
        for j in jobs { done.append(try await j.value) }
        #expect(done.sorted() == Array(0..<12))
        #expect(counts.peak == 3)
        pool.stop()
    }
}
