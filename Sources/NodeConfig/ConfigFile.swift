import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// Reading and naming config files with POSIX calls: the config code imports no Foundation
/// (the daemon imports FoundationEssentials only, for its idle footprint, and this needs none of it).
enum ConfigFile {
    enum ReadFailure: Error, Equatable {
        /// open/read failed: the system's reason.
        case system(String)
        /// More than the limit: the file's size, or for a pipe or device the bytes read so far.
        case tooLarge(bytes: Int)
    }

    /// The file's bytes, reading no more than `limit + 1` of them whatever the file is (a
    /// regular file larger than the limit is refused by its size, unread).
    static func read(_ path: String, limit: Int) -> Result<[UInt8], ReadFailure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.system(SystemCallError.lastReason)) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) > limit {
            return .failure(.tooLarge(bytes: Int(info.st_size)))
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let n: Int
            do throws(SystemCallError) { n = try systemCall("read") { bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) } } } catch {
                return .failure(.system(error.reason))
            }
            if n == 0 { break }
            count += n
        }
        guard count <= limit else { return .failure(.tooLarge(bytes: max(count, Int(info.st_size)))) }
        bytes.removeSubrange(count...)
        return .success(bytes)
    }

    /// The file `path` names once symbolic links in its last component are followed (a
    /// relative link target is taken from the link's directory). The path itself when it is not
    /// a link or does not exist; directory components are left as written (a rename in that
    /// directory reaches the same file either way).
    static func followingLinks(_ path: String) -> String {
        var current = path
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        for _ in 0..<40 { // the kernel's own limit on links in a path
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { break }
            let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = target.hasPrefix("/") ? target : PathName.directory(of: current) + "/" + target
        }
        return current
    }

}
