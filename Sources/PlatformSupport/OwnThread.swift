/// Blocking work off the cooperative pool: the controller's open (HCIHost) and the node's
/// key-file reads, exports and matching (BLEDaemon) share it, so it lives below both.

/// A flag a task's cancellation sets and a transfer thread polls.
public final class CancelFlag: @unchecked Sendable {
    private let lock = Lock()
    private var set = false
    public init() {}
    public func cancel() { lock.withLock { set = true } }
    public var isCancelled: Bool { lock.withLock { set } }
}

/// Runs blocking work on a thread of its own and awaits it; the task's cancellation sets the
/// flag the work polls. Used for everything that may wait on a caller or take long (key file
/// reads, exports, matching), so that no cooperative thread ever waits.
public enum OwnThread {
    public static func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable (CancelFlag) throws -> T) async throws -> T {
        let flag = CancelFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
                NamedThread.start(name) {
                    do { c.resume(returning: try body(flag)) } catch { c.resume(throwing: error) }
                }
            }
        } onCancel: { flag.cancel() }
    }
}
