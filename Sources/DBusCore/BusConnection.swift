import CDBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A private connection to a message bus.
///
/// Threading model: after `connect` returns, one dedicated thread (the loop thread) owns the
/// libdbus connection and is the only thread that calls libdbus on it. It runs a poll(2) loop
/// over libdbus's watches, libdbus's timeouts, the deadlines of our pending calls, and an
/// eventfd that other threads use to wake it. Every public method posts a job to the loop and
/// gets its result back through a continuation, so callers on any thread or task are safe.
/// Incoming messages are converted to Sendable `BusMessage` values on the loop thread (with
/// `DBusLimits`); method calls go to the handler set by `setMethodCallHandler`, which must
/// return quickly (the service hands them to Swift concurrency), signals to the observers.
public final class BusConnection: @unchecked Sendable {
    /// The connection's unique name on the bus (":1.42").
    public let uniqueName: String
    public let bus: BusAddress
    public let limits: DBusLimits
    /// Whether the transport can pass Unix file descriptors (`h` values).
    public let canPassUnixFDs: Bool
    private let loop: BusLoop

    private init(uniqueName: String, bus: BusAddress, limits: DBusLimits, canPassUnixFDs: Bool, loop: BusLoop) {
        self.uniqueName = uniqueName
        self.bus = bus
        self.limits = limits
        self.canPassUnixFDs = canPassUnixFDs
        self.loop = loop
    }

    /// Connects and registers with the bus (blocks for the Hello round trip), then starts the
    /// loop thread.
    public static func connect(_ bus: BusAddress, limits: DBusLimits = .default) throws(DBusBindingError) -> BusConnection {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        defer { dbus_error_free(&err) }
        func failure() -> DBusBindingError {
            let name = err.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let message = err.message.map { String(cString: $0) } ?? "unknown error"
            return .connectFailed(bus: bus.description, name: name, message: message)
        }
        let raw: OpaquePointer
        switch bus {
        case .system, .session:
            guard let c = dbus_bus_get_private(bus == .system ? DBUS_BUS_SYSTEM : DBUS_BUS_SESSION, &err) else {
                throw failure()
            }
            raw = c
        case .address(let address):
            guard let c = dbus_connection_open_private(address, &err) else { throw failure() }
            guard dbus_bus_register(c, &err) != 0 else {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                throw failure()
            }
            raw = c
        }
        // A daemon must not exit because its bus went away; it reports it instead.
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let unique = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        let fds = dbus_connection_can_send_type(raw, Int32(UInt8(ascii: "h"))) != 0
        let loop = try BusLoop(raw: raw, limits: limits)
        loop.start()
        return BusConnection(uniqueName: unique, bus: bus, limits: limits, canPassUnixFDs: fds, loop: loop)
    }

    deinit { loop.stop() }

    /// Closes the connection (queued messages are flushed first). Pending calls fail.
    public func close() { loop.stop() }

    /// The kernel's id of this connection's loop thread, or nil once the loop has finished: lets
    /// a check read that one thread's wake-ups in /proc when others share its name.
    package func loopThreadID() async -> Int32? {
        await withCheckedContinuation { cont in
            loop.perform { running in cont.resume(returning: running == nil ? nil : Self.currentThreadID()) }
        }
    }

