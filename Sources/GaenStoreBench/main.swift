// GaenStoreBench: the benchmarks that run the encrypted store (they are not tests): ingest into
// it, the sighting path from H4 bytes to it, and the node core's idle cost with it. The others
// (matching, key files, simulation) are GaenBench's, which compiles no store and no D-Bus.
// usage: GaenStoreBench <benchmark> [options]; each benchmark's file documents its options.
import BenchSupport

runBenchmark(tool: "GaenStoreBench", [
    "ingest": IngestBench.run,
    "ingest-h4": IngestH4Bench.run,
    "schedule-idle": ScheduleIdleBench.run,
])
