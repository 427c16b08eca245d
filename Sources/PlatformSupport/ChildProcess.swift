#if canImport(Glibc)
import Glibc
import HCIShim
#endif

/// A program run as a child process (what Foundation's Process did, for the modules on
/// FoundationEssentials, which has no Process): posix_spawn with its arguments and environment,
/// every descriptor but standard input, output and error closed in it, its signal mask cleared
/// and every signal at its default.
public struct ChildProcess: Sendable {
    public let pid: pid_t

    public static func spawn(_ path: String, arguments: [String], environment: [String: String]) throws(SystemCallError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        #if canImport(Glibc)
        let closed = gaend_spawn_close_from(&actions, 3)
        guard closed == 0 else { throw SystemCallError(function: "posix_spawn_file_actions_addclosefrom_np", errno: closed) }
        #endif
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) }
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer { for p in argv + envp { free(p) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv + [nil], envp + [nil])
        guard rc == 0 else { throw SystemCallError(function: "posix_spawn", errno: rc) }
        return ChildProcess(pid: pid)
    }

    /// nil while it runs; once it has ended, its exit status, or the number of the signal that
    /// ended it (as Process's terminationStatus gave).
    public func exitStatus() -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        guard rc == pid else { return nil }
        // The <sys/wait.h> macros, which Swift cannot import: a signal in the low 7 bits, else
        // the exit status above them.
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// Asks it to stop (SIGTERM).
    public func terminate() { kill(pid, SIGTERM) }
}
