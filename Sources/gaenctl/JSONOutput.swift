import ENProtocol
import Foundation

/// Writes one JSON line straight to standard output (no stdio buffering), so a consumer
/// reading a pipe sees each line at once.
func printJSONLine(_ value: JSONValue) {
    FileHandle.standardOutput.write(Data((value.serialized() + "\n").utf8))
}

/// A failure of a command (not of its arguments): printed as one line on stderr, exit 1.
struct CLIFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
