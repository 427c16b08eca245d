// The entry point of every fuzz target in an ordinary build: it replays the files and folders
// given as arguments, so `swift build` links every target and a crash the fuzzer found is
// reproduced with `swift run TARGET CRASHFILE`. Under -DFUZZING (tools/fuzz/run.sh) the
// targets define no entry point and libFuzzer's own main() drives LLVMFuzzerTestOneInput.
import Foundation

public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

public enum FuzzEntry {
    /// One input of libFuzzer's LLVMFuzzerTestOneInput as bytes (a null pointer is the empty
    /// input), handed to the target's `fuzzOne`; libFuzzer wants 0 back.
    public static func run(_ data: UnsafePointer<UInt8>?, _ size: Int, _ fuzzOne: (Data) -> Void) -> CInt {
        fuzzOne(data.map { Data(bytes: $0, count: size) } ?? Data())
        return 0
    }

    public static func main(name: String, _ callback: FuzzCallback) -> Never {
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
    }
}
