/// A path's parts as text, for the modules that take no Foundation URL (the daemon's): the one
/// place they are split.
public enum PathName {
    /// The directory part of a path ("." for a bare name, "/" for a name at the root).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of a path.
    public static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}
