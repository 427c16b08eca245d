import ArgumentParser

/// `-o FILE --from S --to S`: the output and time range of the research exports
/// (`sightings export`, `markers export`), with the node's milliseconds for the D-Bus calls.
struct ExportRangeOptions: ParsableArguments {
    @Option(name: .short, help: ArgumentHelp("Output file (default: standard output).", valueName: "FILE"))
    var output: String?
    @Option(help: "Start of the range, Unix seconds (default: 0).")
    var from: Double = 0
    @Option(help: "End of the range, Unix seconds (default: far future).")
    var to: Double = 32_503_680_000

    func validate() throws {
        guard from.isFinite, to.isFinite, from >= 0 else { throw ValidationError("--from and --to must be Unix seconds") }
        guard from <= to else { throw ValidationError("--from must not be after --to") }
    }

    var fromMs: Int64 { Int64(from * 1000) }
    var toMs: Int64 { Int64(to * 1000) }
}
