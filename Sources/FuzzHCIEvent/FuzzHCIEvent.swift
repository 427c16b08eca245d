// Fuzz target for the HCI event decoder and the H4 framer.
// Built with -DFUZZING -sanitize=fuzzer (tools/fuzz/run.sh), libFuzzer calls
// LLVMFuzzerTestOneInput through FuzzSupport's driver; in a normal build it is a plain program
// that replays corpus files given as arguments, so crashes found can be reproduced.
import Foundation
import FuzzSupport
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
public func fuzzHCIEvent(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzEntry.run(data, size) { fuzzOne(Array($0)) } }

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer's own main() calls LLVMFuzzerTestOneInput and an
// entry point of ours would collide with it; only the ordinary build gets one, the corpus replayer.
#if !FUZZING
@main struct FuzzHCIEventMain { static func main() { FuzzEntry.main(name: "FuzzHCIEvent", fuzzHCIEvent) } }
#endif
