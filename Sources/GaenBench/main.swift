// GaenBench: benchmarks that print figures (not tests). The first argument picks one.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "match":
    try MatchBench.run(Array(arguments.dropFirst()))
default:
    print("usage: GaenBench <benchmark> [options]\n  match   diagnosis-key matching against a busy site's sightings (see MatchBench.swift)")
}
