import ArgumentParser
import TrialKit

/// A time on the command line: Unix seconds or ISO 8601 (TimeInput), for every time option.
struct TimeArgument: ExpressibleByArgument, Sendable {
    var seconds: Double
    /// Why the argument is not a usable time (reported by `check(_:)` with the option's name).
    var problem: String?

    /// The latest time any option takes (3000-01-01T00:00:00Z): beyond it milliseconds
    /// still fit in Int64, and no recording is meant.
    static let latest: Double = 32_503_680_000

    init(seconds: Double) { self.seconds = seconds }

    init?(argument: String) {
        do { seconds = try TimeInput.parse(argument) } catch {
            seconds = 0
            problem = "'\(argument)' is not a time: give Unix seconds or ISO 8601 such as 2026-11-20T08:00:00Z (\(error))"
            return
        }
        if !seconds.isFinite || seconds < 0 || seconds > Self.latest {
            problem = "'\(argument)' is outside 1970-01-01T00:00:00Z...3000-01-01T00:00:00Z (Unix seconds 0...\(Int(Self.latest)))"
            seconds = 0
        }
    }

    static var defaultValueDescription: String { "Unix seconds or ISO 8601" }
}

/// `-o FILE --from T --to T`: the output and time range of the research exports
/// (`sightings export`, `markers export`), with the node's milliseconds for the D-Bus calls.
struct ExportRangeOptions: ParsableArguments {
    @Option(name: .short, help: ArgumentHelp("Output file (default: standard output).", valueName: "FILE"))
    var output: String?
    @Option(help: ArgumentHelp("Start of the range, Unix seconds or ISO 8601 such as 2026-11-20T08:00:00Z (default: 0).", valueName: "time"))
    var from: TimeArgument = TimeArgument(seconds: 0)
    @Option(help: ArgumentHelp("End of the range, Unix seconds or ISO 8601 (default: far future).", valueName: "time"))
    var to: TimeArgument = TimeArgument(seconds: 32_503_680_000)

    func validate() throws {
        try from.check("--from")
        try to.check("--to")
        guard from.seconds >= 0 else { throw ValidationError("--from must not be before 1970-01-01T00:00:00Z") }
        guard from.seconds <= to.seconds else { throw ValidationError("--from must not be after --to") }
    }

    var fromMs: Int64 { Int64(from.seconds * 1000) }
    var toMs: Int64 { Int64(to.seconds * 1000) }
}
