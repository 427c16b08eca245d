#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Descriptors a D-Bus caller passes (key files in, research exports out): the one place of
/// the rules that keep a slow or hostile caller from stalling the node. Every transfer runs on the transfers' own threads, `CallerTransfers` (never on the Swift
/// cooperative pool, whose few threads run the radio's path), moves bytes without blocking
/// (poll with a deadline, then a read or write that cannot wait), is bounded in size, and ends
/// with `CallerIOError.timeout` when the caller stops moving bytes. So a stalled caller costs
/// one parked thread until its deadline, never the node.

/// Why a transfer on a caller's descriptor failed.
package enum CallerIOError: Error, Equatable, CustomStringConvertible {
    /// No byte moved for `seconds` (or a key file was not read whole within them).
    case timeout(what: String, seconds: Double)
    case tooLarge(what: String, limit: Int)
    /// A descriptor that cannot carry a file (a directory, ...).
    case unsupported(what: String, reason: String)
    case failed(what: String, reason: String)
    case cancelled(what: String)
    /// The bytes would not fit in what the node admits in flight (`ByteBudget`).
    case overBudget(what: String, reason: String)

    package var description: String {
        switch self {
        case .timeout(let w, let s): return "\(w): the caller moved no data for \(Self.seconds(s)) s (timeout)"
        case .tooLarge(let w, let l): return "\(w) is larger than \(l) bytes"
        case .unsupported(let w, let r): return "\(w): \(r)"
        case .failed(let w, let r): return "\(w): \(r)"
        case .cancelled(let w): return "\(w): gaend is stopping"
        case .overBudget(let w, let r): return "\(w): \(r)"
        }
    }

    static func seconds(_ s: Double) -> String { s == s.rounded() ? String(Int(s)) : CFormat.fixed(s, decimals: 1) }
}

/// One descriptor a caller passed, owned (closed when done).
package final class CallerDescriptor: @unchecked Sendable {
    package let what: String
    private var fd: Int32
    private let isSocket: Bool
    private let isRegular: Bool
    /// A regular file's size when it was passed (a caller may still change it).
    package let regularFileSize: Int?

    /// Takes ownership of `fd`. A socket is used with MSG_DONTWAIT (its flags are shared with
    /// the caller, who may rely on them); any other non-regular file (pipe, FIFO, device) is
    /// switched to O_NONBLOCK. Regular files never wait on a caller.
    package init(taking fd: Int32, what: String) throws {
        self.fd = fd
        self.what = what
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let reason = SystemCallError.lastReason
            close(fd)
            throw CallerIOError.failed(what: what, reason: "fstat failed: \(reason)")
        }
        let type = st.st_mode & S_IFMT
        isSocket = type == S_IFSOCK
        isRegular = type == S_IFREG
        regularFileSize = isRegular ? Int(st.st_size) : nil
        if type == S_IFDIR {
            close(fd)
            throw CallerIOError.unsupported(what: what, reason: "is a directory, not a file")
        }
        if !isSocket && !isRegular {
            let flags = fcntl(fd, F_GETFL)
            if flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 {
                let reason = SystemCallError.lastReason
                close(fd)
                throw CallerIOError.failed(what: what, reason: "cannot make it non-blocking: \(reason)")
            }
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Waits until the descriptor is ready for `events` or `deadline` passes (in slices, so a
    /// stop is noticed within 200 ms).
    private func wait(_ events: Int16, deadline: ContinuousClock.Instant, timeout: Double, cancel: CancelFlag) throws {
        while true {
            if cancel.isCancelled { throw CallerIOError.cancelled(what: what) }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw CallerIOError.timeout(what: what, seconds: timeout) }
            let ms = Int32(min(200, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n: Int32
            do throws(SystemCallError) { n = try systemCall("poll") { poll(&p, 1, ms) } } catch {
                throw CallerIOError.failed(what: what, reason: "poll failed: \(error.reason)")
            }
            if n > 0 { return } // readable, writable, or an error/hang-up the next call reports
        }
    }

    /// Reads to the end of file: at most `limit` bytes, all within `timeout` seconds; with a
    /// `claim`, each chunk is claimed from its budget before it is kept.
    package func readAll(limit: Int, timeout: Double, cancel: CancelFlag, claim: BudgetClaim? = nil) throws -> Data {
        if let size = regularFileSize, size > limit { throw CallerIOError.tooLarge(what: what, limit: limit) }
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if !isRegular { try wait(Int16(POLLIN), deadline: deadline, timeout: timeout, cancel: cancel) }
            else if cancel.isCancelled { throw CallerIOError.cancelled(what: what) }
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("read") {
                    buffer.withUnsafeMutableBytes { b in
                        isSocket ? recv(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT)) : read(fd, b.baseAddress, b.count)
                    }
                }
            } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                continue // not ready yet: wait again
            } catch {
                throw CallerIOError.failed(what: what, reason: "read failed: \(error.reason)")
            }
            if n == 0 { return out }
            guard out.count + n <= limit else { throw CallerIOError.tooLarge(what: what, limit: limit) }
            if let claim, !claim.claim(n) {
                throw CallerIOError.overBudget(what: what, reason: "gaend already holds \(claim.budget.inUse >> 20) MiB of key files in flight "
                    + "(at most \(claim.budget.total >> 20) MiB for all calls together); provide again when the other calls have returned")
            }
            out.append(contentsOf: buffer[0..<n])
        }
    }

    /// Writes all of `data`; fails when the reader takes no byte for `idleTimeout` seconds.
    package func write(_ data: Data, idleTimeout: Double, cancel: CancelFlag) throws {
        try data.withUnsafeBytes { raw in
            var offset = 0
            var deadline = ContinuousClock.now + .milliseconds(Int64(idleTimeout * 1000))
            while offset < raw.count {
                if !isRegular { try wait(Int16(POLLOUT), deadline: deadline, timeout: idleTimeout, cancel: cancel) }
                else if cancel.isCancelled { throw CallerIOError.cancelled(what: what) }
                let p = raw.baseAddress! + offset, count = raw.count - offset
                let n: Int
                do throws(SystemCallError) {
                    n = try systemCall("write") { isSocket ? send(fd, p, count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) : Glibc.write(fd, p, count) }
                } catch where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                    continue // the reader has not taken the last bytes yet: wait again
                } catch {
                    let reason = error.errno == EPIPE ? "the reader closed its end" : error.reason
                    throw CallerIOError.failed(what: what, reason: "write failed: \(reason)")
                }
                offset += n
                deadline = ContinuousClock.now + .milliseconds(Int64(idleTimeout * 1000))
            }
        }
    }
}

