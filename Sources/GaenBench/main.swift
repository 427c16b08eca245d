// GaenBench: benchmarks that print figures (they are not tests): matching, key files,
// simulation. It compiles no store and no D-Bus; the benchmarks that run the store (ingest,
// ingest-h4, schedule-idle) are GaenStoreBench's.
// usage: GaenBench <benchmark> [options]; each benchmark's file documents its options.
import BenchSupport

runBenchmark(tool: "GaenBench", [
    "match": MatchBench.run,
    "match-files": MatchFilesBench.run,
    "keyfile": KeyFileBench.run,
    "keyfile-read": KeyFileBench.readPhase,
    "simulate": SimulateBench.run,
])
