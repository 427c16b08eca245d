import ENProtocol
import PlatformSupport
import Synchronization

/// The bounds on ProvideDiagnosisKeys, so that no caller (nor all of them together) can make
/// the node spend more memory on key files than these figures, whatever the files say:
/// - a call's files: at most `maxCallBytes` read from the descriptors and, declared by each
///   ZIP before anything is inflated, at most `maxCallBytes` of export.bin;
/// - all calls together: `budget` (bytes read or inflated and not yet released) admits a
///   call's bytes before they are read or inflated; a call that does not fit is refused at
///   once with LimitExceeded instead of waiting;
/// - one call is parsed at a time (the others get Busy), and the framework's per-file and
///   per-day key limits and the clock checks apply to each (`KeyAcceptanceLimits`).
/// Peak memory is then about `budget` plus the stored files' parsed copies (the store's
/// key-file budget, `StoreConfiguration.keyFileBytes`).
package struct ProvideLimits: Sendable {
    /// Key files in one call: as many descriptors as a dbus-daemon passes in one message (the
    /// D-Bus binding refuses a message with more before the node sees it).
    package static let maxFiles = 16

    package var keys: KeyAcceptanceLimits
    /// Bytes one call's files may take, read and inflated each. Equal to the store's key-file
    /// budget, so that an accepted call always fits there.
    package var maxCallBytes: Int
    /// Bytes of key files in flight (read or inflated) over all calls.
    package var totalBytes: Int

    package init(keys: KeyAcceptanceLimits = .default, maxCallBytes: Int = 64 << 20, totalBytes: Int = 96 << 20) {
        self.keys = keys
        self.maxCallBytes = maxCallBytes
        self.totalBytes = totalBytes
    }

    package static let `default` = ProvideLimits()
}

/// Bytes in flight against a fixed total: claimed before they are read or inflated, released
/// when the call ends. Claims never wait: one that does not fit fails.
package final class ByteBudget: Sendable {
    package let total: Int
    private let used = Mutex(0)

    package init(total: Int) { self.total = total }

    /// Claims `bytes`; false when they do not fit now.
    package func claim(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard bytes >= 0, used + bytes <= total else { return false }
            used += bytes
            return true
        }
    }

    package func release(_ bytes: Int) { used.withLock { $0 = max(0, $0 - bytes) } }

    package var inUse: Int { used.withLock { $0 } }
}

/// One call's claims on a `ByteBudget`, released together (`release()`, or when dropped).
package final class BudgetClaim: Sendable {
    let budget: ByteBudget
    private let held = Mutex(0)

    package init(_ budget: ByteBudget) { self.budget = budget }

    /// Claims `bytes` more for this call; false when they do not fit.
    package func claim(_ bytes: Int) -> Bool {
        guard budget.claim(bytes) else { return false }
        held.withLock { $0 += bytes }
        return true
    }

    package var bytes: Int { held.withLock { $0 } }

    package func release() {
        let n = held.withLock { held in
            defer { held = 0 }
            return held
        }
        budget.release(n)
    }

    deinit { budget.release(held.withLock { $0 }) }
}