    /// The calling thread's kernel id, from /proc/thread-self ("PID/task/TID"): glibc's gettid()
    /// is not in Swift's Glibc module.
    private static func currentThreadID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let link = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return link.split(separator: "/").last.flatMap { Int32($0) }
    }

    /// Whether the connection is still open.
    public var isOpen: Bool { loop.isRunning }

    /// Sends a message without waiting for a reply; returns its serial.
    @discardableResult
    public func send(_ message: BusMessage) async throws -> UInt32 {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<UInt32, Error>) in
            loop.perform { loop in
                guard let loop else { return cont.resume(throwing: DBusBindingError.closed) }
                cont.resume(with: Result { try loop.send(message) })
            }
        }
    }

    /// Calls a method and waits for the reply. An error reply throws `DBusNamedError`; no reply
    /// within `timeout` throws `DBusNamedError.noReply`; cancelling the task throws
    /// `CancellationError` at once (a late reply is then dropped).
    public func call(_ message: BusMessage, timeout: Duration = .seconds(25)) async throws -> BusMessage {
        var message = message
        message.kind = .methodCall
        message.noReplyExpected = false
        let m = message
        let state = CallState()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (cont: CheckedContinuation<BusMessage, Error>) in
                loop.perform { loop in
                    guard let loop else { return cont.resume(throwing: DBusBindingError.closed) }
                    loop.startCall(m, timeout: timeout, state: state, continuation: cont)
                }
            }
        } onCancel: { [loop] in
            state.cancel()
            loop.perform { $0?.cancelCall(state) }
        }
    }

    /// Sets the receiver of incoming method calls. It runs on the loop thread and must not
    /// block. Without a handler, libdbus answers calls with UnknownMethod.
    public func setMethodCallHandler(_ handler: (@Sendable (BusMessage) -> Void)?) {
        loop.perform { $0?.methodHandler = handler }
    }

    /// Adds an observer of incoming signals (run on the loop thread; must not block). It gets
    /// nil once when the connection closes. Signals arrive only if a match rule selects them
    /// (see `addMatch`) or they are addressed to this connection.
    public func addSignalObserver(_ observer: @escaping @Sendable (BusMessage?) -> Void) -> Int {
        let id = loop.nextObserverID()
        loop.perform { loop in
            guard let loop else { return observer(nil) }
            loop.signalObservers[id] = observer
        }
        return id
    }

    public func removeSignalObserver(_ id: Int) {
        loop.perform { $0?.signalObservers[id] = nil }
    }

    // MARK: Calls to the bus itself

    private static func busCall(_ member: String, _ body: [DBusValue]) -> BusMessage {
        .methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: member, body: body)
    }

    /// Requests a well-known name, without queueing: throws `nameTaken` if another connection
    /// owns it and `nameNotPermitted` if the bus policy forbids it.
    public func requestName(_ name: String) async throws {
        guard !name.utf8.contains(0), dbus_validate_bus_name(name, nil) != 0, !name.hasPrefix(":") else {
            throw DBusBindingError.invalidName(kind: "well-known bus name", value: name)
        }
        let reply: BusMessage
        do {
            // DBUS_NAME_FLAG_DO_NOT_QUEUE = 4 (D-Bus specification, RequestName).
            reply = try await call(Self.busCall("RequestName", [.string(name), .uint32(4)]))
        } catch let e as DBusNamedError where e.name == "org.freedesktop.DBus.Error.AccessDenied" {
            throw DBusBindingError.nameNotPermitted(name: name, reason: e.message)
        }
        guard case .uint32(let code)? = reply.body.first else {
            throw DBusBindingError.signatureMismatch(expected: "u", actual: reply.signature)
        }
        switch code {
        case 1, 4: return  // primary owner, already owner
        case 3: throw DBusBindingError.nameTaken(name)
        default: throw DBusBindingError.nameRequestFailed(name: name, reply: code)
        }
    }

    /// The Unix uid of the process behind a bus name (for authorization of callers).
    public func unixUser(of busName: String) async throws -> UInt32 {
        let reply = try await call(Self.busCall("GetConnectionUnixUser", [.string(busName)]))
        guard case .uint32(let uid)? = reply.body.first else {
            throw DBusBindingError.signatureMismatch(expected: "u", actual: reply.signature)
        }
        return uid
    }

    /// The unique name (":1.42") that owns the well-known `name` now (GetNameOwner).
    public func nameOwner(of name: String) async throws -> String {
        let reply = try await call(Self.busCall("GetNameOwner", [.string(name)]))
        guard case .string(let owner)? = reply.body.first else {
            throw DBusBindingError.signatureMismatch(expected: "s", actual: reply.signature)
        }
        return owner
    }

    /// Asks the bus to route signals matching `rule` to this connection.
    public func addMatch(_ rule: String) async throws {
        _ = try await call(Self.busCall("AddMatch", [.string(rule)]))
    }

    public func removeMatch(_ rule: String) async throws {
        _ = try await call(Self.busCall("RemoveMatch", [.string(rule)]))
    }
}

/// One call's cancellation flag (set from any thread) and serial (loop thread only).
final class CallState: @unchecked Sendable {
    private let cancelled = Mutex(false)
    var serial: UInt32?

    func cancel() { cancelled.withLock { $0 = true } }

    var isCancelled: Bool { cancelled.withLock { $0 } }
}

/// The loop thread and the state it alone touches. See `BusConnection` for the model.
final class BusLoop: @unchecked Sendable {
    typealias Job = @Sendable (BusLoop?) -> Void

    private struct PendingCall {
        let continuation: CheckedContinuation<BusMessage, Error>
        let state: CallState
        let deadline: ContinuousClock.Instant
        let timeout: Duration
        let member: String
    }

    // Shared between threads.
    private struct Shared {
        var jobs: [Job] = []
        var stopRequested = false
        var finished = false
        var observerCounter = 0
    }
    private let shared = Mutex(Shared())
    // A pipe wakes the loop: the loop polls `wakeRead`, other threads write to `wakeWrite`.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    // Loop thread only.
    private let raw: OpaquePointer
    let limits: DBusLimits
    private var watches: [OpaquePointer] = []
    private var timeoutDeadlines: [OpaquePointer: ContinuousClock.Instant] = [:]
    private var pending: [UInt32: PendingCall] = [:]
    private var disconnected = false
    var methodHandler: (@Sendable (BusMessage) -> Void)?
    var signalObservers: [Int: @Sendable (BusMessage?) -> Void] = [:]

