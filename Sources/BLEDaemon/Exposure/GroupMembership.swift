#if canImport(Glibc)
import Glibc
#endif

/// Whether a uid's user is in a group (its primary group or a supplementary one), from the
/// system's user and group databases, asked at each call: membership changes without a restart.
enum GroupMembership {
    static func contains(uid: UInt32, group: String) -> Bool {
        guard let gid = groupID(group), let (name, primary) = user(uid) else { return false }
        if primary == gid { return true }
        var count: Int32 = 64
        while count <= 65_536 {
            var groups = [gid_t](repeating: 0, count: Int(count))
            var n = count
            if getgrouplist(name, primary, &groups, &n) >= 0 { return groups.prefix(Int(n)).contains(gid) }
            count = max(n, count * 2)
        }
        return false
    }

    private static func groupID(_ name: String) -> gid_t? {
        var entry = group(), result: UnsafeMutablePointer<group>? = nil
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    private static func user(_ uid: UInt32) -> (String, gid_t)? {
        var entry = passwd(), result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return (String(cString: name), entry.pw_gid)
    }
}
