// GaenBench NAME [ARGS]: runs one benchmark; each lives in its own file and prints figures.
// Benchmarks are not tests: they assert nothing. Build with -c release.
import Foundation

let benchmarks: [String: ([String]) throws -> Void] = [
    "keyfile": KeyFileBench.run,
    "keyfile-read": KeyFileBench.readPhase,
]

let args = Array(CommandLine.arguments.dropFirst())
guard let name = args.first, let bench = benchmarks[name] else {
    print("usage: GaenBench <\(benchmarks.keys.sorted().joined(separator: "|"))> [args]")
    exit(2)
}
do { try bench(Array(args.dropFirst())) } catch {
    FileHandle.standardError.write(Data("GaenBench \(name): \(error)\n".utf8))
    exit(1)
}
