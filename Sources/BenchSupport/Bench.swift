import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A benchmark's bad option: printed as `<tool> <benchmark>: <message>`, exit 1.
package enum BenchError: Error, CustomStringConvertible {
    case usage(String)
    package var description: String {
        switch self { case .usage(let s): return s }
    }
}

/// The entry point of a benchmark executable: `<tool> <benchmark> [options]`, each benchmark's
/// file documents its options; no benchmark name prints the list (scripts/bench.sh reads it).
package func runBenchmark(tool: String, _ benchmarks: [String: ([String]) throws -> Void]) -> Never {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first, let bench = benchmarks[name] else {
        print("usage: \(tool) <\(benchmarks.keys.sorted().joined(separator: "|"))> [options]")
        exit(arguments.isEmpty ? 0 : 2)
    }
    do {
        try bench(Array(arguments.dropFirst()))
    } catch {
        FileHandle.standardError.write(Data("\(tool) \(name): \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

/// A benchmark's options, `--name value` each: every value goes to its name's setter (a value
/// that does not parse leaves the default, as the setter decides); an unknown name is refused.
package func parseBenchOptions(_ args: [String], _ setters: [String: (String) -> Void]) throws {
    var i = 0
    while i < args.count {
        guard let set = setters[args[i]] else { throw BenchError.usage("unknown option \(args[i])") }
        set(i + 1 < args.count ? args[i + 1] : "")
        i += 2
    }
}

/// This process's use of the machine, as the benchmarks report it.
package enum ProcessUsage {
    /// User and system CPU seconds so far.
    package static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(usage.ru_utime) + s(usage.ru_stime)
    }

    /// Peak resident memory (KiB on Linux).
    package static func peakKiB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss
    }
}
