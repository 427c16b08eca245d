// GaenBench: benchmarks that print figures (not tests). The first argument picks one.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "simulate":
    try SimulateBench.run(Array(arguments.dropFirst()))
default:
    print("usage: GaenBench <benchmark> [options]\n  simulate   a 2-hour, 50-node simulated trial and its report (see SimulateBench.swift)")
}
