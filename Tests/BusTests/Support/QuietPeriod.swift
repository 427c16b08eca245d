/// Suites run in parallel in one process, and every connection's loop thread is named
/// "gaend.dbus". The idle-loop test counts those threads' wake-ups, so a test that keeps a bus
/// busy in-process for seconds (emitting signals in a loop) takes this lock for that time, and
/// the idle test takes it while it measures.
actor QuietPeriod {
    static let shared = QuietPeriod()
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` while no other holder runs.
    static func exclusive<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        await shared.acquire()
        do {
            let result = try await body()
            await shared.release()
            return result
        } catch {
            await shared.release()
            throw error
        }
    }

    private func acquire() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()  // ownership passes straight to the next waiter
        }
    }
}
