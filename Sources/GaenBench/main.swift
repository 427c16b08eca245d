// GaenBench: benchmarks that print figures (they are not tests).
// usage: GaenBench <benchmark> [options]; each benchmark's file documents its options.
import Foundation

let benchmarks: [String: ([String]) throws -> Void] = [
    "ingest": IngestBench.run,
    "ingest-h4": IngestH4Bench.run,
    "match": MatchBench.run,
    "match-files": MatchFilesBench.run,
    "schedule-idle": ScheduleIdleBench.run,
    "keyfile": KeyFileBench.run,
    "keyfile-read": KeyFileBench.readPhase,
    "simulate": SimulateBench.run,
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let bench = benchmarks[name] else {
    print("usage: GaenBench <\(benchmarks.keys.sorted().joined(separator: "|"))> [options]")
    exit(arguments.isEmpty ? 0 : 2)
}
do {
    try bench(Array(arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("GaenBench \(name): \(error)\n".utf8))
    exit(1)
}
