import CSQLite3
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One writer connection and reader connections on a WAL database, shared between threads:
/// writes are serialised on the writer, reads run on readers in parallel with each other and
/// with the writer (WAL: a read sees the last commit before it began), so a long read (an
/// export) never holds up a write (a scan), nor a write a read.
public final class ConnectionPool: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var path: String
        /// Run on the writer when it opens (after WAL is on): PRAGMAs such as synchronous.
        public var prepareWriter: @Sendable (Connection) throws -> Void = { _ in }
        /// How long a connection waits for a lock held by another process (a backup, say).
        public var busyTimeoutMilliseconds: Int32 = 5_000
        /// Reader connections kept open between reads (more are opened while reads overlap).
        public var maximumIdleReaders = 2
        /// Frees a reader's cached pages when it goes back idle: a long-running process
        /// otherwise keeps each connection's page cache (2 MB by default) at its peak for good.
        public var releaseReaderMemory = false

        public init(path: String) { self.path = path }
    }

    public let configuration: Configuration
    private let writer: Connection
    // Connections are not Sendable, so they cannot live inside a Mutex (one taken out could
    // not be handed to the caller's thread): these two Mutexes own no value; each guards the
    // fields beside it, and the pool hands each connection to one thread at a time.
    /// Serialises every use of `writer`.
    private let writerLock = Mutex(())
    /// Guards `idleReaders` and `closed`.
    private let readersLock = Mutex(())
    private var idleReaders: [Connection] = []
    private var closed = false

    /// Opens the writer (creating nothing: the file must exist), switches the database to WAL
    /// and runs `prepareWriter`.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        writer = try Connection(path: configuration.path, options: [.readWrite])
        do {
            try writer.setBusyTimeout(milliseconds: configuration.busyTimeoutMilliseconds)
            guard try writer.fetchText("PRAGMA journal_mode = WAL") == "wal" else {
                throw SQLiteError(code: SQLITE_ERROR, message: "cannot switch \(configuration.path) to WAL mode")
            }
            try configuration.prepareWriter(writer)
        } catch {
            try? writer.close()
            throw error
        }
    }

    /// Runs `body` in an immediate write transaction on the writer (rolled back if it throws).
    public func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try onWriter { try writer.transaction(.immediate) { try body(writer) } }
    }

    /// Runs `body` on the writer outside any transaction (PRAGMAs that cannot run in one).
    public func writeWithoutTransaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try onWriter { try body(writer) }
    }

    /// Runs `work` holding `writerLock`, once the pool is known to be open. The result leaves
    /// through a local, not as `Mutex.withLock`'s `sending` result: a caller's `T` need not be
    /// Sendable, and it never leaves this thread.
    private func onWriter<T>(_ work: () throws -> T) throws -> T {
        var result: Result<T, any Error>?
        writerLock.withLock { _ in
            result = Result {
                try openCheck()
                return try work()
            }
        }
        return try result!.get()
    }

    /// Copies the WAL into the main file and truncates the log to zero bytes, without
    /// waiting: a reader in the middle of a read keeps its frames, and then the log stays
    /// until the next call. Returns whether the log is empty now (the error, a full disk say,
    /// is the caller's to log: the commits are safe in the log either way).
    @discardableResult
    public func checkpointTruncating() -> Result<Bool, SQLiteError> {
        writerLock.withLock { _ in
            do {
                try openCheck()
                return .success(try writer.checkpointTruncatingNow(restoringBusyTimeout: configuration.busyTimeoutMilliseconds))
            } catch let e as SQLiteError {
                return .failure(e)
            } catch {
                return .failure(SQLiteError(code: SQLITE_ERROR, message: "\(error)"))
            }
        }
    }

    /// Runs `body` in a read transaction on a reader: one consistent snapshot, concurrent with
    /// the writer and other reads.
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        let reader = try takeReader()
        var healthy = true
        defer { giveBack(reader, healthy: healthy) }
        do {
            return try reader.transaction(.deferred) { try body(reader) }
        } catch {
            healthy = !reader.isInTransaction
            throw error
        }
    }

    private func openCheck() throws {
        if closed { throw SQLiteError(code: SQLITE_MISUSE, message: "database \(configuration.path) is closed") }
    }

    private func takeReader() throws -> Connection {
        if let r = try readersLock.withLock({ _ throws -> Connection? in
            try openCheck()
            return idleReaders.popLast()
        }) { return r }
        let r = try Connection(path: configuration.path, options: [.readOnly])
        try r.setBusyTimeout(milliseconds: configuration.busyTimeoutMilliseconds)
        return r
    }

    private func giveBack(_ reader: Connection, healthy: Bool) {
        let keep = readersLock.withLock { _ -> Bool in
            guard healthy, !closed, idleReaders.count < configuration.maximumIdleReaders else { return false }
            idleReaders.append(reader)
            return true
        }
        if !keep { try? reader.close() } else if configuration.releaseReaderMemory { reader.releaseMemory() }
    }

    /// Frees the writer's cached pages (between writes): its next transaction reads what it
    /// needs from the file, so the cache holds no memory while idle, and a page damaged on
    /// disk is seen by the next write instead of hidden behind a cached copy.
    public func releaseWriterMemory() {
        writerLock.withLock { _ in writer.releaseMemory() }
    }

    /// Closes the readers, then the writer: the last connection checkpoints the WAL into the
    /// main file and removes it. Reads and writes after this throw SQLITE_MISUSE.
    public func close() throws {
        let readers = readersLock.withLock { _ -> [Connection] in
            closed = true
            defer { idleReaders = [] }
            return idleReaders
        }
        for r in readers { try r.close() }
        try writerLock.withLock { _ in try writer.close() }
    }
}
