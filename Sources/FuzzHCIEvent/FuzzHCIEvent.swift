// Fuzz target for the HCI event decoder and the H4 framer.
// Built with -DFUZZING -sanitize=fuzzer (tools/fuzz/run.sh), libFuzzer calls
// LLVMFuzzerTestOneInput; in a normal build it is a plain program that replays corpus files
// given as arguments, so `swift build` still links it and crashes found can be reproduced.
import Foundation
import HCIProtocol

/// Runs one input through everything that decodes untrusted controller bytes: the event
/// decoder on the raw bytes, and the framer on the bytes as a stream, decoding every event
/// packet it yields. Decoded events must re-encode to the same bytes (a round-trip check
/// turns silent mis-parses into crashes the fuzzer reports).
func fuzzOne(_ bytes: [UInt8]) {
    if let event = try? HCIEvent(payload: bytes) {
        let again = event.packet.payload
        if again != bytes {
            fatalError("event round trip differs: in \(bytes) out \(again)")
        }
        if case let .leMeta(meta) = event {
            _ = LEAdvertisingReport.reports(in: meta)
        }
        if case let .commandComplete(cc) = event {
            _ = try? cc.status()
            let rest = cc.returnParameters.dropFirst()
            _ = try? HCIReadLocalVersionInformation.decodeReturnParameters(rest)
            _ = try? HCIReadLocalSupportedCommands.decodeReturnParameters(rest)
            _ = try? HCILEReadAdvertisingPhysicalChannelTxPower.decodeReturnParameters(rest)
            _ = try? HCIReadBDAddr.decodeReturnParameters(rest)
        }
    }
    _ = HCITrace.describe(H4Packet(type: .event, payload: bytes), outgoing: false)
    var framer = H4Framer()
    framer.append(bytes)
    while case let .packet(packet)? = try? framer.next() {
        if packet.type == .event { _ = try? HCIEvent(packet: packet) }
        if packet.type == .command { _ = try? HCICommandPacket(packet) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIEvent(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    fuzzOne(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

#if FUZZING
// SwiftPM links every executable with its own entry point (TARGET_main), so libFuzzer's
// main() is never used; instead our main hands control to libFuzzer's documented driver.
// Declared here rather than in a C module because it is the only symbol needed.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
struct FuzzHCIEventMain {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzHCIEvent(data, size) })
    }
}
#else
@main
struct FuzzHCIEventReplay {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            print("usage: FuzzHCIEvent FILE|DIR... (replays inputs; build with tools/fuzz/run.sh to fuzz)")
            return
        }
        var count = 0
        for path in paths {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
                print("FuzzHCIEvent: no such file \(path)")
                exit(1)
            }
            let files = isDir.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                fuzzOne(Array(data))
                count += 1
            }
        }
        print("FuzzHCIEvent: replayed \(count) inputs without a crash")
    }
}
#endif
