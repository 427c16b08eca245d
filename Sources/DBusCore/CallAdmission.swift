import Synchronization

/// How many calls `BusService` serves at once, and for whom. Calls are admitted or refused
/// when they arrive, never queued behind calls in progress: a caller whose calls wait on
/// something (a stalled descriptor) holds only its own slots, so status reads and other
/// callers are answered as fast as when the service is idle.
public struct DBusCallLimits: Sendable, Equatable {
    /// Method calls in progress, all callers together.
    public var maxConcurrentCalls: Int
    /// Method calls in progress from one Unix uid (however many connections it opens).
    public var maxCallsPerUID: Int
    /// The share of `maxConcurrentCalls` kept for a uid with no call in progress: a uid that
    /// already has one may take a further slot only while more than this many are free. So a
    /// few uids filling their own limits leave room for every other caller's first call.
    public var reservedForOtherCallers: Int
    /// Properties (Get, GetAll) and Introspect in progress: their own lane, never behind
    /// method calls. They answer from a snapshot at once, so the limit only stops a flood.
    public var maxConcurrentReads: Int

    public init(maxConcurrentCalls: Int = 16, maxCallsPerUID: Int = 6, reservedForOtherCallers: Int = 4, maxConcurrentReads: Int = 32) {
        self.maxConcurrentCalls = max(1, maxConcurrentCalls)
        self.maxCallsPerUID = max(1, maxCallsPerUID)
        self.reservedForOtherCallers = min(max(0, reservedForOtherCallers), self.maxConcurrentCalls - 1)
        self.maxConcurrentReads = max(1, maxConcurrentReads)
    }

    public static let `default` = DBusCallLimits()
}

/// The bookkeeping behind `DBusCallLimits` (thread-safe; the service's loop claims, each
/// call's task releases).
public final class CallAdmission: Sendable {
    public let limits: DBusCallLimits
    private struct Counts {
        var calls = 0
        var reads = 0
        var perUID: [UInt32: Int] = [:]
    }
    private let counts = Mutex(Counts())

    public init(limits: DBusCallLimits) { self.limits = limits }

    /// Claims a read slot; nil when granted, else why not.
    public func claimRead() -> String? {
        counts.withLock { c in
            guard c.reads < limits.maxConcurrentReads else { return "\(c.reads) property reads in progress (at most \(limits.maxConcurrentReads))" }
            c.reads += 1
            return nil
        }
    }

    public func releaseRead() { counts.withLock { $0.reads = max(0, $0.reads - 1) } }

    /// Claims a method-call slot for `uid`; nil when granted, else why not (the refusal's message).
    public func claimCall(uid: UInt32) -> String? {
        counts.withLock { c in
            let own = c.perUID[uid, default: 0]
            guard own < limits.maxCallsPerUID else {
                return "uid \(uid) has \(own) calls in progress (at most \(limits.maxCallsPerUID) per uid); retry when one returns"
            }
            let ceiling = own == 0 ? limits.maxConcurrentCalls : limits.maxConcurrentCalls - limits.reservedForOtherCallers
            guard c.calls < ceiling else {
                return own == 0
                    ? "\(c.calls) calls in progress (at most \(limits.maxConcurrentCalls)); retry when one returns"
                    : "\(c.calls) calls in progress; the last \(limits.reservedForOtherCallers) of \(limits.maxConcurrentCalls) are kept for other callers, and uid \(uid) has \(own)"
            }
            c.calls += 1
            c.perUID[uid] = own + 1
            return nil
        }
    }

    public func releaseCall(uid: UInt32) {
        counts.withLock { c in
            c.calls = max(0, c.calls - 1)
            let n = c.perUID[uid, default: 1] - 1
            c.perUID[uid] = n > 0 ? n : nil
        }
    }

    /// Calls in progress (all uids) and reads in progress.
    public var inProgress: (calls: Int, reads: Int) { counts.withLock { ($0.calls, $0.reads) } }
}
