import ArgumentParser
import TrialKit

/// A time on the command line: Unix seconds or ISO 8601 (TimeInput), for every time option.
struct TimeArgument: ExpressibleByArgument, Sendable {
    var seconds: Double

    init(seconds: Double) { self.seconds = seconds }

    init?(argument: String) {
        guard let s = try? TimeInput.parse(argument) else { return nil }
        seconds = s
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
        guard from.seconds >= 0 else { throw ValidationError("--from must not be before 1970-01-01T00:00:00Z") }
        guard from.seconds <= to.seconds else { throw ValidationError("--from must not be after --to") }
    }

    var fromMs: Int64 { Int64(from.seconds * 1000) }
    var toMs: Int64 { Int64(to.seconds * 1000) }
}