    init(raw: OpaquePointer, limits: DBusLimits) throws(DBusBindingError) {
        self.raw = raw
        self.limits = limits
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw .outOfMemory
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    var isRunning: Bool { shared.withLock { !$0.finished && !$0.stopRequested } }

    func nextObserverID() -> Int {
        shared.withLock {
            $0.observerCounter += 1
            return $0.observerCounter
        }
    }

    func start() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(
            raw,
            { w, data in
                let loop = Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue()
                loop.watches.append(w!)
                return 1
            },
            { w, data in
                let loop = Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue()
                loop.watches.removeAll { $0 == w }
            },
            nil,  // toggles are read from dbus_watch_get_enabled on every iteration
            me, nil)
        dbus_connection_set_timeout_functions(
            raw,
            { t, data in
                Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue().armTimeout(t!)
                return 1
            },
            { t, data in
                Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue().timeoutDeadlines[t!] = nil
            },
            { t, data in
                Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue().armTimeout(t!)
            },
            me, nil)
        dbus_connection_add_filter(
            raw,
            { _, message, data in
                let loop = Unmanaged<BusLoop>.fromOpaque(data!).takeUnretainedValue()
                return loop.filter(message!) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            },
            me, nil)
        NamedThread.start("gaend.dbus") { [self] in run() }
    }

    /// Runs `job` on the loop thread, or at once with nil once the loop has finished.
    func perform(_ job: @escaping Job) {
        let queued = shared.withLock { s -> Bool in
            guard !s.finished else { return false }
            s.jobs.append(job)
            return true
        }
        if queued { wake() } else { job(nil) }
    }

    func stop() {
        let done = shared.withLock { s -> Bool in
            s.stopRequested = true
            return s.finished
        }
        if !done { wake() }
    }

