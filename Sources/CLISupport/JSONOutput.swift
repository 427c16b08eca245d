import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport

/// Writes one JSON line straight to standard output (no stdio buffering), so a consumer
/// reading a pipe sees each line at once.
package func printJSONLine(_ value: JSONValue) {
    StandardStream.writeOutput(value.serialized() + "\n")
}

/// A failure of a command (not of its arguments): printed as one line on stderr, exit 1.
package struct CLIFailure: Error, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
