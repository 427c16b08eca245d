// The entry point every fuzz target shares. Built with -DFUZZING -sanitize=fuzzer
// (tools/fuzz/run.sh) it hands control to libFuzzer; in a normal build it replays the files
// and folders given as arguments, so `swift build` links every target and a crash found by the
// fuzzer is reproduced with `swift run TARGET CRASHFILE`.
import Foundation

public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

#if FUZZING
// SwiftPM links every executable with its own entry point, so libFuzzer's main() is never
// used; our main calls libFuzzer's documented driver instead. Declared here rather than in a C
// module because it is the only symbol needed.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> CInt
#endif

public enum FuzzEntry {
    public static func main(name: String, _ callback: FuzzCallback) -> Never {
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
        #else
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            print("usage: \(name) FILE|DIR... (replays inputs; build with tools/fuzz/run.sh to fuzz)")
            exit(0)
        }
        var count = 0
        for path in paths {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
                print("\(name): no such file \(path)")
                exit(1)
            }
            let files = isDir.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                data.withUnsafeBytes { raw in
                    _ = callback(raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
                }
                count += 1
            }
        }
        print("\(name): replayed \(count) inputs without a crash")
        exit(0)
        #endif
    }
}