    private func wake() {
        // A full pipe already means "wake up"; EAGAIN is fine.
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    // MARK: Loop thread

    private func armTimeout(_ t: OpaquePointer) {
        if dbus_timeout_get_enabled(t) != 0 {
            timeoutDeadlines[t] = .now + .milliseconds(Int(dbus_timeout_get_interval(t)))
        } else {
            timeoutDeadlines[t] = nil
        }
    }

    private func run() {
        while true {
            runJobs()
            while dbus_connection_get_dispatch_status(raw) == DBUS_DISPATCH_DATA_REMAINS {
                dbus_connection_dispatch(raw)
            }
            let stop = shared.withLock { $0.stopRequested }
            if stop || disconnected || dbus_connection_get_is_connected(raw) == 0 { break }
            pollOnce()
        }
        shutdown()
    }

    private func runJobs() {
        let batch = shared.withLock { s -> [Job] in
            defer { s.jobs.removeAll() }
            return s.jobs
        }
        for job in batch { job(self) }
    }

    private func pollOnce() {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var polled: [OpaquePointer] = []
        for w in watches where dbus_watch_get_enabled(w) != 0 {
            let flags = dbus_watch_get_flags(w)  // DBUS_WATCH_READABLE = 1, DBUS_WATCH_WRITABLE = 2
            var events: Int16 = 0
            if flags & 1 != 0 { events |= Int16(POLLIN) }
            if flags & 2 != 0 { events |= Int16(POLLOUT) }
            fds.append(pollfd(fd: dbus_watch_get_unix_fd(w), events: events, revents: 0))
            polled.append(w)
        }
        let now = ContinuousClock.now
        var next: ContinuousClock.Instant? = nil
        for d in timeoutDeadlines.values { next = min(next ?? d, d) }
        for p in pending.values { next = min(next ?? p.deadline, p.deadline) }
        var timeoutMs: Int32 = -1
        if let next {
            let ms = max(0, (next - now) / .milliseconds(1))
            timeoutMs = Int32(min(ms.rounded(.up), 60_000))
        }
        let n = poll(&fds, nfds_t(fds.count), timeoutMs)
        if n > 0 {
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &drain, drain.count) > 0 {}
            }
            for (i, w) in polled.enumerated() {
                let re = fds[i + 1].revents
                guard re != 0, watches.contains(w) else { continue }
                var flags: UInt32 = 0
                if re & Int16(POLLIN) != 0 { flags |= 1 }
                if re & Int16(POLLOUT) != 0 { flags |= 2 }
                if re & Int16(POLLERR) != 0 { flags |= 4 }  // DBUS_WATCH_ERROR
                if re & Int16(POLLHUP) != 0 { flags |= 8 }  // DBUS_WATCH_HANGUP
                dbus_watch_handle(w, flags)
            }
        }
        let after = ContinuousClock.now
        for (t, deadline) in timeoutDeadlines where deadline <= after {
            // libdbus timeouts repeat until removed or disabled.
            timeoutDeadlines[t] = after + .milliseconds(Int(dbus_timeout_get_interval(t)))
            dbus_timeout_handle(t)
        }
        for (serial, p) in pending where p.deadline <= after {
            pending[serial] = nil
            p.continuation.resume(throwing: DBusNamedError.noReply(
                "no reply to \(p.member) within \(p.timeout)"))
        }
    }

    private func shutdown() {
        if dbus_connection_get_is_connected(raw) != 0 {
            dbus_connection_flush(raw)
        }
        dbus_connection_close(raw)
        for p in pending.values {
            p.continuation.resume(throwing: DBusNamedError.disconnected("the D-Bus connection was closed"))
        }
        pending.removeAll()
        for o in signalObservers.values { o(nil) }
        signalObservers.removeAll()
        methodHandler = nil
        let late = shared.withLock { s -> [Job] in
            s.finished = true
            defer { s.jobs.removeAll() }
            return s.jobs
        }
        for job in late { job(nil) }
        dbus_connection_unref(raw)
        close(wakeRead)
        close(wakeWrite)
    }

    private static func countFDs(_ v: DBusValue) -> Int {
        switch v {
        case .unixFD: 1
        case .array(_, let items): items.reduce(0) { $0 + countFDs($1) }
        case .structure(let f): f.reduce(0) { $0 + countFDs($1) }
        case .variant(let inner): countFDs(inner)
        case .dict(_, _, let entries): entries.reduce(0) { $0 + countFDs($1.key) + countFDs($1.value) }
        default: 0
        }
    }

    func send(_ message: BusMessage) throws -> UInt32 {
        let fds = message.body.reduce(0) { $0 + Self.countFDs($1) }
        if fds > 0 {
            guard dbus_connection_can_send_type(raw, Int32(UInt8(ascii: "h"))) != 0 else {
                throw DBusBindingError.unixFDNotSupported
            }
            // Over the limit the peer (or bus) would drop the connection, not just the message.
            let max = min(limits.maxUnixFDs, dbus_connection_get_max_message_unix_fds(raw))
            guard fds <= max else {
                throw DBusBindingError.invalidValue("\(fds) file descriptors in one message, at most \(max)")
            }
        }
        let m = try message.makeRaw()
        defer { dbus_message_unref(m) }
        var serial: UInt32 = 0
        guard dbus_connection_send(raw, m, &serial) != 0 else { throw DBusBindingError.outOfMemory }
        return serial
    }

    func startCall(_ message: BusMessage, timeout: Duration, state: CallState,
                   continuation: CheckedContinuation<BusMessage, Error>) {
        // Cancelled before it was sent (the cancel job may even have run already).
        guard !state.isCancelled else { return continuation.resume(throwing: CancellationError()) }
        do {
            let serial = try send(message)
            state.serial = serial
            pending[serial] = PendingCall(
                continuation: continuation, state: state, deadline: .now + timeout, timeout: timeout,
                member: (message.interface.map { $0 + "." } ?? "") + (message.member ?? "?"))
        } catch {
            continuation.resume(throwing: error)
        }
    }

    func cancelCall(_ state: CallState) {
        guard let serial = state.serial, let p = pending[serial], p.state === state else { return }
        pending[serial] = nil
        p.continuation.resume(throwing: CancellationError())
    }

    /// Every incoming message passes here; true when we handled it.
    private func filter(_ raw: OpaquePointer) -> Bool {
        guard var m = BusMessage.headers(of: raw) else { return false }
        if m.kind == .signal, m.interface == "org.freedesktop.DBus.Local", m.member == "Disconnected" {
            disconnected = true
            return true
        }
        let body: Result<[DBusValue], DBusDecodeError>
        do {
            body = .success(try Marshal.decode(raw, limits: limits))
        } catch {
            body = .failure(error)
        }
        switch m.kind {
        case .methodReturn, .error:
            guard let p = pending.removeValue(forKey: m.replySerial) else { return true }
            switch body {
            case .success(let values):
                m.body = values
                if let e = m.namedError {
                    p.continuation.resume(throwing: e)
                } else {
                    p.continuation.resume(returning: m)
                }
            case .failure(let e):
                p.continuation.resume(throwing: e)
            }
            return true
        case .methodCall:
            guard let handler = methodHandler else { return false }
            switch body {
            case .success(let values):
                m.body = values
                handler(m)
            case .failure(let e):
                if !m.noReplyExpected {
                    _ = try? send(.error(to: m, .invalidArgs("message rejected: \(e)")))
                }
            }
            return true
        case .signal:
            guard case .success(let values) = body else { return true }
            m.body = values
            for o in signalObservers.values { o(m) }
            return true
        }
    }
}
