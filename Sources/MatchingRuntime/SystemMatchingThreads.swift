import Dispatch
import ENProtocol
#if canImport(Glibc)
import Glibc
#endif

extension MatchingThreads {
    /// The matcher's threads on this system: the global dispatch pool (its threads are already
    /// there, so a run pays no thread start), the monotonic clock, and the kernel's per-thread
    /// accounting (/proc/thread-self/schedstat: on a core, and runnable but waiting for one,
    /// which tells a loaded machine from idle time).
    public static let system = MatchingThreads(
        spawn: { count, body in
            let group = DispatchGroup()
            for _ in 0..<max(0, count) { DispatchQueue.global().async(group: group, execute: body) }
            return { group.wait() }
        },
        now: { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
        threadTimes: { SchedStat.thisThread() })
}

enum SchedStat {
    /// This thread's time on a core and waiting for one, in seconds ((0, 0) where /proc is absent).
    static func thisThread() -> (run: Double, wait: Double) {
        let fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return (0, 0) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 96)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return (0, 0) }
        let fields = buffer[..<n].split(separator: UInt8(ascii: " ")).prefix(2).map { Double(String(decoding: $0, as: UTF8.self)) ?? 0 }
        guard fields.count == 2 else { return (0, 0) }
        return (fields[0] / 1e9, fields[1] / 1e9)
    }
}
