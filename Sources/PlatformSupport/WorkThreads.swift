#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Long-lived threads taking blocks from one FIFO queue: the only way the daemon runs blocking
/// work (a store statement with its fsync, a key file parse, matching, a transfer on a
/// caller's descriptor), so that no thread of Swift's cooperative pool ever waits on a disk or a
/// caller and no thread is created per call. One thread makes a serial executor
/// (`SerialThreadExecutor`); several make a bounded pool (`BlockingPool`).
public final class WorkThreads: @unchecked Sendable {
    /// The queue and the threads' state; the threads hold it, not the `WorkThreads`, so the
    /// owner's deinit can stop them. A pthread mutex with a condition variable, not a `Mutex`:
    /// idle threads wait on the condition for work, which `Mutex` cannot do.
    private final class State: @unchecked Sendable {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        var queue: [() -> Void] = []
        var head = 0
        var stopping = false
        var threads: [pthread_t] = []
        var started = 0
        var idle = 0
        var running = 0

        init() {
            mutex.initialize(to: pthread_mutex_t())
            ready.initialize(to: pthread_cond_t())
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(ready, nil)
        }

        deinit {
            pthread_cond_destroy(ready)
            pthread_mutex_destroy(mutex)
            ready.deallocate()
            mutex.deallocate()
        }

        func withLock<R>(_ body: () throws -> R) rethrows -> R {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body()
        }

        /// The next block, or nil once stopping with the queue empty (the thread then ends).
        func next() -> (() -> Void)? {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            idle += 1
            while head == queue.count && !stopping { pthread_cond_wait(ready, mutex) }
            idle -= 1
            guard head < queue.count else { return nil }
            let work = queue[head]
            head += 1
            // Compacted now and then, so the array does not grow with every block ever run.
            if head == queue.count { queue.removeAll(keepingCapacity: queue.count <= 64); head = 0 }
            running += 1
            return work
        }

        func done() { withLock { running -= 1 } }
    }

    public let name: String
    public let threadCount: Int
    private let state = State()

    /// At most `threads` threads named `name` (the kernel shows 15 bytes of it), each started
    /// when work finds no idle one, then kept: an idle daemon holds only those it has needed.
    public init(name: String, threads: Int) {
        precondition(threads >= 1)
        self.name = name
        threadCount = threads
    }

    private static func startThread(_ name: String, _ state: State) {
        NamedThread.start(name) {
            state.withLock { state.threads.append(pthread_self()) }
            while let work = state.next() {
                work()
                state.done()
            }
        }
    }

    deinit { stop() }

    /// Lets the threads end once the queue is empty (blocks submitted later are not run).
    public func stop() {
        state.withLock { state.stopping = true }
        pthread_cond_broadcast(state.ready)
    }

    /// Queues `work`; one of the threads runs it, in submission order.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let (accepted, startOne) = state.withLock { () -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            state.queue.append(work)
            let queued = state.queue.count - state.head
            guard queued > state.idle, state.started < threadCount else { return (true, false) }
            state.started += 1
            return (true, true)
        }
        if startOne { Self.startThread(name, state) }
        if accepted { pthread_cond_signal(state.ready) } else { work() } // after stop: on the caller, never dropped
    }

    /// Whether the calling thread is one of these.
    public var isCurrent: Bool {
        let me = pthread_self()
        return state.withLock { state.threads.contains { pthread_equal($0, me) != 0 } }
    }

    /// Blocks queued and running (for tests and status).
    public var backlog: (queued: Int, running: Int) { state.withLock { (state.queue.count - state.head, state.running) } }

    /// Runs `body` on one of the threads and awaits it: the awaiting task's thread is free
    /// meanwhile. The task's cancellation sets the flag `body` may poll.
    public func run<T: Sendable>(_ body: @escaping @Sendable (CancelFlag) throws -> T) async throws -> T {
        let flag = CancelFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
                submit { c.resume(with: Result { try body(flag) }) }
            }
        } onCancel: { flag.cancel() }
    }

    /// Runs `body` on one of the threads and waits for it, blocking the caller: for callers on
    /// threads of their own (a benchmark, a test, a tool's main). On one of the threads it runs
    /// at once (a nested call).
    public func sync<T>(_ body: () throws -> T) rethrows -> T {
        if isCurrent { return try body() }
        return try withoutActuallyEscaping(body) { body in
            // The box lets go of `body` before it wakes the caller: `body` must not outlive
            // this call, and the queue may still hold the box for a moment.
            let box = SyncBox<T>(body)
            submit { box.run() }
            return try box.wait().get()
        }
    }

    /// One synchronous call's result, handed from the work thread to the waiting caller.
    private final class SyncBox<T>: @unchecked Sendable {
        private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var result: Result<T, any Error>?
        private var body: (() throws -> T)?

        init(_ body: @escaping () throws -> T) {
            self.body = body
            mutex.initialize(to: pthread_mutex_t())
            cond.initialize(to: pthread_cond_t())
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(cond, nil)
        }

        deinit {
            pthread_cond_destroy(cond)
            pthread_mutex_destroy(mutex)
            cond.deallocate()
            mutex.deallocate()
        }

        func run() {
            let r: Result<T, any Error>
            do {
                let b = body!
                body = nil
                r = Result { try b() }
            }
            finish(r)
        }

        func finish(_ r: Result<T, any Error>) {
            pthread_mutex_lock(mutex)
            result = r
            pthread_cond_signal(cond)
            pthread_mutex_unlock(mutex)
        }

        func wait() -> Result<T, any Error> {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            while result == nil { pthread_cond_wait(cond, mutex) }
            return result!
        }
    }
}

/// A serial executor on one long-lived thread of its own: every job runs there, in order. An
/// actor whose `unownedExecutor` is this one runs on that thread, never on the cooperative pool.
public final class SerialThreadExecutor: SerialExecutor, @unchecked Sendable {
    public let thread: WorkThreads

    public init(name: String) { thread = WorkThreads(name: name, threads: 1) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        thread.submit { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    public func isSameExclusiveExecutionContext(other: SerialThreadExecutor) -> Bool { other === self }

    public func checkIsolated() {
        precondition(thread.isCurrent, "not on the \(thread.name) thread")
    }

    /// See `WorkThreads.run`, `sync` and `stop`.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await thread.run { _ in try body() } }
    public func sync<T>(_ body: () throws -> T) rethrows -> T { try thread.sync(body) }
    public func stop() { thread.stop() }
    public var isCurrent: Bool { thread.isCurrent }
}

/// The daemon's pool for blocking work other than the store's and the callers' transfers
/// (key file parses, matching, opening a transport, writing the node's state): a bounded set
/// of long-lived threads, as NIOThreadPool is; work beyond them waits its turn in the queue
/// instead of getting a thread of its own. Transfers on callers' descriptors have a pool of
/// their own (`CallerTransfers`), so a stalled caller never delays this work.
public enum BlockingPool {
    /// Eight threads: more than the calls gaend lets run at once on a board's cores, few
    /// enough that a flood of calls cannot become a flood of threads.
    public static let shared = WorkThreads(name: "gaend.blocking", threads: 8)

    public static func run<T: Sendable>(_ body: @escaping @Sendable (CancelFlag) throws -> T) async throws -> T {
        try await shared.run(body)
    }
}

/// A flag a task's cancellation sets and blocking work polls.
public final class CancelFlag: Sendable {
    private let cancelled = Mutex(false)
    public init() {}
    public func cancel() { cancelled.withLock { $0 = true } }
    public var isCancelled: Bool { cancelled.withLock { $0 } }
}