/// Transfers on callers' descriptors in flight, on a pool of their own (long-lived threads,
/// as many as D-Bus calls gaend serves at once, so a transfer never waits for a thread while
/// stalled callers hold the others, and other blocking work never waits for a caller);
/// at shutdown the research service ends them (their flags) and waits until they have.
package final class CallerTransfers: Sendable {
    private struct InFlight {
        var flags: [UInt64: CancelFlag] = [:]
        var next: UInt64 = 0
        var stopping = false
    }
    private let state = Mutex(InFlight())
    private let threads: WorkThreads

    /// `threads`: at most as many transfers at once (gaend: its D-Bus concurrent call limit).
    package init(threads: Int = 16) { self.threads = WorkThreads(name: "gaend.transfer", threads: threads) }

    package func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable (CancelFlag) throws -> T) async throws -> T {
        try await threads.run { flag in
            let id: UInt64? = self.state.withLock { s in
                if s.stopping { return nil }
                s.next += 1
                s.flags[s.next] = flag
                return s.next
            }
            guard let id else { throw CallerIOError.cancelled(what: name) }
            defer { _ = self.state.withLock { $0.flags.removeValue(forKey: id) } }
            return try body(flag)
        }
    }

    package var inFlight: Int { state.withLock { $0.flags.count } }

    /// Ends every transfer in flight (each notices within 200 ms) and refuses new ones.
    package func cancelAllAndWait() async {
        state.withLock { s in
            s.stopping = true
            for f in s.flags.values { f.cancel() }
        }
        while inFlight > 0 { try? await Task.sleep(for: .milliseconds(20)) }
    }
}

/// Calls passing descriptors in flight, per caller uid: a caller past its limit gets
/// LimitExceeded at once instead of parking one more thread.
package final class CallerSlots: Sendable {
    private let inFlight = Mutex<[UInt32: Int]>([:])
    package let limit: Int

    package init(limit: Int) { self.limit = max(1, limit) }

    /// Claims a slot for `uid`, or returns false when it has `limit` calls in flight.
    package func claim(_ uid: UInt32) -> Bool {
        inFlight.withLock { inFlight in
            guard inFlight[uid, default: 0] < limit else { return false }
            inFlight[uid, default: 0] += 1
            return true
        }
    }

    package func release(_ uid: UInt32) {
        inFlight.withLock { inFlight in
            let n = inFlight[uid, default: 1] - 1
            inFlight[uid] = n > 0 ? n : nil
        }
    }
}
