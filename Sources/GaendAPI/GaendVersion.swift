/// gaend's version: `gaend --version`, `gaenctl --version`, the `Version` property and the
/// Debian package's version (scripts/build-deb.sh reads it from this line).
public enum GaendVersion {
    public static let string = "0.1.0"
}
